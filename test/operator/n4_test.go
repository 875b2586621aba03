package operator

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/controllers"
	"github.com/junction-atsss/junction/internal/p4bytes"
	"github.com/junction-atsss/junction/internal/smf"
	"github.com/junction-atsss/junction/internal/testenv"
)

// n4Rig is a rig whose UPF has an N4 endpoint on a free loopback port, with the operator
// running and an SMF associated.
type n4Rig struct {
	upfRig
	n4  netip.AddrPort
	smf *smf.Client
	op  *operator
}

func freeUDPPort(t testing.TB) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

func newN4Rig(t testing.TB, n4spec func(*junctionv1.N4), edit func(*p4configv1.P4Info)) n4Rig {
	t.Helper()
	r := n4Rig{n4: freeUDPPort(t)}
	r.upfRig = newUPFRigOf(t, "upf", func(u *junctionv1.UserPlaneFunction) {
		u.Spec.N4 = &junctionv1.N4{NodeID: "127.0.0.1", Listen: r.n4.String()}
		if n4spec != nil {
			n4spec(u.Spec.N4)
		}
	}, edit)
	r.op = startOperator(t, r.ns, operatorOptions{})
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	eventually(t, programTimeout, "the N4 endpoint's recovery time stamp in the UPF status", func() error {
		if ts := r.n4Status(t).RecoveryTimeStamp; ts == nil {
			return fmt.Errorf("status.n4 has no recoveryTimeStamp")
		}
		return nil
	})
	c, err := smf.Dial(netip.MustParseAddrPort("127.0.0.1:0"), r.n4, "smf.test.example")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.smf = c
	return r
}

func (r n4Rig) n4Status(t testing.TB) junctionv1.N4Status {
	t.Helper()
	var u junctionv1.UserPlaneFunction
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(r.upf), &u); err != nil {
		t.Fatal(err)
	}
	if u.Status.N4 == nil {
		return junctionv1.N4Status{}
	}
	return *u.Status.N4
}

