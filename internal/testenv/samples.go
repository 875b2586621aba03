package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// Samples reads config/samples (every manifest but the kustomization: the address pool, the
// P4Runtime target, the UPF, the policies and the sessions) into objects of the scheme's types in
// namespace ns, the UPF's P4Runtime address set to upfAddr: what a user applies, pointed at the
// caller's software UPF. The cluster-scoped pool and target are named and granted after ns, the
// target to the device at upfAddr.
func Samples(s *runtime.Scheme, ns, upfAddr string) ([]client.Object, error) {
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "config", "samples", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var objs []client.Object
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(b), "\n---") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			typed, err := s.New(u.GroupVersionKind())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			o := typed.(client.Object)
			if pool, ok := o.(*junctionv1.AddressPool); ok {
				pool.Name, pool.Spec.Namespace = "samples-"+ns, ns
				objs = append(objs, o)
				continue
			}
			if target, ok := o.(*junctionv1.P4RuntimeTarget); ok {
				target.Name, target.Spec.Namespace, target.Spec.Address = "samples-"+ns, ns, junctionv1.P4RuntimeAddress(upfAddr)
				objs = append(objs, o)
				continue
			}
			o.SetNamespace(ns)
			if upf, ok := o.(*junctionv1.UserPlaneFunction); ok {
				upf.Spec.P4Runtime.Address = junctionv1.P4RuntimeAddress(upfAddr)
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}
