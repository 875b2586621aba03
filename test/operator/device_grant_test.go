package operator

// The device gate (docs/p4runtime-targets.md): the operator connects to a UserPlaneFunction's
// device only when a P4RuntimeTarget grants the UPF's namespace that device. The expectations
// are that page's: reason DeviceNotGranted on Connected and Ready, a Warning event, Reconciling
// (not Stalled), no connection at all to the device, and the identity rule of two UPFs on one
// device.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/testenv"
	"github.com/wmnsk/go-pfcp/ie"
)

const reasonDeviceNotGranted = "DeviceNotGranted" // docs/p4runtime-targets.md

// waitNotGranted waits until upf shows what docs/p4runtime-targets.md says a UPF without a grant
// shows: Connected and Ready False DeviceNotGranted, the message naming the address, the device
// ID, the namespace and the P4RuntimeTarget that would grant it, Reconciling and not Stalled.
func waitNotGranted(t *testing.T, upf *junctionv1.UserPlaneFunction) {
	t.Helper()
	waitCondition(t, programTimeout, upf, junctionv1.ConditionConnected, metav1.ConditionFalse, reasonDeviceNotGranted)
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionFalse, reasonDeviceNotGranted)
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReconciling, metav1.ConditionTrue, reasonDeviceNotGranted)
	if c, _ := condition(upf, junctionv1.ConditionStalled); c.Status == metav1.ConditionTrue {
		t.Errorf("Stalled=True (%s): a grant that may come with the same sync is Reconciling", c.Reason)
	}
	c, _ := condition(upf, junctionv1.ConditionConnected)
	for _, want := range []string{string(upf.Spec.P4Runtime.Address), "device ID " + strconv.FormatInt(upf.Spec.P4Runtime.DeviceID, 10), upf.Namespace, "P4RuntimeTarget"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Connected's message %q does not name %q", c.Message, want)
		}
	}
}

// noDial fails when the software UPF accepted a connection since it had accepted before.
func noDial(t *testing.T, u *softUPF, before int64) {
	t.Helper()
	if n := u.conns.accepted.Load() - before; n != 0 {
		t.Errorf("the device accepted %d connections from the operator; want none without a grant", n)
	}
}

// TestUPFWithoutGrantIsNotDialled: a UserPlaneFunction whose namespace no P4RuntimeTarget grants
// its device is not connected to (its P4Runtime server sees no connection at all), shows
// DeviceNotGranted with a Warning event, and its session and policy are not programmed (they say
// UPFNotReady). Grants for another namespace, another port, another device ID or another role do
// not count.
func TestUPFWithoutGrantIsNotDialled(t *testing.T) {
	r := newUngrantedRig(t, "upf", nil, nil)
	ep := r.upf.Spec.P4Runtime
	host, port, _ := strings.Cut(string(ep.Address), ":")
	p, _ := strconv.Atoi(port)
	otherPort := junctionv1.P4RuntimeAddress(fmt.Sprintf("%s:%d", host, p+1))
	for _, g := range []*junctionv1.P4RuntimeTarget{
		deviceGrant(r.ns+"-other-namespace", "default", ep.Address, ep.DeviceID, ep.Role),
		deviceGrant(r.ns+"-other-port", r.ns, otherPort, ep.DeviceID, ep.Role),
		deviceGrant(r.ns+"-other-device-id", r.ns, ep.Address, ep.DeviceID+1, ep.Role),
		deviceGrant(r.ns+"-other-role", r.ns, ep.Address, ep.DeviceID, "monitoring"),
	} {
		create(t, g)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), g) })
	}
	s := session(r.ns, "s1", "imsi-001010000000001", "10.60.0.1", r.upf.Name, "n", "")
	pol := activeStandbyPolicy(r.ns, "video", 10, "198.18.10.0/24")
	create(t, s, pol)
	before := r.u.conns.accepted.Load()
	startOperator(t, r.ns, operatorOptions{})

	eventually(t, programTimeout, "a DeviceNotGranted event", func() error { return findEvent(r.ns, r.upf.Name, "Warning", reasonDeviceNotGranted) })
	time.Sleep(settleTime) // give the operator time to (wrongly) dial
	noDial(t, r.u, before)
	if w := r.u.writes(); w != 0 {
		t.Errorf("%d writes reached the device", w)
	}
	waitNotGranted(t, r.upf)
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "UPFNotReady")
	waitCondition(t, programTimeout, pol, junctionv1.ConditionReady, metav1.ConditionFalse, "UPFNotReady")
	if c, _ := condition(pol, junctionv1.ConditionReady); !strings.Contains(c.Message, r.upf.Name) {
		t.Errorf("the policy's Ready message %q does not name the UPF", c.Message)
	}
}