// n4Sessions are the ATSSSSessions the N4 endpoint made in the rig's namespace.
func (r n4Rig) n4Sessions(t testing.TB) []junctionv1.ATSSSSession {
	t.Helper()
	var list junctionv1.ATSSSSessionList
	if err := k8s.List(context.Background(), &list, client.InNamespace(r.ns), client.MatchingLabels{"atsss.junction.dev/n4-upf": r.upf.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// awaitN4Sessions waits until the N4 endpoint's objects are n (they are written after the SMF's
// answer, docs/n4.md) and returns them.
func (r n4Rig) awaitN4Sessions(t testing.TB, n int) []junctionv1.ATSSSSession {
	t.Helper()
	var out []junctionv1.ATSSSSession
	eventually(t, programTimeout, fmt.Sprintf("%d N4 sessions as objects", n), func() error {
		if out = r.n4Sessions(t); len(out) != n {
			return fmt.Errorf("%d", len(out))
		}
		return nil
	})
	return out
}

// leaveN4 removes spec.n4 from the rig's UPF: it leaves N4 for good.
func (r n4Rig) leaveN4(t testing.TB) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var upf junctionv1.UserPlaneFunction
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(r.upf), &upf); err != nil {
			return err
		}
		upf.Spec.N4 = nil
		return k8s.Update(context.Background(), &upf)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// associate sets the SMF's association up and returns the UPF's Recovery Time Stamp.
func (r n4Rig) associate(t testing.TB) time.Time {
	t.Helper()
	resp, err := r.smf.Associate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("Association Setup: cause %d, want 1", c)
	}
	ts, err := resp.Find(ie.RecoveryTimeStamp).RecoveryTimeStamp()
	if err != nil {
		t.Fatalf("Association Setup Response: Recovery Time Stamp: %v", err)
	}
	return ts
}

// alice is the MA PDU session of the tests: the default traffic on smallest delay, a UDP
// application from 198.51.100.0/24 to the UE's ports 5000-5100 load-balanced 70/30 with a
// loss threshold of 5%.
func alice() smf.MASession {
	loss := uint8(5)
	return smf.MASession{
		IMSI: "001010000000077", UEAddr: netip.MustParseAddr("10.60.0.7"),
		UE3GPP: netip.MustParseAddr("10.45.0.7"), UENon3GPP: netip.MustParseAddr("203.0.113.7"),
		GNB: netip.MustParseAddr("198.51.100.10"), DownlinkTEID: 0x1234,
		Default: smf.Steering{Mode: smf.SmallestDelay},
		Apps: []smf.App{{Flow: "permit out 17 from 198.51.100.0/24 to assigned 5000-5100", Precedence: 100,
			Steering: smf.Steering{Mode: smf.LoadBalancing, Weight3GPP: 70, LossPercent: &loss}}},
	}
}

// hx is a value as describe prints it: big-endian, leading zero bytes dropped.
func hx(v uint64, width int) string {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return fmt.Sprintf("%x", p4bytes.Canonical(b[8-width:]))
}

// TestN4MASessionLifecycle: an SMF associates, establishes an MA PDU session with two MARs,
// modifies one, retransmits a request, deletes the session and releases the association; after
// each step the UPF's entries and the objects say what TS 29.244 and docs/n4.md make of the
// SMF's rules (expected values written from the request, not from the operator's code).
func TestN4MASessionLifecycle(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)

	resp, err := r.smf.Associate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("Association Setup: cause %d, want 1", c)
	}
	// UP Function Features (TS 29.244 §8.2.25): FTUP is octet 5 bit 5, PFDM octet 5 bit 6, EMPU
	// octet 6 bit 1, MNOP octet 7 bit 5, ATSSS-LL octet 9 bit 1, RTTWP octet 10 bit 1; not MPTCP
	// (octet 8 bit 8), nothing else.
	if x := resp.Find(ie.UPFunctionFeatures); x == nil {
		t.Error("no UP Function Features")
	} else if got := fmt.Sprintf("%x", x.Payload); got != "300110000101" || !x.HasFTUP() || !x.HasPFDM() || !x.HasEMPU() || !x.HasMNOP() {
		t.Errorf("UP Function Features %s, want 300110000101 (FTUP, PFDM, EMPU, MNOP, ATSSS-LL, RTTWP)", got)
	}
	x := resp.Find(ie.RecoveryTimeStamp)
	if x == nil {
		t.Fatal("no Recovery Time Stamp")
	}
	upfTS, _ := x.RecoveryTimeStamp()
	if st := r.n4Status(t); st.RecoveryTimeStamp == nil || !st.RecoveryTimeStamp.Time.Equal(upfTS) {
		t.Errorf("status.n4.recoveryTimeStamp %v, the endpoint sent %v", st.RecoveryTimeStamp, upfTS)
	}
	eventually(t, programTimeout, "the association in status.n4", func() error {
		st := r.n4Status(t)
		if len(st.Associations) != 1 || st.Associations[0].NodeID != "smf.test.example" || st.Associations[0].Address != r.smf.Addr().String() {
			return fmt.Errorf("associations %+v", st.Associations)
		}
		return nil
	})

	s := alice()
	s.QFI = 9                          // the default QoS flow's QER
	s.MBRUL, s.MBRDL = 20_000, 100_000 // and its MBR, the session AMBR (kbit/s)
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if est.UPSEID == 0 || est.UplinkTEID < 0x80000000 || est.N3 != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("UP F-SEID %#x, Created PDR F-TEID %#x on %s; want a SEID, a TEID the UPF chose (upper half) on its N3 address 192.0.2.1", est.UPSEID, est.UplinkTEID, est.N3)
	}
	if f, err := est.Resp.Find(ie.FSEID).FSEID(); err != nil || !f.IPv4Address.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("UP F-SEID %+v (%v), want the node ID's address 127.0.0.1", f, err)
	}
	if est.Resp.Header.SEID != est.CPSEID {
		t.Errorf("response SEID %#x, want the SMF's CP SEID %#x", est.Resp.Header.SEID, est.CPSEID)
	}
	if x := est.Resp.Find(ie.ATSSSControlParameters); x == nil {
		t.Error("no ATSSS Control Parameters for the Provide ATSSS Control Information (ATSSS-LL)")
	} else if kids, err := x.ATSSSControlParameters(); err != nil || len(kids) != 1 || kids[0].Type != ie.ATSSSLLParameters {
		t.Errorf("ATSSS Control Parameters %v (%v), want ATSSS-LL Parameters only", kids, err)
	}

	// The session as an object: what the rules say, and Programmed.
	obj := &r.awaitN4Sessions(t, 1)[0]
	sp := obj.Spec
	if sp.UE.SUPI != "imsi-001010000000077" || sp.SessionAddress != "10.60.0.7" || sp.UPFRef.Name != "upf" {
		t.Errorf("UE %+v, address %s, UPF %s", sp.UE, sp.SessionAddress, sp.UPFRef.Name)
	}
	want3 := junctionv1.ThreeGPPLeg{UEAddress: "10.45.0.7", GNBAddress: "198.51.100.10", UplinkTEID: int64(est.UplinkTEID), DownlinkTEID: 0x1234}
	if l := sp.AccessLegs.ThreeGPP; l == nil || *l != want3 {
		t.Errorf("3GPP leg %+v, want %+v", l, want3)
	}
	if l := sp.AccessLegs.NonThreeGPP; l == nil || l.UEAddress != "203.0.113.7" {
		t.Errorf("non-3GPP leg %+v, want the UE at 203.0.113.7", l)
	}
	if sp.QFI != 9 {
		t.Errorf("qfi %d, want 9, the QFI of the QER every downlink PDR names", sp.QFI)
	}
	if m := sp.MaxBitRate; m == nil || m.UplinkKbps == nil || *m.UplinkKbps != 20_000 || m.DownlinkKbps == nil || *m.DownlinkKbps != 100_000 {
		t.Errorf("maxBitRate %+v, want 20,000 kbit/s up and 100,000 down, the MBR of the QER every PDR names", m)
	}
	if sp.ModeOverride == nil || sp.ModeOverride.Mode != junctionv1.ModeSmallestDelay {
		t.Errorf("modeOverride %+v, want SmallestDelay (the MAR of the PDR without SDF filter)", sp.ModeOverride)
	}
	if len(sp.PolicySteering) != 1 || len(sp.PolicyRefs) != 1 || sp.PolicySteering[0].Name != sp.PolicyRefs[0].Name {
		t.Fatalf("policyRefs %+v, policySteering %+v; want the SDF filter's traffic class, steered by its MAR", sp.PolicyRefs, sp.PolicySteering)
	}
	ps := sp.PolicySteering[0]
	if ps.Steering.Mode != junctionv1.ModeLoadBalance || ps.Steering.LoadBalance == nil || ps.Steering.LoadBalance.ThreeGPPPercent == nil ||
		*ps.Steering.LoadBalance.ThreeGPPPercent != 70 || ps.Thresholds == nil || ps.Thresholds.PacketLossPercent == nil || *ps.Thresholds.PacketLossPercent != 5 {
		t.Errorf("policySteering %+v, want LoadBalance 70%% on 3GPP with a 5%% loss threshold", ps)
	}
	var pol junctionv1.SteeringPolicy
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: ps.Name}, &pol); err != nil {
		t.Fatal(err)
	}
	td := pol.Spec.TrafficDescriptor
	if pol.Spec.Precedence != 100 || td.Protocol != junctionv1.ProtocolUDP || len(td.DestinationPrefixes) != 1 || td.DestinationPrefixes[0] != "198.51.100.0/24" ||
		len(td.SourcePorts) != 1 || td.SourcePorts[0].From != 5000 || td.SourcePorts[0].To == nil || *td.SourcePorts[0].To != 5100 || len(td.SourcePrefixes) != 0 {
		t.Errorf("traffic class %+v, want UDP from 198.51.100.0/24 to the UE's ports 5000-5100 at precedence 100", pol.Spec)
	}
	waitCondition(t, programTimeout, obj, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	waitCondition(t, programTimeout, &pol, junctionv1.ConditionReady, metav1.ConditionTrue, "")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(&pol), &pol); err != nil {
		t.Fatal(err)
	}
	user, peer, seq, app := uint64(*obj.Status.UserIndex), uint64(*obj.Status.TunnelPeerIndex), uint64(*obj.Status.SequenceIndex), uint64(*pol.Status.ApplicationID)
	usage := uint64(*obj.Status.UsageIndex)

	// docs/pipeline.md: set_session(user_idx, endpoint_idx, peer_idx, teid, ue_addr_3gpp,
	// ue_addr_non3gpp, gateway_non3gpp (0: a plain leg), teid_non3gpp, usage_idx),
	// decap_gtpu(access 1 = 3GPP, usage_idx); override_steering modes 1
	// active-standby (access 2: non-3GPP), 2 smallest delay, 3 load balance (ratio_3gpp = round(70 * 128 / 100) = 90); loss_limit_pct = loss + 1;
	// set_application of a
	// traffic class: active-standby (1) on 3GPP (1), the default application's steering.
	sessionEntry := fmt.Sprintf("sessions session_addr=0a3c0007 -> set_session(endpoint_idx=00,gateway_non3gpp=00,peer_idx=%s,teid=1234,teid_non3gpp=00,ue_addr_3gpp=0a2d0007,ue_addr_non3gpp=cb007107,usage_idx=%s,user_idx=%s)", hx(peer, 2), hx(usage, 4), hx(user, 4))
	uplink := fmt.Sprintf("uplink_tunnels teid=%x -> decap_gtpu(access=01,usage_idx=%s)", est.UplinkTEID, hx(usage, 4))
	override := func(appID uint64, mode, ratio, loss, access uint8) string {
		return fmt.Sprintf("session_overrides app_id=%s session_addr=0a3c0007 -> override_steering(access=%s,loss_limit_pct=%s,mode=%s,ratio_3gpp=%s,rtt_threshold_us=00,seq_index=%s)",
			hx(appID, 2), hx(uint64(access), 1), hx(uint64(loss), 1), hx(uint64(mode), 1), hx(uint64(ratio), 1), hx(seq, 4))
	}
	application := fmt.Sprintf("applications local_port=1388..13ec proto=11&ff remote_addr=c6336400&ffffff00 prio=%d -> set_application(access=01,app_id=%s,loss_limit_pct=00,mode=01,ratio_3gpp=00,rtt_threshold_us=00)", 65535-100, hx(app, 2))
	// The QER's QFI marks the 3GPP leg's tunnel: tunnel_qfis (gNB, downlink TEID) -> set_qfi.
	qfiEntry := "tunnel_qfis peer_addr=c633640a teid=1234 -> set_qfi(qfi=09)"
	// The QER's MBR: mbr_sessions (the session address) -> police(its usage cell).
	mbrEntry := fmt.Sprintf("mbr_sessions ue_addr=0a3c0007 -> police(usage_idx=%s)", hx(usage, 4))
	wantEntries(t, r, sessionEntry, uplink, override(app, 3, 90, 6, 0), override(0, 2, 0, 0, 0), application, qfiEntry, mbrEntry)
	// The MBR polices at that cell (docs/pipeline.md, "MBR policer"): 20,000 kbit/s
	// is 2,500,000 bytes/s, with a bucket of 100 ms of it; 100,000 kbit/s is 12,500,000.
	for _, m := range []struct {
		name        string
		rate, burst int64
	}{{"uplink_mbr", 2_500_000, 250_000}, {"downlink_mbr", 12_500_000, 1_250_000}} {
		c, err := r.u.meter(r.sch, m.name, int64(usage))
		if err != nil {
			t.Fatal(err)
		}
		if c == nil || c.Cir != m.rate || c.Pir != m.rate || c.Cburst != m.burst || c.Pburst != m.burst {
			t.Errorf("%s[%d] = %v, want rates %d and bursts %d", m.name, usage, c, m.rate, m.burst)
		}
	}

	// Modification: the application's MAR becomes active-standby with non-3GPP active; the
	// thresholds the update does not carry stay (TS 29.244: an Update MAR changes what it has).
	mod, err := r.smf.Modify(ctx, est, r.smf.UpdateMAR(smf.MARDefault+1, smf.Steering{Mode: smf.ActiveStandby, Active: smf.NonThreeGPP}, true))
	if err != nil {
		t.Fatal(err)
	}
	if c := mod.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("Session Modification: cause %d (%s), want 1", c, why(mod))
	}
	wantEntries(t, r, sessionEntry, uplink, override(app, 1, 0, 6, 2), override(0, 2, 0, 0, 0), application)

	// A retransmission (same sequence number) is answered from the cache, not applied again:
	// applied twice, its Create FAR would be refused (FAR 9 exists).
	seq9 := r.smf.NextSeq()
	req, err := message.NewSessionModificationRequest(0, 0, est.UPSEID, seq9, 0,
		ie.NewCreateFAR(ie.NewFARID(9), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore)))).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.smf.SendRaw(ctx, seq9, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.smf.SendRaw(ctx, seq9, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cause() != ie.CauseRequestAccepted || string(again.Raw) != string(first.Raw) {
		t.Errorf("retransmission: first cause %d, second response differs: %v", first.Cause(), string(again.Raw) != string(first.Raw))
	}

	// BARs (docs/n4.md): accepted, checked, and nothing else, since Junction buffers nothing; as
	// Open5GS does, one comes with a Create BAR and the downlink FARs name it.
	bar := func(id uint8) *ie.IE {
		return ie.NewCreateBAR(ie.NewBARID(id), ie.NewDownlinkDataNotificationDelay(50*time.Millisecond), ie.NewSuggestedBufferingPacketsCount(10))
	}
	for _, step := range []struct {
		name  string
		ies   []*ie.IE
		cause uint8
		why   string
	}{
		{"a Create BAR", []*ie.IE{bar(1)}, 1, ""},
		{"a second BAR", []*ie.IE{bar(2)}, 73, "failed rule type 4 id 02"},
		{"a FAR that names the BAR", []*ie.IE{ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewBARID(1))}, 1, ""},
		{"a FAR that names a BAR the session does not have", []*ie.IE{ie.NewUpdateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewBARID(7))}, 73, "failed rule type 1 id 00000002"},
		{"an Update BAR", []*ie.IE{ie.NewUpdateBARWithinSessionModificationRequest(ie.NewBARID(1), ie.NewSuggestedBufferingPacketsCount(20))}, 1, ""},
		{"an Update BAR of a BAR the session does not have", []*ie.IE{ie.NewUpdateBARWithinSessionModificationRequest(ie.NewBARID(3))}, 73, "failed rule type 4 id 03"},
		{"a BAR with an IE it cannot carry", []*ie.IE{ie.NewUpdateBARWithinSessionModificationRequest(ie.NewBARID(1), ie.NewQFI(9))}, 76, "offending IE 124"},
		{"a Remove BAR while a FAR names it", []*ie.IE{ie.NewRemoveBAR(ie.NewBARID(1))}, 73, "failed rule type 1 id 00000002"},
	} {
		m, err := r.smf.Modify(ctx, est, step.ies...)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if m.Cause() != step.cause || why(m) != step.why && step.why != "" {
			t.Errorf("%s: cause %d (%s), want %d (%s)", step.name, m.Cause(), why(m), step.cause, step.why)
		}
	}

	del, err := r.smf.Delete(ctx, est)
	if err != nil {
		t.Fatal(err)
	}
	if c := del.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("Session Deletion: cause %d, want 1", c)
	}
	r.awaitN4Sessions(t, 0)
	eventually(t, programTimeout, "no session entries after the deletion", func() error {
		got, err := r.u.entries(r.sch)
		if err != nil {
			return err
		}
		for _, e := range got {
			if strings.HasPrefix(e, "sessions ") || strings.HasPrefix(e, "session_overrides ") || strings.HasPrefix(e, "uplink_tunnels ") {
				return fmt.Errorf("left on the UPF: %s", e)
			}
		}
		return nil
	})
	if d, err := r.smf.Delete(ctx, est); err != nil || d.Cause() != CauseSessionContextNotFound || d.Header.SEID != 0 {
		t.Errorf("deleting it again: %v, cause %d, SEID %#x; want cause 65 with SEID 0", err, d.Cause(), d.Header.SEID)
	}

	rel, err := r.smf.Release(ctx)
	if err != nil || rel.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("Association Release: %v, cause %v", err, rel)
	}
	eventually(t, programTimeout, "no association in status.n4", func() error {
		if st := r.n4Status(t); len(st.Associations) != 0 {
			return fmt.Errorf("associations %+v", st.Associations)
		}
		return nil
	})
}

