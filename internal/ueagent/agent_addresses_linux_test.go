package ueagent

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/addrpool"
	"github.com/junction-atsss/junction/internal/testenv"
)

// agentTimeout bounds how long the agent takes to report a session it watches.
const agentTimeout = 20 * time.Second

// The agent builds a tunnel only for addresses an AddressPool grants to the session's namespace,
// and never on the node's own networks or the ranges it was told to keep (pods, services, the
// API server), even when a pool holds them: a session it refuses gets AgentReady False with the
// field named, a warning event, and nothing on the node. A real API server, a real node
// namespace with a real TUN for the session that is allowed.
func TestAgentRefusesAddressesItMayNotUse(t *testing.T) {
	ns, _ := newNodeNS(t, "jxguard")
	cfg, stop, err := testenv.Start()
	testenv.Require(t, "the envtest control plane (make tools)", err)
	t.Cleanup(func() { _ = stop() })
	// The node's own network: what a session address must never be.
	if out, err := ns.Command("ip", "link", "add", "eth0", "up", "type", "veth", "peer", "name", "eth1").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := ns.AddAddress("eth0", netip.MustParsePrefix("192.0.2.10/24")); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	k8s, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	const node = "edge-1"
	for _, tenant := range []string{"tenant-a", "tenant-b"} {
		mustCreate(t, k8s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}})
		mustCreate(t, k8s, testUPFIn(tenant))
	}
	// An administrator's grant to tenant-a, wider than it should be: it holds the node's network.
	mustCreate(t, k8s, &junctionv1.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}, Spec: junctionv1.AddressPoolSpec{
		Namespace: "tenant-a", SessionAddresses: []junctionv1.IPv4Prefix{"10.60.0.0/24", "192.0.2.0/24"},
		UEAddresses: []junctionv1.IPv4Prefix{"203.0.113.0/24"}}})

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.Scheme, Cache: CacheOptions(node), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(mgr.GetClient(), Options{NodeName: node, Netns: ns.Path(),
		Reserved: []addrpool.Reserved{{Prefix: netip.MustParsePrefix("10.60.0.128/25"), What: "the cluster's pod range"}},
	}, NewMetrics(prometheus.NewRegistry()), mgr.GetEventRecorderFor(junctionv1.FieldManagerUEAgent), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	refused := []struct {
		tenant, name, addr, leg, field, why string
	}{
		{"tenant-a", "on-the-node", "192.0.2.10", "203.0.113.10", "spec.sessionAddress", "192.0.2.10 is in this node's network on eth0 192.0.2.0/24"},
		{"tenant-a", "in-pods", "10.60.0.200", "203.0.113.11", "spec.sessionAddress", "10.60.0.200 is in the cluster's pod range 10.60.0.128/25"},
		{"tenant-a", "foreign-leg", "10.60.0.3", "198.51.100.3", "spec.accessLegs.nonThreeGPP.ueAddress", "198.51.100.3 is in no AddressPool"},
		// tenant-b has no pool: tenant-a's addresses are not first come, first served.
		{"tenant-b", "squatter", "10.60.0.1", "203.0.113.1", "spec.sessionAddress", "10.60.0.1 is in no AddressPool's spec.sessionAddresses for namespace tenant-b"},
	}
	for _, r := range refused {
		mustCreate(t, k8s, sessionOn(r.tenant, r.name, node, r.addr, r.leg))
	}
	allowed := sessionOn("tenant-a", "allowed", node, "10.60.0.1", "203.0.113.1")
	mustCreate(t, k8s, allowed)

	for _, r := range refused {
		key := client.ObjectKey{Namespace: r.tenant, Name: r.name}
		testenv.Eventually(t, agentTimeout, key.String()+" refused", func() error {
			var s junctionv1.ATSSSSession
			if err := k8s.Get(ctx, key, &s); err != nil {
				return err
			}
			c := meta.FindStatusCondition(s.Status.Conditions, junctionv1.ConditionAgentReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != addrpool.Reason ||
				!strings.HasPrefix(c.Message, r.field+": ") || !strings.Contains(c.Message, r.why) {
				return fmt.Errorf("AgentReady %v, want False/%s naming %s: %s", c, addrpool.Reason, r.field, r.why)
			}
			return findWarning(ctx, k8s, key, addrpool.Reason, r.field)
		})
	}
	testenv.Eventually(t, agentTimeout, "the allowed session's tunnel", func() error {
		_, err := a.node.nl.LinkByName(TUNName(netip.MustParseAddr("10.60.0.1")))
		return err
	})
	links, err := a.node.nl.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if n := l.Attrs().Name; strings.HasPrefix(n, tunPrefix) && n != TUNName(netip.MustParseAddr("10.60.0.1")) {
			t.Errorf("TUN %s on the node: only the allowed session may have one", n)
		}
	}
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func findWarning(ctx context.Context, c client.Client, key client.ObjectKey, reason, text string) error {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(key.Namespace)); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == key.Name && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, text) {
			return nil
		}
	}
	return fmt.Errorf("no %s warning event naming %s on %s", reason, text, key)
}

func testUPFIn(ns string) *junctionv1.UserPlaneFunction {
	u := testUPF()
	u.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "upf"}
	u.Spec.P4Runtime.Address = "127.0.0.1:9559"
	u.Spec.P4Runtime.Insecure = true // no operator connects here: the agent reads the endpoints only
	u.Spec.Pipeline.ConfigMapRef.Name = "pipeline"
	return u
}

func sessionOn(ns, name, node, addr, leg string) *junctionv1.ATSSSSession {
	return &junctionv1.ATSSSSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: junctionv1.ATSSSSessionSpec{
		UE: junctionv1.UE{SUPI: "imsi-00101000000000" + fmt.Sprint(len(name)%10), NodeName: node}, SessionAddress: junctionv1.IPv4Address(addr),
		UPFRef:     junctionv1.LocalObjectReference{Name: "upf"},
		AccessLegs: junctionv1.AccessLegs{NonThreeGPP: &junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWiFi, UEAddress: junctionv1.IPv4Address(leg)}},
	}}
}
