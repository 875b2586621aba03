package uedaemonset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var clusterScoped = map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true}

func TestEveryObjectIsAcceptedByTheAPIServer(t *testing.T) {
	objs := build(t)
	kinds := map[string]int{}
	for _, obj := range objs {
		kinds[obj.GetKind()]++
		if !clusterScoped[obj.GetKind()] && obj.GetNamespace() != namespace {
			t.Errorf("%s %s is in namespace %q, want %s", obj.GetKind(), obj.GetName(), obj.GetNamespace(), namespace)
		}
		if obj.GetName() != agentName {
			t.Errorf("%s is named %q, want %s", obj.GetKind(), obj.GetName(), agentName)
		}
		dryRunApply(t, obj, nil)
	}
	want := map[string]int{"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "DaemonSet": 1,
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("ue-daemonset builds %v, want %v (a Namespace would make `kubectl delete -k` remove the operator's)", kinds, want)
	}
	notStored(t, only(t, objs, "DaemonSet"))
	notStored(t, only(t, objs, "ServiceAccount"))
}

// daemonSet is the DaemonSet as the API server returns it from a dry-run apply (defaults set).
func daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	dryRunApply(t, only(t, build(t), "DaemonSet"), ds)
	return ds
}

// agentContainer is the pod's only container, which must be the agent.
func agentContainer(t *testing.T, spec *corev1.PodSpec) *corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("pod has %d containers and %d init containers, want the agent alone", len(spec.Containers), len(spec.InitContainers))
	}
	c := &spec.Containers[0]
	if c.Name != "ue-agent" || !slices.Equal(c.Command, []string{"/ue-agent"}) {
		t.Fatalf("container %q runs %v, want ue-agent running /ue-agent", c.Name, c.Command)
	}
	return c
}

func TestDaemonSetRunsOnLabelledNodesOnTheHostNetwork(t *testing.T) {
	ds := daemonSet(t)
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork {
		t.Error("hostNetwork is false: the legs' addresses and the TUNs are the node's")
	}
	if spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("dnsPolicy is %s, want %s", spec.DNSPolicy, corev1.DNSClusterFirstWithHostNet)
	}
	if spec.HostPID || spec.HostIPC {
		t.Errorf("hostPID=%v hostIPC=%v, want neither", spec.HostPID, spec.HostIPC)
	}
	if got := spec.NodeSelector[nodeLabel]; got != "true" {
		t.Errorf("nodeSelector[%s] = %q, want \"true\" (nodeSelector %v)", nodeLabel, got, spec.NodeSelector)
	}
	if len(spec.Tolerations) != 0 || spec.Affinity != nil {
		t.Errorf("tolerations %v, affinity %v: the base tolerates nothing and selects by label only", spec.Tolerations, spec.Affinity)
	}
	if spec.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName is %q, want system-node-critical", spec.PriorityClassName)
	}
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 30 {
		t.Errorf("terminationGracePeriodSeconds is %v, want at least 30 to tear the tunnels down", g)
	}
	if spec.ServiceAccountName != agentName {
		t.Errorf("serviceAccountName is %q, want %s", spec.ServiceAccountName, agentName)
	}
	u := ds.Spec.UpdateStrategy
	if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil {
		t.Fatalf("updateStrategy is %+v, want RollingUpdate", u)
	}
	if mu := u.RollingUpdate.MaxUnavailable; mu == nil || *mu != intstr.FromInt32(1) {
		t.Errorf("maxUnavailable is %v, want 1", mu)
	}
	if ms := u.RollingUpdate.MaxSurge; ms != nil && ms.IntValue() != 0 {
		t.Errorf("maxSurge is %v, want 0: two agents on one node share its ports and TUNs", ms)
	}
}

func TestAgentHasOnlyNetAdminAndTheTUNDevice(t *testing.T) {
	ds := daemonSet(t)
	spec := &ds.Spec.Template.Spec
	c := agentContainer(t, spec)
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("the agent container has no securityContext")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("the agent container is privileged")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN"}) ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities are %+v, want drop [ALL] add [NET_ADMIN]", sc.Capabilities)
	}
	if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
		t.Errorf("procMount is %s", *sc.ProcMount)
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && spec.SecurityContext != nil {
		seccomp = spec.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccomp profile is %+v, want RuntimeDefault", seccomp)
	}

	// Of the host: /dev/net/tun, as a character device, and nothing else.
	var tunVolume string
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		if v.HostPath.Path != tunDevice || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathCharDev {
			t.Errorf("hostPath volume %s is %+v, want only %s of type CharDevice", v.Name, v.HostPath, tunDevice)
			continue
		}
		tunVolume = v.Name
	}
	if tunVolume == "" {
		t.Fatalf("no hostPath volume of %s (type CharDevice)", tunDevice)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == tunVolume {
			mounted = m.MountPath == tunDevice && m.SubPath == ""
		}
	}
	if !mounted {
		t.Errorf("volume %s is not mounted at %s: mounts %+v", tunVolume, tunDevice, c.VolumeMounts)
	}
}