// delete deletes an established session over N4 and fails unless the UPF accepts.
func (r *n4Rig) delete(t *testing.T, est *smf.Established) {
	t.Helper()
	resp, err := r.smf.Delete(context.Background(), est)
	if err != nil {
		t.Fatalf("deleting session %#x: %v", est.UPSEID, err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("deleting session %#x: cause %d (%s), want %d", est.UPSEID, c, why(resp), ie.CauseRequestAccepted)
	}
}

// why names the Offending IE or Failed Rule ID of a refusal.
func why(r *smf.Response) string {
	var out []string
	if x := r.Find(ie.OffendingIE); x != nil {
		v, _ := x.OffendingIE()
		out = append(out, fmt.Sprintf("offending IE %d", v))
	}
	if x := r.Find(ie.FailedRuleID); x != nil && len(x.Payload) > 0 {
		out = append(out, fmt.Sprintf("failed rule type %d id %x", x.Payload[0]&0x0f, x.Payload[1:]))
	}
	return strings.Join(out, ", ")
}

// CauseSessionContextNotFound is TS 29.244's cause 65.
const CauseSessionContextNotFound = 65

// wantEntries waits until the UPF holds each of want (among its other entries).
func wantEntries(t testing.TB, r n4Rig, want ...string) {
	t.Helper()
	eventually(t, programTimeout, "the N4 session's entries", func() error {
		got, err := r.u.entries(r.sch)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, e := range got {
			have[e] = true
		}
		var missing []string
		for _, w := range want {
			if !have[w] {
				missing = append(missing, w)
			}
		}
		if len(missing) > 0 {
			var ours []string
			for _, e := range got {
				if strings.HasPrefix(e, "session") || strings.HasPrefix(e, "uplink") || strings.HasPrefix(e, "applications") {
					ours = append(ours, e)
				}
			}
			return fmt.Errorf("missing:\n  %s\nthe UPF has:\n  %s", strings.Join(missing, "\n  "), strings.Join(ours, "\n  "))
		}
		return nil
	})
}

// ies edits a request's IEs: drop removes the IEs of a type (and, inside grouped IEs, the
// first grouped IE whose child matches keep==false), with adds appended.
type iesEdit func([]*ie.IE) []*ie.IE

func without(t uint16) iesEdit {
	return func(in []*ie.IE) []*ie.IE {
		var out []*ie.IE
		for _, x := range in {
			if x.Type != t {
				out = append(out, x)
			}
		}
		return out
	}
}

// replacing swaps the grouped IE of type t that has a child of type id with value v for with.
func replacing(t, idType uint16, idValue []byte, with *ie.IE) iesEdit {
	return func(in []*ie.IE) []*ie.IE {
		out := append([]*ie.IE(nil), in...)
		for i, x := range out {
			if x.Type != t {
				continue
			}
			for _, c := range x.ChildIEs {
				if c.Type == idType && string(c.Payload) == string(idValue) {
					out[i] = with
					return out
				}
			}
		}
		return out
	}
}

func adding(xs ...*ie.IE) iesEdit {
	return func(in []*ie.IE) []*ie.IE { return append(append([]*ie.IE(nil), in...), xs...) }
}

func u16b(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32b(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// TestN4RefusesWhatItCannotApply: each request breaks one rule of TS 29.244 or asks for what
// Junction does not enforce, and gets the cause TS 29.244 defines with the Offending IE or the
// Failed Rule ID (§7.5.3, §8.2.80); no object of a refused session remains (all of a request's
// rules or none).
func TestN4RefusesWhatItCannotApply(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	s := alice()

	// Before the association: No established PFCP Association (72).
	if e, err := r.smf.Establish(ctx, s); err == nil || e.Resp.Cause() != 72 {
		t.Errorf("establishment before the association: %v, want cause 72", err)
	}
	r.associate(t)

	afai := func(far uint32, more ...*ie.IE) []*ie.IE { return append([]*ie.IE{ie.NewFARID(far)}, more...) }
	defaultPDR := func(mar uint16) *ie.IE {
		return ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(
			ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(mar))
	}
	for _, tc := range []struct {
		name   string
		edit   iesEdit
		cause  uint8
		why    string // what why() reports
		mangle func([]byte) []byte
	}{
		{"a request without the CP F-SEID", without(ie.FSEID), 66, "offending IE 57", nil},
		{"a PDR naming a MAR the session does not have", replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink), defaultPDR(9)),
			73, "failed rule type 0 id 000a", nil},
		{"two PDRs with one ID", adding(defaultPDR(smf.MARDefault)), 73, "failed rule type 0 id 000a", nil},
		{"a MAR's FAR toward Core (buffering or not: an inactive access still faces Access)", replacing(ie.CreateFAR, ie.FARID, u32b(smf.FAR3GPP),
			ie.NewCreateFAR(ie.NewFARID(smf.FAR3GPP), ie.NewApplyAction(0x0c), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore)))),
			73, "failed rule type 1 id 00000002", nil},
		{"a FAR that notifies without buffering (NOCP alone)", adding(ie.NewCreateFAR(ie.NewFARID(40), ie.NewApplyAction(0x08))), 76, "offending IE 44", nil},
		{"a FAR that buffers and forwards", adding(ie.NewCreateFAR(ie.NewFARID(40), ie.NewApplyAction(0x06))), 69, "offending IE 44", nil},
		{"a FAR that duplicates", adding(ie.NewCreateFAR(ie.NewFARID(40), ie.NewApplyAction(0x12))), 76, "offending IE 44", nil},
		{"a GBR for the session's default QoS flow (a QoS flow of its own may be GBR, TS 23.501 §5.7.2.6)", func(in []*ie.IE) []*ie.IE {
			return adding(ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewGBR(60000, 60000)))(replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
				ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
					ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(smf.MARDefault), ie.NewQERID(1)))(in))
		}, 76, "offending IE 27", nil},
		{"a GBR of 9 octets", adding(ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.New(ie.GBR, make([]byte, 9)))),
			69, "offending IE 27", nil},
		{"an MBR of 9 octets", adding(ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.New(ie.MBR, make([]byte, 9)))),
			69, "offending IE 26", nil},
		{"an MBR for one downlink PDR and none for another (one rate a session and direction)", func(in []*ie.IE) []*ie.IE {
			return adding(ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewMBR(1000, 1000)))(replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
				ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
					ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(smf.MARDefault), ie.NewQERID(1)))(in))
		}, 73, "failed rule type 0 id 000b", nil},
		{"a PDR from the CP function into the uplink FAR (not Open5GS's router advertisement pair)", adding(ie.NewCreatePDR(ie.NewPDRID(30), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCPFunction), ie.NewFTEID(0x05, 0, nil, nil, 0)), ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(smf.FARCore))),
			73, "failed rule type 0 id 001e", nil},
		{"a PDR that sends IPv4 traffic to the CP function", adding(
			ie.NewCreateFAR(ie.NewFARID(40), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCPFunction))),
			ie.NewCreatePDR(ie.NewPDRID(31), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess), ie.NewFTEID(0x05, 0, nil, nil, 0),
				ie.NewSDFFilter("permit out 17 from 198.51.100.1 to assigned 67", "", "", "", 0)), ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(40))),
			73, "failed rule type 0 id 001f", nil},
		{"a QFI in a downlink PDR's PDI (packets from the data network carry none)", replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
			ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0), ie.NewQFI(9)), ie.NewMARID(smf.MARDefault))),
			76, "offending IE 124", nil},
		{"two uplink PDRs in different QoS flows (one flow a session)", func(in []*ie.IE) []*ie.IE {
			return replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRUplink3GPP),
				ie.NewCreatePDR(ie.NewPDRID(smf.PDRUplink3GPP), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess),
					ie.NewFTEID(0x05, 0, nil, nil, 0), ie.NewUEIPAddress(0x02, "10.45.0.7", "", 0, 0), ie.NewTGPPInterfaceType(11), ie.NewQFI(5)),
					ie.NewOuterHeaderRemoval(0, 0), ie.NewFARID(smf.FARCore)))(replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRUplinkNon3GPP),
				ie.NewCreatePDR(ie.NewPDRID(smf.PDRUplinkNon3GPP), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess),
					ie.NewUEIPAddress(0x02, "203.0.113.7", "", 0, 0), ie.NewTGPPInterfaceType(13), ie.NewQFI(6)),
					ie.NewOuterHeaderRemoval(2, 0), ie.NewFARID(smf.FARCore)))(in))
		}, 73, fmt.Sprintf("failed rule type 0 id %04x", smf.PDRUplinkNon3GPP), nil},
		{"a QER with QFI 0 (0 marks nothing)", adding(ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewQFI(0))),
			69, "offending IE 124", nil},
		{"a QFI for one downlink PDR and none for another (one QFI a session)", func(in []*ie.IE) []*ie.IE {
			return adding(ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(0, 0), ie.NewQFI(9)))(replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
				ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
					ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(smf.MARDefault), ie.NewQERID(1)))(in))
		}, 73, "failed rule type 0 id 000b", nil},
		{"a URR measuring events", adding(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(1, 0, 0), ie.NewReportingTriggers(0, 0))),
			76, "offending IE 62", nil},
		{"QUVTI without a Quota Validity Time", adding(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0),
			ie.NewReportingTriggers(0, 0x81), ie.NewVolumeQuota(0x01, 1e6, 0, 0))), 67, "offending IE 181", nil},
		{"VOLQU without a Volume Quota", adding(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0x01))),
			67, "offending IE 73", nil},
		{"a URR measuring while inactive (INAM: Measurement Information other than MNOP and ISTM)", adding(ie.NewCreateURR(ie.NewURRID(1),
			ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0), ie.NewMeasurementInformation(0x04|0x10))), 76, "offending IE 100", nil},
		{"a URR reporting dropped downlink traffic (DROTH: a threshold the buffer does not count)", adding(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0),
			ie.NewReportingTriggers(0x40, 0))), 76, "offending IE 37", nil},
		{"periodic reporting without a Measurement Period", adding(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0x01, 0))),
			67, "offending IE 64", nil},
		{"a PDR naming a URR the session does not have", replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
			ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(smf.MARDefault), ie.NewURRID(5))),
			73, "failed rule type 0 id 000a", nil},
		{"a PDR naming a QER the session does not have, and a URR (which reads the PDRs' QoS flows)", func(in []*ie.IE) []*ie.IE {
			return adding(ie.NewCreateURR(ie.NewURRID(5), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0)))(
				replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
					ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
						ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(smf.MARDefault), ie.NewURRID(5), ie.NewQERID(9)))(in))
		}, 73, "failed rule type 0 id 000a", nil},
		{"a URR one of two downlink PDRs names (a session's direction is measured whole)", func(in []*ie.IE) []*ie.IE {
			return adding(ie.NewCreateURR(ie.NewURRID(1), ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0)))(replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
				ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
					ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(smf.MARDefault), ie.NewURRID(1)))(in))
		}, 73, "failed rule type 3 id 00000001", nil},
		{"the MPTCP steering functionality", replacing(ie.CreateMAR, ie.MARID, u16b(smf.MARDefault), ie.NewCreateMAR(ie.NewMARID(smf.MARDefault),
			ie.NewSteeringFunctionality(1), ie.NewSteeringMode(smf.SmallestDelay),
			ie.NewTGPPAccessForwardingActionInformation(afai(smf.FAR3GPP)...), ie.NewNonTGPPAccessForwardingActionInformation(afai(smf.FARNon3GPP)...))),
			73, "failed rule type 5 id 0001", nil},
		{"load-balancing weights that do not add up to 100", replacing(ie.CreateMAR, ie.MARID, u16b(smf.MARDefault), ie.NewCreateMAR(ie.NewMARID(smf.MARDefault),
			ie.NewSteeringFunctionality(0), ie.NewSteeringMode(smf.LoadBalancing),
			ie.NewTGPPAccessForwardingActionInformation(afai(smf.FAR3GPP, ie.NewWeight(70))...),
			ie.NewNonTGPPAccessForwardingActionInformation(afai(smf.FARNon3GPP, ie.NewWeight(20))...))),
			69, "offending IE 173", nil},
		{"priority-based without an RTT threshold", replacing(ie.CreateMAR, ie.MARID, u16b(smf.MARDefault), ie.NewCreateMAR(ie.NewMARID(smf.MARDefault),
			ie.NewSteeringFunctionality(0), ie.NewSteeringMode(smf.PriorityBased),
			ie.NewTGPPAccessForwardingActionInformation(afai(smf.FAR3GPP, ie.NewPriority(ie.PriorityHigh))...),
			ie.NewNonTGPPAccessForwardingActionInformation(afai(smf.FARNon3GPP, ie.NewPriority(ie.PriorityLow))...))),
			67, "offending IE 288", nil},
		{"thresholds on smallest delay, which reads none", replacing(ie.CreateMAR, ie.MARID, u16b(smf.MARDefault),
			r.smf.CreateMAR(smf.MARDefault, smf.Steering{Mode: smf.SmallestDelay, RTTms: 30}, true)),
			73, "failed rule type 5 id 0001", nil},
		{"the PMF", func(in []*ie.IE) []*ie.IE {
			return adding(ie.NewProvideATSSSControlInformation(ie.New(ie.PMFControlInformation, []byte{1})))(without(ie.ProvideATSSSControlInformation)(in))
		}, 76, "offending IE 224", nil},
		{"an Application ID no SteeringPolicy has", replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink+1),
			ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink+1), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0), ie.NewApplicationID("no-such-app")), ie.NewMARID(smf.MARDefault+1))),
			81, "offending IE 24", nil},
		{"an SDF filter with options", replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink+1),
			ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink+1), ie.NewPrecedence(100), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0), ie.NewSDFFilter("permit out 6 from any to assigned established", "", "", "", 0)), ie.NewMARID(smf.MARDefault+1))),
			69, "offending IE 23", nil},
		{"an MA PDU session with one downlink PDR that has a FAR and no MAR", replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
			ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewFARID(smf.FAR3GPP))),
			73, "failed rule type 0 id 000a", nil},
		{"a non-3GPP FAR over GTP-U whose uplink PDR removes plain UDP/IPv4 (a leg is over N3 both ways or neither)", replacing(ie.CreateFAR, ie.FARID, u32b(smf.FARNon3GPP),
			ie.NewCreateFAR(ie.NewFARID(smf.FARNon3GPP), ie.NewApplyAction(0x02), ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess),
				ie.NewOuterHeaderCreation(0x0100, 7, "198.51.100.20", "", 0, 0, 0), ie.NewTGPPInterfaceType(13)))),
			73, "failed rule type 0 id 0002", nil},
		{"an IE type TS 29.244 does not define, inside a Create PDR", replacing(ie.CreatePDR, ie.PDRID, u16b(smf.PDRDownlink),
			ie.NewCreatePDR(ie.NewPDRID(smf.PDRDownlink), ie.NewPrecedence(65000), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore),
				ie.NewUEIPAddress(0x06, "10.60.0.7", "", 0, 0)), ie.NewMARID(smf.MARDefault), ie.New(999, []byte{1}))),
			76, "offending IE 999", nil},
		{"an IE whose length runs past the message", nil, 68, "offending IE 57", func(b []byte) []byte {
			// A trailing F-SEID header that claims 32 octets, none of which follow.
			b = append(b, 0x00, 0x39, 0x00, 0x20)
			binary.BigEndian.PutUint16(b[2:4], binary.BigEndian.Uint16(b[2:4])+4)
			return b
		}},
		{"a datagram shorter than its length field", nil, 68, "", func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[2:4], binary.BigEndian.Uint16(b[2:4])+8)
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ies := r.smf.EstablishmentIEs(s, r.smf.NewCPSEID())
			if tc.edit != nil {
				ies = tc.edit(ies)
			}
			seq := r.smf.NextSeq()
			b, err := message.NewSessionEstablishmentRequest(0, 0, 0, seq, 0, ies...).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if tc.mangle != nil {
				b = tc.mangle(b)
			}
			resp, err := r.smf.SendRaw(ctx, seq, b)
			if err != nil {
				t.Fatal(err)
			}
			if c, w := resp.Cause(), why(resp); c != tc.cause || w != tc.why {
				t.Errorf("cause %d (%s), want %d (%s)", c, w, tc.cause, tc.why)
			}
			if resp.Find(ie.NodeID) == nil {
				t.Error("the Establishment Response has no Node ID (mandatory, TS 29.244 §7.5.3)")
			}
			r.awaitN4Sessions(t, 0) // none was written for the refused establishment, or it went
		})
	}

	// A session address a manifest session holds: the N4 session is the later one and is refused.
	manifest := session(r.ns, "manifest", "imsi-001010000000099", "10.60.0.99", "upf", "n", "")
	create(t, manifest)
	waitCondition(t, programTimeout, manifest, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	taken := s
	taken.UEAddr = netip.MustParseAddr("10.60.0.99")
	if e, err := r.smf.Establish(ctx, taken); err == nil || e.Resp.Cause() != 69 || why(e.Resp) != "offending IE 93" {
		t.Errorf("a session address a manifest session holds: %v (%s), want cause 69 with offending IE 93 (UE IP Address)", err, why(e.Resp))
	}
	r.awaitN4Sessions(t, 0)
	waitCondition(t, programTimeout, manifest, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")

	// A modification is all or nothing: a valid Update MAR with a Create PDR naming a FAR the
	// session lacks changes nothing.
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	before := r.awaitN4Sessions(t, 1)[0]
	mod, err := r.smf.Modify(ctx, est,
		r.smf.UpdateMAR(smf.MARDefault, smf.Steering{Mode: smf.Redundant}, true),
		ie.NewCreatePDR(ie.NewPDRID(30), ie.NewPrecedence(10), ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess)), ie.NewFARID(77)))
	if err != nil {
		t.Fatal(err)
	}
	if c, w := mod.Cause(), why(mod); c != 73 || w != "failed rule type 0 id 001e" {
		t.Errorf("modification naming a missing FAR: cause %d (%s), want 73 (failed rule type 0 id 001e)", c, w)
	}
	after := r.n4Sessions(t)[0]
	if after.Generation != before.Generation || after.Spec.ModeOverride.Mode != junctionv1.ModeSmallestDelay {
		t.Errorf("a refused modification changed the session: generation %d -> %d, default mode %s", before.Generation, after.Generation, after.Spec.ModeOverride.Mode)
	}
	// A modification of a SEID the UPF does not know: cause 65, SEID 0 in the response.
	ghost := *est
	ghost.UPSEID ^= 0xffff
	if resp, err := r.smf.Modify(ctx, &ghost); err != nil || resp.Cause() != CauseSessionContextNotFound || resp.Header.SEID != 0 {
		t.Errorf("unknown SEID: %v, cause %d, SEID %#x; want 65 and 0", err, resp.Cause(), resp.Header.SEID)
	}
}

