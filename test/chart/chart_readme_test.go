package chart

// The chart README's steps, run by a shell as written against the envtest API server: each way
// of installing it offers, then its Pod Security and Uninstall sections.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// shBlock returns the first ```sh block of doc after the line heading ("": the first of doc).
func shBlock(t *testing.T, doc, heading string) string {
	t.Helper()
	rest := doc
	if heading != "" {
		var ok bool
		if _, rest, ok = strings.Cut(doc, "\n"+heading+"\n"); !ok {
			t.Fatalf("no heading %q", heading)
		}
	}
	_, after, ok := strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(after, "```\n")
	if !ok || !ok2 {
		t.Fatalf("no sh block after %q", heading)
	}
	return block
}

// userDir is a directory standing in for a user's: the repository's charts/ and p4/, and files
// (path: content) in place of the user's own.
func userDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"charts", "p4"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shell runs script in dir with sh -ex, as a user would: the project's helm and kubectl first on
// PATH, KUBECONFIG the cluster's.
func (c *cluster) shell(t *testing.T, dir, script string) (string, error) {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"helm", "kubectl"} {
		if err := os.Symlink(filepath.Join(root, "bin", tool), filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "-ex", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+c.kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// junctionCRDs lists the names of the CRDs of group atsss.junction.dev the API server holds.
func (c *cluster) junctionCRDs(t *testing.T) []string {
	t.Helper()
	crds := &unstructured.UnstructuredList{}
	crds.SetAPIVersion("apiextensions.k8s.io/v1")
	crds.SetKind("CustomResourceDefinitionList")
	if err := c.k8s.List(context.Background(), crds); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, crd := range crds.Items {
		if strings.HasSuffix(crd.GetName(), ".atsss.junction.dev") {
			out = append(out, crd.GetName())
		}
	}
	return out
}

// The chart README's install block offers ways to install the release junction, each after "#
// or, instead:"; each runs as written on an API server of its own, and leaves what its comment
// and values say: the operator, and with upfNamespace the pipeline there, with the UE agent a
// privileged namespace. The OCI chart's way needs the published release (X.Y.Z), not at hand
// here: TestPackagedChartInstalls installs the package hack/release.sh pushes. Then the Pod
// Security section labels the namespace, and the Uninstall section, line by line, keeps the CRDs
// through helm uninstall and leaves no Junction CRD behind.
func TestChartReadmeSteps(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var ways []string
	for _, line := range strings.SplitAfter(shBlock(t, string(doc), ""), "\n") {
		if ways == nil || strings.HasPrefix(line, "# or, instead:") {
			ways = append(ways, "")
		}
		ways[len(ways)-1] += line
	}
	if len(ways) < 3 {
		t.Fatalf("the chart README's install block offers %d ways, want the chart's defaults, UPFs in default with UE agents, and the OCI chart:\n%s", len(ways), strings.Join(ways, ""))
	}
	podSecurity := shBlock(t, string(doc), "## Pod Security")
	uninstall := shBlock(t, string(doc), "## Uninstall")
	crdFiles, _ := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))

	dir := userDir(t, map[string]string{"build/p4/v1model/junction_upf.json": `{"stand-in": "p4c's output, not built here"}`})
	ran := 0
	for i, way := range ways {
		if strings.Contains(way, "oci://") {
			continue
		}
		ran++
		t.Run(strings.TrimPrefix(strings.SplitN(way, "\n", 2)[0], "# "), func(t *testing.T) {
			c := startCluster(t)
			if out, err := c.shell(t, dir, way); err != nil {
				t.Fatalf("way %d of the chart README: %v\n%s", i+1, err, out)
			}
			c.get(t, "apps/v1", "Deployment", "junction-system", "junction-operator")
			if got := c.junctionCRDs(t); len(got) != len(crdFiles) {
				t.Errorf("CRDs served after the install: %v, want the %d of charts/junction/crds", got, len(crdFiles))
			}
			if strings.Contains(way, "pipeline.create=true") {
				upfNs := "junction-system"
				if m := regexp.MustCompile(`upfNamespace=(\S+)`).FindStringSubmatch(way); m != nil {
					upfNs = m[1]
				}
				if cm := c.get(t, "v1", "ConfigMap", upfNs, "junction-upf-pipeline"); cm != nil {
					info, _, _ := unstructured.NestedString(cm.Object, "data", "p4info.txtpb")
					dc, _, _ := unstructured.NestedString(cm.Object, "binaryData", "device_config")
					if !strings.Contains(info, "tables") || dc == "" {
						t.Errorf("ConfigMap %s/junction-upf-pipeline: P4Info %d bytes, device config %q; want both", upfNs, len(info), dc)
					}
				}
			}
			privileged := func() bool {
				ns := c.get(t, "v1", "Namespace", "", "junction-system")
				return ns != nil && ns.GetLabels()["pod-security.kubernetes.io/enforce"] == "privileged"
			}
			if strings.Contains(way, "ueAgent.enabled=true") {
				c.get(t, "apps/v1", "DaemonSet", "junction-system", "junction-ue-agent")
				if !privileged() {
					t.Error("the UE agent's namespace junction-system is not privileged")
				}
			}
			// kubectl label refuses a label already set (without --overwrite), as a user sees.
			if !privileged() {
				if out, err := c.shell(t, dir, podSecurity); err != nil || !privileged() {
					t.Errorf("the Pod Security section: %v, privileged %v\n%s", err, privileged(), out)
				}
			}

			// Objects for the uninstall to delete (the operator is not running: no finalizers).
			if out, err := c.shell(t, dir, "kubectl apply -k "+filepath.Join(root, "config", "samples")); err != nil {
				t.Fatalf("the samples: %v\n%s", err, out)
			}
			for _, cmd := range strings.Split(strings.ReplaceAll(uninstall, "\\\n", ""), "\n") {
				if strings.TrimSpace(cmd) == "" {
					continue
				}
				if out, err := c.shell(t, dir, cmd); err != nil {
					t.Fatalf("the Uninstall section's %q: %v\n%s", cmd, err, out)
				}
				if strings.HasPrefix(cmd, "helm uninstall") {
					if got := c.junctionCRDs(t); len(got) != len(crdFiles) {
						t.Errorf("CRDs after helm uninstall: %v, want every one kept", got)
					}
				}
			}
			if got := c.junctionCRDs(t); len(got) != 0 {
				t.Errorf("CRDs left after the Uninstall section: %v", got)
			}
			if out, err := run(t, "list", "-a", "-n", "junction-system", "--kubeconfig", c.kubeconfig, "-q"); err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("releases left after the Uninstall section: %v %q", err, out)
			}
		})
	}
	if ran < 2 {
		t.Errorf("ran %d of the chart README's ways to install, want every one but the OCI chart's", ran)
	}
}