// TestGrantSpelledOtherwiseCounts: a grant names the UPF's device by the rule that finds two UPFs
// on one device (port, device ID and role, hosts resolving to a common address), so localhost
// and 127.0.0.1 are one device, whichever side says which.
func TestGrantSpelledOtherwiseCounts(t *testing.T) {
	toLocalhost := func(a string) string { return strings.Replace(a, "127.0.0.1", "localhost", 1) }
	for _, tc := range []struct {
		name       string
		upf, grant func(string) string
	}{
		{"the UPF says 127.0.0.1, the grant localhost", func(a string) string { return a }, toLocalhost},
		{"the UPF says localhost, the grant 127.0.0.1", toLocalhost, func(a string) string { return a }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newUngrantedRig(t, "upf", func(u *junctionv1.UserPlaneFunction) {
				u.Spec.P4Runtime.Address = junctionv1.P4RuntimeAddress(tc.upf(string(u.Spec.P4Runtime.Address)))
			}, nil)
			g := deviceGrant(r.ns, r.ns, junctionv1.P4RuntimeAddress(tc.grant(r.u.addr)), 1, "")
			create(t, g)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), g) })
			startOperator(t, r.ns, operatorOptions{})
			waitCondition(t, programTimeout, r.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
			r.programmedSession(t, "s1", "imsi-001010000000001", "10.60.0.1")
			if err := sameEntries(r.u, r.sch, r.ns, r.upf.Name); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestGrantConnectsAndItsRemovalDisconnects: a UPF waits without its grant; the grant created
// afterwards connects it and its session is programmed. Changed to another device ID, and again
// once deleted, the grant no longer covers the device: the operator closes its connection,
// writes nothing more (a session created meanwhile does not reach the device), and the UPF shows
// DeviceNotGranted again.
func TestGrantConnectsAndItsRemovalDisconnects(t *testing.T) {
	ctx := context.Background()
	r := newUngrantedRig(t, "upf", nil, nil)
	before := r.u.conns.accepted.Load()
	startOperator(t, r.ns, operatorOptions{})
	waitNotGranted(t, r.upf)
	noDial(t, r.u, before)

	g := deviceGrant(r.ns, r.ns, r.upf.Spec.P4Runtime.Address, r.upf.Spec.P4Runtime.DeviceID, "")
	create(t, g)
	t.Cleanup(func() { _ = k8s.Delete(ctx, g) })
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	r.programmedSession(t, "s1", "imsi-001010000000001", "10.60.0.1")
	eventually(t, programTimeout, "the session on the device", func() error { return sameEntries(r.u, r.sch, r.ns, r.upf.Name) })

	revoked := func(what string, s2 *junctionv1.ATSSSSession) {
		t.Helper()
		waitNotGranted(t, r.upf)
		eventually(t, programTimeout, what+": the operator's connection closed", func() error {
			if n := r.u.conns.open.Load(); n != 0 {
				return fmt.Errorf("%d connections open", n)
			}
			return nil
		})
		writes := r.u.writes()
		create(t, s2)
		waitCondition(t, programTimeout, s2, junctionv1.ConditionProgrammed, metav1.ConditionFalse, "UPFNotReady")
		time.Sleep(settleTime) // give the operator time to (wrongly) write it
		if w := r.u.writes(); w != writes {
			t.Errorf("%s: %d writes reached the device", what, w-writes)
		}
		if n := countTable(mustEntries(t, r.u, r.sch), "sessions"); n != 1 {
			t.Errorf("%s: %d sessions entries on the device, want s1's alone", what, n)
		}
	}

	// Changed to name another device: the grant no longer covers this one.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
		t.Fatal(err)
	}
	g.Spec.DeviceID++
	if err := k8s.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	revoked("the grant changed to device ID 2", session(r.ns, "s2", "imsi-001010000000002", "10.60.0.2", r.upf.Name, "n", ""))

	// Back, then deleted.
	g.Spec.DeviceID--
	if err := k8s.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	eventually(t, programTimeout, "both sessions on the device", func() error { return sameEntries(r.u, r.sch, r.ns, r.upf.Name) })
	if err := k8s.Delete(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitNotGranted(t, r.upf)
	eventually(t, programTimeout, "the grant deleted: the operator's connection closed", func() error {
		if n := r.u.conns.open.Load(); n != 0 {
			return fmt.Errorf("%d connections open", n)
		}
		return nil
	})
}

// TestUngrantedUPFTakesNoDeviceFromAGrantedOne: a tenant names another namespace's device in a
// UserPlaneFunction of its own, created first (older UPFs keep a shared device). Without a grant
// it is not a duplicate of the granted UPF: the granted one programs the device and shows no
// DeviceConflict, the other one DeviceNotGranted.
func TestUngrantedUPFTakesNoDeviceFromAGrantedOne(t *testing.T) {
	u := startSoftUPF(t, "127.0.0.1:0")
	squatterNS := newNamespace(t)
	squatter := newUPF(squatterNS, "squatter", u.addr, "pipeline")
	cm, _ := pipelineConfigMap(t, squatterNS, "pipeline", nil)
	create(t, cm, squatter)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have a second's resolution: the squatter is older

	r := upfRig{ns: newNamespace(t), u: u}
	cm, r.sch = pipelineConfigMap(t, r.ns, "pipeline", nil)
	r.upf = newUPF(r.ns, "upf", u.addr, "pipeline")
	grantDevice(t, r.upf)
	create(t, cm, r.upf)
	startOperator(t, r.ns, operatorOptions{alsoWatch: []string{squatterNS}})

	waitNotGranted(t, squatter)
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	r.programmedSession(t, "s1", "imsi-001010000000001", "10.60.0.1")
	time.Sleep(settleTime) // give the squatter time to (wrongly) take the device
	if c, _ := condition(r.upf, junctionv1.ConditionDeviceConflict); c.Status != "" {
		t.Errorf("DeviceConflict %s %s: %s", c.Status, c.Reason, c.Message)
	}
	if c, _ := condition(r.upf, junctionv1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("the granted UPF: Ready %s %s: %s", c.Status, c.Reason, c.Message)
	}
	if err := sameEntries(r.u, r.sch, r.ns, r.upf.Name); err != nil {
		t.Error(err)
	}
}

// TestN4ServesOnlyAGrantedDevice: a UserPlaneFunction whose device no P4RuntimeTarget grants runs
// no N4 endpoint (docs/p4runtime-targets.md): an SMF's Association Setup goes unanswered, as from
// a UPF that is not there, rather than being taken for sessions that could never reach a device,
// and an N4NotServed event says why. Once the grant exists the endpoint answers.
func TestN4ServesOnlyAGrantedDevice(t *testing.T) {
	n4Addr := freeUDPPort(t)
	r := newUngrantedRig(t, "upf", func(u *junctionv1.UserPlaneFunction) {
		u.Spec.N4 = &junctionv1.N4{NodeID: "127.0.0.1", Listen: n4Addr.String()}
	}, nil)
	startOperator(t, r.ns, operatorOptions{})
	waitNotGranted(t, r.upf)
	eventually(t, programTimeout, "the N4NotServed event", func() error { return findEvent(r.ns, "upf", "Warning", "N4NotServed") })
	c, err := smf.Dial(netip.MustParseAddrPort("127.0.0.1:0"), n4Addr, "smf.test.example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if resp, err := c.Associate(context.Background()); !errors.Is(err, smf.ErrTimeout) {
		t.Fatalf("Association Setup to an ungranted UPF's N4 address: %v (%v), want no answer", resp, err)
	}

	grantDevice(t, r.upf)
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	eventually(t, programTimeout, "an association once the device is granted", func() error {
		resp, err := c.Associate(context.Background())
		if err != nil {
			return err
		}
		if cause := resp.Cause(); cause != ie.CauseRequestAccepted {
			return fmt.Errorf("cause %d", cause)
		}
		return nil
	})
}

// TestGrantedNameIsTheDevicesToProve: a P4RuntimeTarget with tlsServerName makes the device
// prove that name with its certificate (docs/p4runtime-targets.md), whatever address leads to it
// and whatever the UPF says. The device here holds a certificate for 127.0.0.1 and softupf:
// granted as switch-a.example it is not connected to (its certificate does not prove that
// name) although the UPF's address is 127.0.0.1; a UPF that names softupf itself against that
// grant is refused before any dial (ServerNameNotGranted, Stalled); a UPF in plaintext on a
// device whose grant names one is refused too (TLSRequired); the grant naming softupf connects.
func TestGrantedNameIsTheDevicesToProve(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pki := testenv.NewPKI(t)
	u, plainDevice := mutualTLSUPF(t, pki), startSoftUPF(t, "127.0.0.1:0")
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p4rt-tls"}, Data: pki.ClientSecretData()}
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	upf.Spec.P4Runtime.Insecure = false
	upf.Spec.P4Runtime.TLS = &junctionv1.P4RuntimeTLS{SecretRef: junctionv1.LocalObjectReference{Name: "p4rt-tls"}}
	plain := newUPF(ns, "plain", plainDevice.addr, "pipeline") // insecure: true
	g := deviceGrant(ns+"-upf", ns, upf.Spec.P4Runtime.Address, 1, "")
	g.Spec.TLSServerName = "switch-a.example"
	gPlain := deviceGrant(ns+"-plain", ns, plain.Spec.P4Runtime.Address, 1, "")
	gPlain.Spec.TLSServerName = "switch-b.example"
	create(t, cm, secret, g, gPlain, upf, plain)
	t.Cleanup(func() { _ = k8s.Delete(ctx, g); _ = k8s.Delete(ctx, gPlain) })
	startOperator(t, ns, operatorOptions{})

	waitCondition(t, programTimeout, plain, junctionv1.ConditionConnected, metav1.ConditionFalse, "TLSRequired")
	waitCondition(t, programTimeout, plain, junctionv1.ConditionStalled, metav1.ConditionTrue, "TLSRequired")
	if c, _ := condition(plain, junctionv1.ConditionConnected); !strings.Contains(c.Message, "switch-b.example") {
		t.Errorf("TLSRequired's message %q does not name the granted name switch-b.example", c.Message)
	}
	noDial(t, plainDevice, 0)

	eventually(t, programTimeout, "the device refused as switch-a.example", func() error {
		c, err := condition(upf, junctionv1.ConditionConnected)
		if err != nil {
			return err
		}
		if c.Status == metav1.ConditionTrue || !strings.Contains(c.Message, "switch-a.example") {
			return fmt.Errorf("Connected %s %s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
	if w := u.writes(); w != 0 {
		t.Errorf("%d writes reached a device that did not prove the granted name", w)
	}

	// The UPF names the device's true name: not the granted one, so nothing is dialled.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(upf), upf); err != nil {
		t.Fatal(err)
	}
	upf.Spec.P4Runtime.TLS.ServerName = testenv.ServerName
	if err := k8s.Update(ctx, upf); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, programTimeout, upf, junctionv1.ConditionConnected, metav1.ConditionFalse, "ServerNameNotGranted")
	waitCondition(t, programTimeout, upf, junctionv1.ConditionStalled, metav1.ConditionTrue, "ServerNameNotGranted")
	if c, _ := condition(upf, junctionv1.ConditionConnected); !strings.Contains(c.Message, "spec.p4runtime.tls.serverName") || !strings.Contains(c.Message, "switch-a.example") {
		t.Errorf("ServerNameNotGranted's message %q does not name spec.p4runtime.tls.serverName and the granted name", c.Message)
	}

	// The administrator grants the device by the name its certificate proves.
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
		t.Fatal(err)
	}
	g.Spec.TLSServerName = testenv.ServerName
	if err := k8s.Update(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, programTimeout, upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	s := session(ns, "s1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10")
	create(t, s)
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	eventually(t, programTimeout, "the session on the device", func() error { return sameEntries(u, sch, ns, "upf") })
}