// wagfRig is an associated N4 rig whose UPF lists the W-AGF 198.51.100.20 in spec.n4.accessGateways.
func wagfRig(t *testing.T) n4Rig {
	r := newN4Rig(t, func(n *junctionv1.N4) {
		n.AccessGateways = []junctionv1.N4AccessGateway{{Address: "198.51.100.20", Type: junctionv1.NonThreeGPPWireline}}
	}, nil)
	r.associate(t)
	return r
}

// TestN4NonThreeGPPLegOverN3: an SMF sets the non-3GPP leg up through an access gateway (TS
// 29.244 §5.24: a FAR creating GTP-U toward the W-AGF, an uplink PDR with an F-TEID from N3
// trusted non-3GPP access, CHOOSE); the UPF picks a second TEID, the object names the gateway
// and the TEIDs, and the entries are those of docs/pipeline.md "The non-3GPP leg over N3". The
// leg's type is what spec.n4.accessGateways says of its gateway (Wireline for the W-AGF), WiFi
// through a gateway it does not list.
func TestN4NonThreeGPPLegOverN3(t *testing.T) {
	ctx := context.Background()
	r := wagfRig(t)
	s := alice()
	s.Gateway, s.Non3GPPDownlinkTEID = netip.MustParseAddr("198.51.100.20"), 0x5678
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if est.UplinkTEIDNon3GPP == 0 || est.UplinkTEIDNon3GPP == est.UplinkTEID {
		t.Fatalf("uplink TEIDs: 3GPP %#x, non-3GPP %#x; want two the UPF chose", est.UplinkTEID, est.UplinkTEIDNon3GPP)
	}
	obj := &r.awaitN4Sessions(t, 1)[0]
	want := junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWireline, UEAddress: "203.0.113.7", GatewayAddress: "198.51.100.20",
		UplinkTEID: int64(est.UplinkTEIDNon3GPP), DownlinkTEID: 0x5678}
	if l := obj.Spec.AccessLegs.NonThreeGPP; l == nil || *l != want {
		t.Errorf("non-3GPP leg %+v, want %+v", l, want)
	}
	other := alice()
	other.IMSI, other.UEAddr, other.UE3GPP, other.UENon3GPP = "001010000000078", netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("10.45.0.8"), netip.MustParseAddr("203.0.113.8")
	other.DownlinkTEID, other.Gateway, other.Non3GPPDownlinkTEID = 0x1235, netip.MustParseAddr("198.51.100.21"), 0x5679
	otherEst, err := r.smf.Establish(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range r.awaitN4Sessions(t, 2) {
		if l := o.Spec.AccessLegs.NonThreeGPP; o.Spec.SessionAddress == "10.60.0.8" && (l == nil || l.Type != junctionv1.NonThreeGPPWiFi) {
			t.Errorf("the leg through 198.51.100.21, which spec.n4.accessGateways does not list: %+v, want type WiFi", l)
		}
	}
	r.delete(t, otherEst)
	r.awaitN4Sessions(t, 1)
	waitCondition(t, programTimeout, obj, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	// set_session(..., gateway_non3gpp, teid_non3gpp, ...); decap_gtpu(access: 1 3GPP, 2 non-3GPP).
	user, peer, usage := uint64(*obj.Status.UserIndex), uint64(*obj.Status.TunnelPeerIndex), uint64(*obj.Status.UsageIndex)
	wantEntries(t, r,
		fmt.Sprintf("sessions session_addr=0a3c0007 -> set_session(endpoint_idx=00,gateway_non3gpp=c6336414,peer_idx=%s,teid=1234,teid_non3gpp=5678,ue_addr_3gpp=0a2d0007,ue_addr_non3gpp=cb007107,usage_idx=%s,user_idx=%s)",
			hx(peer, 2), hx(usage, 4), hx(user, 4)),
		fmt.Sprintf("uplink_tunnels teid=%x -> decap_gtpu(access=01,usage_idx=%s)", est.UplinkTEID, hx(usage, 4)),
		fmt.Sprintf("uplink_tunnels teid=%x -> decap_gtpu(access=02,usage_idx=%s)", est.UplinkTEIDNon3GPP, hx(usage, 4)))

	// Deleted: both TEIDs go with the session.
	r.delete(t, est)
	eventually(t, programTimeout, "no uplink TEIDs left", func() error {
		got, err := r.u.entries(r.sch)
		if err != nil {
			return err
		}
		var left []string
		for _, e := range got {
			if strings.HasPrefix(e, "uplink_tunnels ") || strings.HasPrefix(e, "sessions ") {
				left = append(left, e)
			}
		}
		if len(left) > 0 { // alice's TEIDs are est's; the other session's, otherEst's
			return fmt.Errorf("entries left (alice's uplink TEIDs %#x, %#x; the other's %#x, %#x):\n  %s", est.UplinkTEID, est.UplinkTEIDNon3GPP,
				otherEst.UplinkTEID, otherEst.UplinkTEIDNon3GPP, strings.Join(left, "\n  "))
		}
		return nil
	})
}

// TestN4AddsTheNon3GPPLegByModification: an MA PDU session established over 3GPP alone gets
// its non-3GPP leg later (the UE registered over a W-AGF, TS 23.502 §4.22.7): a Session
// Modification creates the leg's FAR and an uplink PDR whose F-TEID has CH, and gives each MAR
// the non-3GPP Forwarding Action Information. The UPF chooses that PDR a TEID of its own, says
// so in a Created PDR (TS 29.244 §7.5.5.2), and the session's entries carry both legs.
func TestN4AddsTheNon3GPPLegByModification(t *testing.T) {
	ctx := context.Background()
	r := wagfRig(t)
	s := alice()
	// One access: no load balancing yet (docs/n4.md).
	s.UENon3GPP, s.Default, s.Apps[0].Steering = netip.Addr{}, smf.Steering{Mode: smf.ActiveStandby, Active: smf.ThreeGPP}, smf.Steering{Mode: smf.SmallestDelay}
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if est.UplinkTEIDNon3GPP != 0 {
		t.Fatalf("a session without a non-3GPP leg got a non-3GPP uplink TEID %#x", est.UplinkTEIDNon3GPP)
	}
	obj := &r.awaitN4Sessions(t, 1)[0]
	if l := obj.Spec.AccessLegs.NonThreeGPP; l != nil {
		t.Fatalf("non-3GPP leg %+v before the modification, want none", l)
	}

	s.UENon3GPP, s.Gateway, s.Non3GPPDownlinkTEID = netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("198.51.100.20"), 0x5678
	resp, err := r.smf.Modify(ctx, est, r.smf.AddNon3GPPLegIEs(s)...)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Cause(); c != ie.CauseRequestAccepted {
		t.Fatalf("Session Modification Response: cause %d, want 1 (Request accepted)", c)
	}
	var teid uint32
	for _, x := range resp.IEs {
		if x.Type != ie.CreatedPDR {
			continue
		}
		id, err := x.PDRID()
		if err != nil || id != smf.PDRUplinkNon3GPP {
			t.Errorf("Created PDR for PDR %d (%v), want only the new PDR %d", id, err, smf.PDRUplinkNon3GPP)
			continue
		}
		f, err := x.FTEID()
		if err != nil {
			t.Fatalf("Created PDR %d: F-TEID: %v", id, err)
		}
		teid = f.TEID
	}
	if teid == 0 || teid == est.UplinkTEID {
		t.Fatalf("the new uplink PDR's TEID %#x (3GPP leg's %#x): want a Created PDR with a TEID of its own", teid, est.UplinkTEID)
	}
	want := junctionv1.NonThreeGPPLeg{Type: junctionv1.NonThreeGPPWireline, UEAddress: "203.0.113.7", GatewayAddress: "198.51.100.20",
		UplinkTEID: int64(teid), DownlinkTEID: 0x5678}
	eventually(t, programTimeout, "the session's object with its non-3GPP leg", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		if l := obj.Spec.AccessLegs.NonThreeGPP; l == nil || *l != want {
			return fmt.Errorf("non-3GPP leg %+v, want %+v", l, want)
		}
		return nil
	})
	waitCondition(t, programTimeout, obj, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	usage := uint64(*obj.Status.UsageIndex)
	wantEntries(t, r,
		fmt.Sprintf("uplink_tunnels teid=%x -> decap_gtpu(access=01,usage_idx=%s)", est.UplinkTEID, hx(usage, 4)),
		fmt.Sprintf("uplink_tunnels teid=%x -> decap_gtpu(access=02,usage_idx=%s)", teid, hx(usage, 4)))
}

// TestN4TakesOnlyTheAllowedSMFs: with spec.n4.allowedSMFs set, an Association Setup from an
// address outside them is refused with cause 64 (Request rejected) and a Warning event says so
// (PFCP authenticates no peer: docs/threat-model.md); the SMF's address allowed, it associates.
func TestN4TakesOnlyTheAllowedSMFs(t *testing.T) {
	r := newN4Rig(t, func(n *junctionv1.N4) { n.AllowedSMFs = []junctionv1.IPv4Prefix{"192.0.2.0/24"} }, nil)
	resp, err := r.smf.Associate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Cause(); c != 64 {
		t.Fatalf("Association Setup from 127.0.0.1, allowed 192.0.2.0/24: cause %d, want 64", c)
	}
	eventually(t, programTimeout, "the SMFRefused event", func() error { return findEvent(r.ns, "upf", "Warning", "SMFRefused") })
	if st := r.n4Status(t); len(st.Associations) != 0 {
		t.Errorf("associations %+v after the refusal, want none", st.Associations)
	}

	u := &junctionv1.UserPlaneFunction{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(r.upf), u); err != nil {
		t.Fatal(err)
	}
	u.Spec.N4.AllowedSMFs = append(u.Spec.N4.AllowedSMFs, "127.0.0.0/8")
	if err := k8s.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	eventually(t, programTimeout, "an association once 127.0.0.0/8 is allowed", func() error {
		resp, err := r.smf.Associate(context.Background())
		if err != nil {
			return err
		}
		if c := resp.Cause(); c != ie.CauseRequestAccepted {
			return fmt.Errorf("cause %d", c)
		}
		return nil
	})
}

// TestN4RefusesAddressesNoPoolGrants: the endpoint checks an N4 session's addresses as the
// controller checks a manifest's (docs/address-pools.md), before anything reaches the UPF: a UE
// address no AddressPool grants the UPF's namespace is refused with cause 69 (Mandatory IE
// incorrect), the Offending IE the UE IP Address (93).
func TestN4RefusesAddressesNoPoolGrants(t *testing.T) {
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	s := alice()
	s.UENon3GPP = netip.MustParseAddr("198.18.7.7") // outside testPool's UE addresses
	est, err := r.smf.Establish(context.Background(), s)
	if err == nil || est.Resp.Cause() != 69 || why(est.Resp) != "offending IE 93" {
		t.Fatalf("establishment with an address no pool grants: %v (%s), want cause 69, offending IE 93", err, why(est.Resp))
	}
	got, err := r.u.entries(r.sch)
	if err != nil {
		t.Fatal(err)
	}
	if n := countTable(got, "sessions") + countTable(got, "uplink_tunnels"); n != 0 {
		t.Errorf("%d sessions and uplink_tunnels entries after the refusal, want none", n)
	}
	if n := len(r.n4Sessions(t)); n != 0 {
		t.Errorf("%d N4 session objects after the refusal, want none", n)
	}
}

// TestN4RefusesSessionsBeyondTheTables: a session the sessions table cannot hold is refused
// with No resources available (75), and its objects are gone.
func TestN4RefusesSessionsBeyondTheTables(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, tableSize("sessions", 1))
	r.associate(t)
	if _, err := r.smf.Establish(ctx, alice()); err != nil {
		t.Fatal(err)
	}
	bob := alice()
	bob.IMSI, bob.UEAddr, bob.UE3GPP, bob.UENon3GPP = "001010000000078", netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("10.45.0.8"), netip.MustParseAddr("203.0.113.8")
	e, err := r.smf.Establish(ctx, bob)
	if err == nil || e.Resp.Cause() != 75 {
		t.Fatalf("a second session on a one-entry table: %v, want cause 75", err)
	}
	r.awaitN4Sessions(t, 1) // alice's only
}

