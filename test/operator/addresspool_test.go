package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// sessionEntries counts the UPF's sessions table entries.
func (r upfRig) sessionEntries(t *testing.T) int {
	t.Helper()
	es, err := r.u.entries(r.sch)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if strings.HasPrefix(e, "sessions ") {
			n++
		}
	}
	return n
}

// A session is programmed only with addresses an AddressPool grants to its namespace, and never
// with a session address in the cluster's ranges (envtest's ServiceCIDR, 10.0.0.0/24): another
// tenant's addresses cannot be squatted, a refused session has Programmed False with the field
// named and a warning event and nothing on the UPF, and a session whose grant an administrator
// takes back loses its entries.
func TestSessionAddressesComeFromTheNamespacesPools(t *testing.T) {
	r := newUPFRig(t, "upf")
	ctx := context.Background()
	other := &junctionv1.AddressPool{ObjectMeta: metav1.ObjectMeta{Name: r.ns + "-other"}, Spec: junctionv1.AddressPoolSpec{
		Namespace: r.ns + "-other", SessionAddresses: []junctionv1.IPv4Prefix{"192.168.50.0/24"}, UEAddresses: []junctionv1.IPv4Prefix{"192.168.51.0/24"}}}
	create(t, other)
	t.Cleanup(func() { _ = k8s.Delete(ctx, other) })
	startOperator(t, r.ns, operatorOptions{})
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	ok := r.programmedSession(t, "allowed", "imsi-001010000000001", "10.60.0.9")

	foreignLeg := session(r.ns, "foreign-leg", "imsi-001010000000003", "10.60.0.3", "upf", "n", "")
	foreignLeg.Spec.AccessLegs.NonThreeGPP.UEAddress = "192.168.51.3"
	for _, c := range []struct {
		s          *junctionv1.ATSSSSession
		field, why string
	}{
		{session(r.ns, "squatter", "imsi-001010000000002", "192.168.50.1", "upf", "n", ""), "spec.sessionAddress",
			"192.168.50.1 is in no AddressPool's spec.sessionAddresses for namespace " + r.ns},
		{foreignLeg, "spec.accessLegs.nonThreeGPP.ueAddress", "192.168.51.3 is in no AddressPool's spec.ueAddresses"},
		{session(r.ns, "in-services", "imsi-001010000000004", "10.0.0.10", "upf", "n", ""), "spec.sessionAddress",
			"10.0.0.10 is in the cluster's service range (ServiceCIDR kubernetes) 10.0.0.0/24"},
	} {
		create(t, c.s)
		waitCondition(t, programTimeout, c.s, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "AddressNotAllowed")
		cond, err := condition(c.s, junctionv1.ConditionProgrammed)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(cond.Message, c.field+": ") || !strings.Contains(cond.Message, c.why) {
			t.Errorf("%s: Programmed says %q, want the field %s and %q", c.s.Name, cond.Message, c.field, c.why)
		}
		eventually(t, programTimeout, "an AddressNotAllowed event on "+c.s.Name, func() error {
			return findEvent(r.ns, c.s.Name, "Warning", "AddressNotAllowed")
		})
	}
	if n := r.sessionEntries(t); n != 1 {
		t.Errorf("%d sessions entries on the UPF, want only the allowed session's", n)
	}

	// The administrator takes the grant of 10/8 back: the session that had it loses its entries.
	pool := testPool(r.ns)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
		t.Fatal(err)
	}
	pool.Spec.SessionAddresses = []junctionv1.IPv4Prefix{"100.64.0.0/10"}
	if err := k8s.Update(ctx, pool); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, programTimeout, ok, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "AddressNotAllowed")
	eventually(t, programTimeout, "the refused session's entries gone", func() error {
		if n := r.sessionEntries(t); n != 0 {
			return fmt.Errorf("%d sessions entries on the UPF", n)
		}
		return nil
	})
}