func TestAgentKnowsItsNodeAndIsProbed(t *testing.T) {
	ds := daemonSet(t)
	c := agentContainer(t, &ds.Spec.Template.Spec)
	if !strings.HasPrefix(c.Image, defaultTag) {
		t.Errorf("image is %q, want %s (the kustomization's images: entry)", c.Image, defaultTag)
	}
	var nodeEnv *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "NODE_NAME" {
			nodeEnv = &c.Env[i]
		}
	}
	if nodeEnv == nil || nodeEnv.ValueFrom == nil || nodeEnv.ValueFrom.FieldRef == nil ||
		nodeEnv.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME is %+v, want the downward API's spec.nodeName", nodeEnv)
	}
	// Metrics and health on the node's cluster address (a host-network pod's IP) alone, where
	// the kubelet probes and a scraper reaches the node: not on the access interfaces (WiFi, the
	// 5G modem) that hold the UEs' addresses.
	podIP := envFrom(c, "POD_IP")
	if podIP == nil || podIP.FieldRef == nil || podIP.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("POD_IP is %+v, want the downward API's status.podIP", podIP)
	}
	if !ds.Spec.Template.Spec.HostNetwork {
		t.Error("not on the host network: status.podIP is not the node's address")
	}
	for _, want := range []string{
		"--node-name=$(NODE_NAME)",
		fmt.Sprintf("--metrics-addr=$(POD_IP):%d", metricsPort),
		fmt.Sprintf("--health-addr=$(POD_IP):%d", healthPort),
	} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != metricsPort || ports["health"] != healthPort {
		t.Errorf("ports are %v, want metrics %d and health %d", ports, metricsPort, healthPort)
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name {
			t.Errorf("no HTTP probe of %s: liveness %+v, readiness %+v", name, c.LivenessProbe, c.ReadinessProbe)
			continue
		}
		if p := probe.HTTPGet.Port; p != intstr.FromString("health") && p != intstr.FromInt32(healthPort) {
			t.Errorf("probe of %s targets port %s, want %d (--health-addr)", name, p.String(), healthPort)
		}
	}
	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
		t.Errorf("resources are %+v, want cpu and memory requests and a memory limit", r)
	}
}

// envFrom is the source of the container's variable name, nil when it has none.
func envFrom(c *corev1.Container, name string) *corev1.EnvVarSource {
	for _, e := range c.Env {
		if e.Name == name {
			return e.ValueFrom
		}
	}
	return nil
}

// systemNodeCritical is the priority of the built-in class system-node-critical.
const systemNodeCritical = 2000001000

// TestAgentPodIsAdmitted creates, with dry run, the pod the DaemonSet controller would create
// on an edge node: pod validation and admission (the priority class among them) accept it.
func TestAgentPodIsAdmitted(t *testing.T) {
	ds := daemonSet(t)
	pod := podOf(ds, namespace)
	if err := k8s.Create(context.Background(), pod, client.DryRunAll); err != nil {
		t.Fatalf("the agent's pod is refused: %v", err)
	}
	if pod.Spec.Priority == nil || *pod.Spec.Priority != systemNodeCritical {
		t.Errorf("pod priority is %v, want system-node-critical's %d", pod.Spec.Priority, systemNodeCritical)
	}
	// On the host network the API server makes every container port a host port: the node's.
	for _, p := range pod.Spec.Containers[0].Ports {
		if p.HostPort != p.ContainerPort {
			t.Errorf("port %s: hostPort %d, containerPort %d", p.Name, p.HostPort, p.ContainerPort)
		}
	}
}

// TestAgentPodNeedsPrivilegedPodSecurity holds the README to what the API server does: the agent
// (host network, a hostPath device, NET_ADMIN) is refused where the baseline Pod Security level
// is enforced, so junction-system must not enforce it.
func TestAgentPodNeedsPrivilegedPodSecurity(t *testing.T) {
	ds := daemonSet(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   "baseline-enforced",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"},
	}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	err := k8s.Create(context.Background(), podOf(ds, ns.Name), client.DryRunAll)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("creating the agent's pod under baseline Pod Security: err %v, want Forbidden (update ue-daemonset/README.md)", err)
	}
	for _, want := range []string{"hostNetwork", "hostPath", "NET_ADMIN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Pod Security's refusal does not name %s: %v", want, err)
		}
	}
}

// podOf is the pod the DaemonSet controller would create on node edge-1.
func podOf(ds *appsv1.DaemonSet, ns string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
	pod.Namespace, pod.Name = ns, agentName+"-edge-1"
	pod.Spec.NodeName = "edge-1"
	return pod
}