// TestN4SessionsSurviveAnOperatorRestart: the operator stops and a new one starts (as after a
// leader change); the endpoint comes back with the same Recovery Time Stamp, so the SMF sees no
// restart, and the session's SEID still works for a modification and a deletion.
func TestN4SessionsSurviveAnOperatorRestart(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, func(n *junctionv1.N4) { n.HeartbeatInterval = "300ms" }, nil)
	ts0 := r.associate(t)
	est, err := r.smf.Establish(ctx, alice())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, programTimeout, "the UPF's heartbeats reaching the SMF", func() error {
		if n := r.smf.HeartbeatsAnswered(); n == 0 {
			return fmt.Errorf("no Heartbeat Request from the UPF yet")
		}
		return nil
	})

	r.op.stop()
	r.op = startOperator(t, r.ns, operatorOptions{})
	eventually(t, programTimeout, "the restarted endpoint answering heartbeats with the first recovery time stamp", func() error {
		hb, err := r.smf.Heartbeat(ctx)
		if err != nil {
			return err
		}
		ts, err := hb.Find(ie.RecoveryTimeStamp).RecoveryTimeStamp()
		if err != nil || !ts.Equal(ts0) {
			return fmt.Errorf("recovery time stamp %v (%v), want %v", ts, err, ts0)
		}
		return nil
	})
	mod, err := r.smf.Modify(ctx, est, r.smf.UpdateMAR(smf.MARDefault, smf.Steering{Mode: smf.ActiveStandby, Active: smf.NonThreeGPP}, true))
	if err != nil || mod.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("modification after the restart: %v, cause %d (%s)", err, mod.Cause(), why(mod))
	}
	eventually(t, programTimeout, "the modified session's object on ActiveStandby", func() error {
		if s := r.n4Sessions(t); len(s) != 1 || s[0].Spec.ModeOverride.Mode != junctionv1.ModeActiveStandby {
			return fmt.Errorf("%d sessions, the first %+v", len(s), s)
		}
		return nil
	})
	if st := r.n4Status(t); len(st.Associations) != 1 || st.Sessions != 1 {
		t.Errorf("status.n4 after the restart: %+v, want the association and 1 session", st)
	}
	if del, err := r.smf.Delete(ctx, est); err != nil || del.Cause() != ie.CauseRequestAccepted {
		t.Fatalf("deletion after the restart: %v", err)
	}
}

// TestN4ReportsTheUserPlaneLostAndBack: when the operator loses the switch, the endpoint sends
// its SMF a Node Report Request of type UPFR whose User Plane Path Failure Report names the
// remote GTP-U peers of the SMF's sessions (the gNBs and the access gateway of their FARs); once
// a new switch holds the sessions again, a UPRR names the same peers (TS 29.244 §7.4.5.1,
// docs/n4.md "Node Reports"). Both decode in Wireshark.
func TestN4ReportsTheUserPlaneLostAndBack(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, func(n *junctionv1.N4) { n.HeartbeatInterval = "500ms" }, nil)
	r.associate(t)
	carol := alice()
	carol.IMSI, carol.UEAddr, carol.UE3GPP, carol.UENon3GPP = "001010000000078", netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("10.45.0.8"), netip.MustParseAddr("203.0.113.8")
	carol.GNB, carol.DownlinkTEID = netip.MustParseAddr("198.51.100.11"), 0x1235
	carol.Gateway, carol.Non3GPPDownlinkTEID = netip.MustParseAddr("198.51.100.20"), 0x5678
	for _, s := range []smf.MASession{alice(), carol} {
		if _, err := r.smf.Establish(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	wantPeers := []string{"198.51.100.10", "198.51.100.11", "198.51.100.20"}
	report := func(i int, typ uint8, group uint16) {
		t.Helper()
		var got *smf.Response
		eventually(t, programTimeout, fmt.Sprintf("Node Report Request %d (type %d)", i+1, typ), func() error {
			reps := r.smf.NodeReports()
			if len(reps) <= i {
				return fmt.Errorf("%d Node Report Requests", len(reps))
			}
			got = reps[i]
			return nil
		})
		if x := got.Find(ie.NodeReportType); x == nil || len(x.Payload) != 1 || x.Payload[0] != typ {
			t.Fatalf("Node Report Type %v, want flags %#x", x, typ)
		}
		if x := got.Find(ie.NodeID); x == nil {
			t.Errorf("Node Report Request without the Node ID")
		}
		g := got.Find(group)
		if g == nil {
			t.Fatalf("no IE of type %d in the Node Report Request: %v", group, got.IEs)
		}
		var peers []string
		for _, c := range g.ChildIEs {
			f, err := ie.ParseRemoteGTPUPeerFields(c.Payload)
			if c.Type != ie.RemoteGTPUPeer || err != nil {
				t.Fatalf("IE %d in the report (%v), want Remote GTP-U Peer", c.Type, err)
			}
			if f.Flags&0x04 == 0 || f.DestinationInterface != ie.DstInterfaceAccess {
				t.Errorf("Remote GTP-U Peer %s: flags %#x, destination interface %d, want DI set to Access (0)", f.IPv4Address, f.Flags, f.DestinationInterface)
			}
			peers = append(peers, f.IPv4Address.String())
		}
		if strings.Join(peers, ",") != strings.Join(wantPeers, ",") {
			t.Errorf("remote GTP-U peers %v, want %v", peers, wantPeers)
		}
	}

	r.u.stop()
	report(0, 0x01, ie.UserPlanePathFailureReport)
	fresh := startSoftUPF(t, r.u.addr)
	t.Cleanup(fresh.stop)
	report(1, 0x02, ie.UserPlanePathRecoveryReport)
	eventually(t, programTimeout, "both sessions replayed on the new switch", func() error {
		got, err := fresh.entries(r.sch)
		if err != nil {
			return err
		}
		if n := countTable(got, "sessions"); n != 2 {
			return fmt.Errorf("%d sessions entries", n)
		}
		return nil
	})
	if n := len(r.smf.NodeReports()); n != 2 {
		t.Errorf("%d Node Report Requests, want the failure and the recovery", n)
	}

	tshark, err := exec.LookPath("tshark")
	testenv.Require(t, "tshark (hack/tools.sh tshark installs it; make test does, as root)", err)
	var raw [][]byte
	for _, rep := range r.smf.NodeReports() {
		raw = append(raw, rep.Raw)
	}
	if decoded, problems, text := dissect(t, tshark, raw); decoded != len(raw) || len(problems) > 0 {
		t.Errorf("tshark decoded %d of %d Node Report Requests, problems: %v\n%s", decoded, len(raw), problems, text)
	}
}

// TestN4ReleasesTheSessionsOfASilentSMF: an SMF that stops answering heartbeats is lost after
// three intervals; its sessions are kept for the grace period, then released, with events.
func TestN4ReleasesTheSessionsOfASilentSMF(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, func(n *junctionv1.N4) { n.HeartbeatInterval, n.GracePeriod = "200ms", "2s" }, nil)
	r.associate(t)
	if _, err := r.smf.Establish(ctx, alice()); err != nil {
		t.Fatal(err)
	}
	r.smf.SetQuiet(true)
	start := time.Now()
	eventually(t, programTimeout, "an SMFLost event", func() error { return findEvent(r.ns, "upf", "Warning", "SMFLost") })
	r.awaitN4Sessions(t, 1) // kept for the grace period
	eventually(t, programTimeout, "the silent SMF's sessions released", func() error {
		if n := len(r.n4Sessions(t)); n != 0 {
			return fmt.Errorf("%d sessions", n)
		}
		return findEvent(r.ns, "upf", "Warning", "SMFAssociationReleased")
	})
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("sessions released %v after the SMF went silent, before the 2s grace period", d)
	}
	eventually(t, programTimeout, "no association in status.n4", func() error {
		if st := r.n4Status(t); len(st.Associations) != 0 {
			return fmt.Errorf("associations %+v", st.Associations)
		}
		return nil
	})
}

// TestTheLeaderLabelsItsPodForN4: a replica clears the N4 leader label from its own pod before
// it may lead (a stale one from before a restart included); the leader sets it. The chart's N4
// Service selects that label (test/chart).
func TestTheLeaderLabelsItsPodForN4(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator-0", Labels: map[string]string{controllers.LabelN4Leader: "true", "app": "junction"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "junction"}}},
	}
	create(t, pod)
	l := &controllers.LeaderPodLabel{Client: k8s, Pod: client.ObjectKeyFromObject(pod)}
	label := func() (string, bool) {
		var p corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			t.Fatal(err)
		}
		if p.Labels["app"] != "junction" {
			t.Errorf("the pod's other labels changed: %v", p.Labels)
		}
		v, ok := p.Labels[controllers.LabelN4Leader]
		return v, ok
	}
	if err := l.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if v, ok := label(); ok {
		t.Errorf("after Clear the pod still has %s=%q", controllers.LabelN4Leader, v)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := label(); v != "true" {
		t.Errorf("the leader's pod has %s=%q, want true", controllers.LabelN4Leader, v)
	}
}

// TestN4FQDNNodeIDNeedsAnAddress: with an FQDN node ID and a wildcard listen address the UPF has
// no address for its F-SEIDs unless spec.n4.address gives one; then every UP F-SEID carries it.
// Without it the endpoint does not run and an N4Invalid event names the field.
func TestN4FQDNNodeIDNeedsAnAddress(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, func(n *junctionv1.N4) {
		n.NodeID, n.Address, n.Listen = "upf1.core.example", "127.0.0.1", "0.0.0.0:"+strings.Split(n.Listen, ":")[1]
	}, nil)
	r.associate(t)
	est, err := r.smf.Establish(ctx, alice())
	if err != nil {
		t.Fatal(err)
	}
	if f, err := est.Resp.Find(ie.FSEID).FSEID(); err != nil || !f.IPv4Address.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("UP F-SEID %+v (%v), want spec.n4.address 127.0.0.1", f, err)
	}
	if id, _ := est.Resp.Find(ie.NodeID).NodeID(); id != "upf1.core.example" {
		t.Errorf("Node ID %q, want the FQDN", id)
	}

	var upf junctionv1.UserPlaneFunction
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r.upf), &upf); err != nil {
		t.Fatal(err)
	}
	upf.Spec.N4.Address = ""
	if err := k8s.Update(ctx, &upf); err != nil {
		t.Fatal(err)
	}
	eventually(t, programTimeout, "an N4Invalid event naming spec.n4.address", func() error {
		var list corev1.EventList
		if err := k8s.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == "N4Invalid" && strings.Contains(e.Message, "spec.n4.address") {
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	r.smf.T1, r.smf.N1 = 300*time.Millisecond, 1
	if _, err := r.smf.Heartbeat(ctx); err == nil {
		t.Error("the endpoint still answers after its spec became invalid")
	}
}

// TestN4RefusesWhenTheSwitchDoesNotTakeTheSession: with the UPF's device gone, an establishment
// cannot be programmed: after the operator's wait (10 s by default) the SMF gets System failure
// (77) and nothing of the session remains; the endpoint still answers heartbeats.
func TestN4RefusesWhenTheSwitchDoesNotTakeTheSession(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	r.u.stop()
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionConnected, metav1.ConditionFalse, "")
	r.smf.T1, r.smf.N1 = 30*time.Second, 0 // one request, answered when the operator gives up
	e, err := r.smf.Establish(ctx, alice())
	if err == nil || e.Resp.Cause() != 77 {
		t.Fatalf("establishment with the switch gone: %v, want cause 77", err)
	}
	eventually(t, programTimeout, "no N4 session left", func() error {
		if n := len(r.n4Sessions(t)); n != 0 {
			return fmt.Errorf("%d sessions", n)
		}
		return nil
	})
	if _, err := r.smf.Heartbeat(ctx); err != nil {
		t.Errorf("heartbeat after the refusal: %v", err)
	}
}

// TestN4RefusesAnMBRThePipelineCannotPolice: on a pipeline without the MBR policer (its table,
// meters and counter; a P4 program may leave it out, docs/pipeline.md) a session whose QER has an MBR is refused with 76
// Service not supported, Offending IE MBR (docs/n4.md), whichever path it takes: the first
// session brings a traffic class the UPF has no application ID for yet, so the controller
// programs it (the object is written, then refused: NotSupportedByPipeline); the second finds the
// application ID and is programmed by the endpoint itself. Neither is left behind, and the same
// session without an MBR is accepted.
func TestN4RefusesAnMBRThePipelineCannotPolice(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, nil, func(info *p4configv1.P4Info) {
		info.Meters = nil
		info.Counters = slices.DeleteFunc(info.Counters, func(c *p4configv1.Counter) bool { return c.GetPreamble().GetName() == "mbr_drops" })
		info.Tables = slices.DeleteFunc(info.Tables, func(t *p4configv1.Table) bool { return t.GetPreamble().GetName() == "mbr_sessions" })
		info.Actions = slices.DeleteFunc(info.Actions, func(a *p4configv1.Action) bool {
			return a.GetPreamble().GetName() == "police" || a.GetPreamble().GetName() == "no_police"
		})
	})
	r.associate(t)
	bob := alice()
	bob.IMSI, bob.UEAddr, bob.UE3GPP, bob.UENon3GPP = "001010000000078", netip.MustParseAddr("10.60.0.8"), netip.MustParseAddr("10.45.0.8"), netip.MustParseAddr("203.0.113.8")
	bob.DownlinkTEID = 0x1235
	for _, s := range []smf.MASession{alice(), bob} {
		s.MBRDL = 8000
		e, err := r.smf.Establish(ctx, s)
		if err == nil || e.Resp.Cause() != ie.CauseServiceNotSupported || why(e.Resp) != fmt.Sprintf("offending IE %d", ie.MBR) {
			t.Fatalf("%s with an MBR: %v (%s), want cause 76, offending IE %d (MBR)", s.IMSI, err, why(e.Resp), ie.MBR)
		}
		eventually(t, programTimeout, "no N4 session left", func() error {
			if n := len(r.n4Sessions(t)); n != 0 {
				return fmt.Errorf("%d sessions", n)
			}
			return nil
		})
	}
	if _, err := r.smf.Establish(ctx, bob); err != nil {
		t.Fatalf("%s without an MBR: %v", bob.IMSI, err)
	}
	r.awaitN4Sessions(t, 1)
}

// TestN4AnswersCongestionWhenEveryHandlerIsBusy: with the switch gone every establishment waits
// for it, so 256 of them take all of the endpoint's session handlers; the requests after them are
// answered at once with cause 74 (docs/n4.md, "What is refused"), a heartbeat is still answered,
// a retransmission of a request in work is not refused, and the 256 are answered when their
// wait ends, each once.
func TestN4AnswersCongestionWhenEveryHandlerIsBusy(t *testing.T) {
	const handlers, extra = 256, 8 // docs/n4.md
	ctx := context.Background()
	r := newN4Rig(t, nil, nil)
	r.associate(t)
	r.u.stop()
	waitCondition(t, programTimeout, r.upf, junctionv1.ConditionConnected, metav1.ConditionFalse, "")

	// One socket, requests written in order: the endpoint reads them in that order. At once,
	// where the kernel grants the endpoint the receive buffer it asks for (4 MiB, docs/n4.md);
	// else a millisecond apart, since a burst of 264 would overflow the smaller buffer while the
	// handlers start (an SMF would retransmit; this test does not).
	pace := time.Duration(0)
	if b, err := os.ReadFile("/proc/sys/net/core/rmem_max"); err != nil {
		t.Fatal(err)
	} else if v, _ := strconv.Atoi(strings.TrimSpace(string(b))); v < 4<<20 {
		pace = time.Millisecond
		t.Logf("net.core.rmem_max is %d: requests sent %v apart", v, pace)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var first []byte
	for seq := 1; seq <= handlers+extra; seq++ {
		b, err := message.NewSessionEstablishmentRequest(0, 0, 0, uint32(seq), 0, r.smf.EstablishmentIEs(benchSession(seq), r.smf.NewCPSEID())...).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDPAddrPort(b, r.n4); err != nil {
			t.Fatal(err)
		}
		if seq == 1 {
			first = b
		}
		time.Sleep(pace)
	}
	if _, err := r.smf.Heartbeat(ctx); err != nil { // within T1 x (N1+1) = 2 s
		t.Errorf("heartbeat while every session handler is busy: %v", err)
	}
	if _, err := conn.WriteToUDPAddrPort(first, r.n4); err != nil { // the SMF's T1 ran out
		t.Fatal(err)
	}
	causes := map[uint32]uint8{}
	buf := make([]byte, 65535)
	for len(causes) < handlers+extra {
		conn.SetReadDeadline(time.Now().Add(programTimeout))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("%d of %d establishments answered: %v", len(causes), handlers+extra, err)
		}
		m, err := message.Parse(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		resp, ok := m.(*message.SessionEstablishmentResponse)
		if !ok || resp.Cause == nil {
			t.Fatalf("answer %T without a cause", m)
		}
		cause, err := resp.Cause.Cause()
		if err != nil {
			t.Fatal(err)
		}
		seq := resp.Sequence()
		if _, again := causes[seq]; again {
			t.Fatalf("request %d answered twice", seq)
		}
		causes[seq] = cause
		// The congestion answers come first; the others wait for the switch (cause 77).
		want := uint8(77)
		if seq > handlers {
			want = 74
		}
		if len(causes) <= extra {
			want = 74
		}
		if cause != want {
			t.Errorf("answer %d: request %d with cause %d, want %d", len(causes), seq, cause, want)
		}
	}
}

// TestN4AnswersFirstAndANewEndpointKnowsWhatWasLost: the endpoint answers once the switch holds
// a session and writes its object after (docs/n4.md, "Where N4 sessions live"); whenever a
// session the SMF heard of is not saved with its indexes, the UPF's status.n4.unsavedSince says
// so, and a new endpoint that finds it set (a leader that died mid-write) takes a new Recovery
// Time Stamp, which tells the SMF to establish its sessions again (as after a UPF restart), and
// releases what it restored.
func TestN4AnswersFirstAndANewEndpointKnowsWhatWasLost(t *testing.T) {
	ctx := context.Background()
	r := newN4Rig(t, func(n *junctionv1.N4) { n.HeartbeatInterval = "300ms" }, nil)
	ts0 := r.associate(t)
	s := alice()
	s.Apps = nil // no traffic class to wait for: the direct path
	est, err := r.smf.Establish(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: r.ns, Name: fmt.Sprintf("n4-upf-%016x", est.UPSEID)}
	var obj junctionv1.ATSSSSession
	err = k8s.Get(ctx, key, &obj)
	if saved := err == nil && obj.Status.UsageIndex != nil; !saved && r.n4Status(t).UnsavedSince == nil {
		t.Errorf("answered with the session neither saved (object: %v) nor status.n4.unsavedSince set", err)
	}
	eventually(t, programTimeout, "the session saved and unsavedSince cleared", func() error {
		if err := k8s.Get(ctx, key, &obj); err != nil || obj.Status.UsageIndex == nil {
			return fmt.Errorf("object %v, indexes %v", err, obj.Status.UsageIndex)
		}
		if u := r.n4Status(t).UnsavedSince; u != nil {
			return fmt.Errorf("unsavedSince %s", u)
		}
		return nil
	})

	// The operator stops as one that dies mid-write would leave it: unsavedSince set.
	r.op.stop()
	patch := []byte(fmt.Sprintf(`{"status":{"n4":{"unsavedSince":%q}}}`, time.Now().UTC().Format(time.RFC3339)))
	if err := k8s.Status().Patch(ctx, r.upf.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	r.op = startOperator(t, r.ns, operatorOptions{})
	eventually(t, programTimeout, "a new Recovery Time Stamp", func() error {
		hb, err := r.smf.Heartbeat(ctx)
		if err != nil {
			return err
		}
		if ts, err := hb.Find(ie.RecoveryTimeStamp).RecoveryTimeStamp(); err != nil || ts.Equal(ts0) {
			return fmt.Errorf("recovery time stamp %v (%v), the first was %v", ts, err, ts0)
		}
		return nil
	})
	eventually(t, programTimeout, "an N4SessionsLost event", func() error { return findEvent(r.ns, "upf", "Warning", "N4SessionsLost") })
	r.awaitN4Sessions(t, 0)
	eventually(t, programTimeout, "unsavedSince cleared once the released sessions' objects went", func() error {
		if u := r.n4Status(t).UnsavedSince; u != nil {
			return fmt.Errorf("unsavedSince %s", u)
		}
		return nil
	})
	if m, err := r.smf.Modify(ctx, est); err != nil || m.Cause() != CauseSessionContextNotFound {
		t.Errorf("a modification of the lost session: %v, cause %d; want 65", err, m.Cause())
	}
}
