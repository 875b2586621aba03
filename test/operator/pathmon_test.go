package operator

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/pathmon"
	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/upfclient"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// probeAck sends the data plane the UE's PROBE_ACK of one leg of session s, answering a
// PROBE_REPLY stamped rtt ago: the data plane measures rtt, writes the path state (unless
// suspended) and sends a probe_reports digest to the operator.
func (u *softUPF) probeAck(t *testing.T, s *junctionv1.ATSSSSession, access contract.Access, rtt time.Duration) {
	t.Helper()
	now := u.now.Add(1000) // 1 ms between reports
	body := wire.Control{Session: addr4(string(s.Spec.SessionAddress)), Access: access, UETime: 1, UPFTime: now - uint32(rtt/time.Microsecond)}
	junction := []any{wire.UDP{}, wire.Header{Type: wire.TypeProbeAck}, body}
	var frame []byte
	eth := wire.Ethernet{Dst: [6]byte{2, 0, 0, 0, 1, 1}, Src: [6]byte{2, 0, 0, 0, 2, 1}}
	if access == contract.Access3GPP {
		leg := s.Spec.AccessLegs.ThreeGPP
		inner := wire.IPv4{Src: addr4(string(leg.UEAddress)), Dst: addr4("192.0.2.2")}
		frame = wiretest.Build(append([]any{eth, wire.IPv4{Src: addr4(string(leg.GNBAddress)), Dst: addr4("192.0.2.1")},
			wire.UDP{}, wire.GTPU{TEID: uint32(leg.UplinkTEID)}, inner}, junction...)...)
	} else {
		outer := wire.IPv4{Src: addr4(string(s.Spec.AccessLegs.NonThreeGPP.UEAddress)), Dst: addr4("192.0.2.2")}
		frame = wiretest.Build(append([]any{eth, outer}, junction...)...)
	}
	if n := u.feed(t, frame); n != 0 {
		t.Fatalf("a PROBE_ACK produced %d packets", n)
	}
}

// feed hands frames to the software UPF's data plane as if they came on its first port and
// returns how many left it.
func (u *softUPF) feed(t *testing.T, frames ...[]byte) int {
	t.Helper()
	out := 0
	for _, f := range frames {
		out += len(u.forward(t, f))
	}
	return out
}

// forward hands one frame to the software UPF's data plane as feed does and returns what left.
func (u *softUPF) forward(t testing.TB, frame []byte) []sentFrame {
	t.Helper()
	pkt := u.pool.TryGet()
	if pkt == nil || !pkt.SetFrame(frame) {
		t.Fatal("no buffer for the frame")
	}
	pkt.InPort = 1
	var out []sentFrame
	for _, p := range u.dp.Process([]*dataplane.Packet{pkt}, nil) {
		out = append(out, sentFrame{p.OutPort, slices.Clone(p.Frame())})
		u.pool.Put(p)
	}
	return out
}

func addr4(s string) [4]byte { return netip.MustParseAddr(s).As4() }

// flipFlopRig is one session (mode: its modeOverride; nil: the default steering) programmed on
// a fresh software UPF by an operator whose flip-flop guard suspends after 3 switches a
// minute; it returns the UPF, its schema, the session and its user index.
func flipFlopRig(t *testing.T, mode *junctionv1.SteeringMode) (*softUPF, *upfclient.Schema, *junctionv1.ATSSSSession, int64) {
	t.Helper()
	ns := newNamespace(t)
	u := startSoftUPF(t, "127.0.0.1:0")
	cm, sch := pipelineConfigMap(t, ns, "pipeline", nil)
	upf := newUPF(ns, "upf", u.addr, "pipeline")
	s := session(ns, "s1", "imsi-001010000000001", "10.60.0.1", "upf", "3n", "198.51.100.10")
	s.Spec.ModeOverride = mode
	grantDevice(t, upf)
	create(t, cm, upf, s)
	startOperator(t, ns, operatorOptions{path: pathmon.Config{MaxSwitches: 3, Window: time.Minute, Settle: 3 * time.Second, Reassert: 5 * time.Second}})
	waitCondition(t, programTimeout, s, junctionv1.ConditionProgrammed, metav1.ConditionTrue, "Programmed")
	var got junctionv1.ATSSSSession
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), &got); err != nil {
		t.Fatal(err)
	}
	return u, sch, s, int64(*got.Status.UserIndex)
}

// TestPathMonitoringSuspendsFlipFloppingPathsAndSummarisesThem drives the real data plane with
// probe acknowledgements: the session's status shows the paths at a bounded rate, a user whose
// faster access keeps changing is suspended on the device (and resumed once its paths settle).
func TestPathMonitoringSuspendsFlipFloppingPathsAndSummarisesThem(t *testing.T) {
	ctx := context.Background()
	// Smallest delay: a mode that reads the RTT comparison, which the flip-flop guard watches.
	u, sch, s, user := flipFlopRig(t, &junctionv1.SteeringMode{Mode: junctionv1.ModeSmallestDelay})

	// Count the session's writes while probes arrive every millisecond for two seconds.
	wc, err := client.NewWithWatch(restCfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &junctionv1.ATSSSSessionList{}, client.InNamespace(s.Namespace))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	modified := make(chan int)
	go func() {
		n := 0
		timeout := time.After(2500 * time.Millisecond)
		for {
			select {
			case ev := <-w.ResultChan():
				if ev.Type == watch.Modified {
					n++
				}
			case <-timeout:
				modified <- n
				return
			}
		}
	}()
	for i := 0; i < 200; i++ { // 3GPP stays faster: no switch, but every RTT is new
		u.probeAck(t, s, contract.Access3GPP, time.Duration(20000+i)*time.Microsecond)
		u.probeAck(t, s, contract.AccessNon3GPP, 45*time.Millisecond)
		time.Sleep(10 * time.Millisecond)
	}
	if n := <-modified; n > 4 {
		t.Errorf("%d status writes for 400 probe reports in 2.5 s, want at most one per second", n)
	}
	eventually(t, programTimeout, "the status shows both paths", func() error {
		var cur junctionv1.ATSSSSession
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), &cur); err != nil {
			return err
		}
		p := cur.Status.Paths
		if cur.Status.ActiveAccess != junctionv1.Access3GPP || p.ThreeGPP == nil || !p.ThreeGPP.Available || p.NonThreeGPP == nil || p.NonThreeGPP.RTT != "45ms" {
			return fmt.Errorf("active %q, paths %+v %+v", cur.Status.ActiveAccess, p.ThreeGPP, p.NonThreeGPP)
		}
		return nil
	})
	if v, err := u.register(sch, "rtt_non3gpp", user); err != nil || v != 45000 {
		t.Errorf("rtt_non3gpp[%d] = %d (%v), want 45000 written by the data plane", user, v, err)
	}
	waitCondition(t, programTimeout, s, junctionv1.ConditionDegraded, metav1.ConditionFalse, "AllPathsUp")

	// Flip-flop: the faster access changes with every probe. Probes are spaced beyond the
	// digest's 20 ms list timeout: a P4Runtime device suppresses a digest message equal to one
	// in a list not yet acknowledged.
	for i := 0; i < 6; i++ {
		rtt := 30 * time.Millisecond
		if i%2 == 0 {
			rtt = 60 * time.Millisecond
		}
		u.probeAck(t, s, contract.Access3GPP, rtt)
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, programTimeout, "the user is suspended on the device", func() error {
		v, err := u.register(sch, "path_updates_suspended", user)
		if err != nil || v != 1 {
			return fmt.Errorf("path_updates_suspended[%d] = %d (%v)", user, v, err)
		}
		return nil
	})
	// Suspended: the data plane keeps the path state it had.
	frozen, _ := u.register(sch, "rtt_3gpp", user)
	u.probeAck(t, s, contract.Access3GPP, 90*time.Millisecond)
	if v, _ := u.register(sch, "rtt_3gpp", user); v != frozen {
		t.Errorf("rtt_3gpp changed from %d to %d while suspended", frozen, v)
	}
	eventually(t, programTimeout, "the status says suspended", func() error {
		var cur junctionv1.ATSSSSession
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), &cur); err != nil {
			return err
		}
		if !cur.Status.PathUpdatesSuspended || cur.Status.LastPathSwitch == nil {
			return fmt.Errorf("pathUpdatesSuspended %v, lastPathSwitch %v", cur.Status.PathUpdatesSuspended, cur.Status.LastPathSwitch)
		}
		return nil
	})
	eventually(t, programTimeout, "a PathUpdatesSuspended event", func() error { return findEvent(s.Namespace, "s1", "Warning", "PathUpdatesSuspended") })

	// The paths settle: 3GPP stays faster for longer than the settle period.
	eventually(t, programTimeout, "the user is resumed once its paths settle", func() error {
		u.probeAck(t, s, contract.Access3GPP, 20*time.Millisecond)
		u.probeAck(t, s, contract.AccessNon3GPP, 45*time.Millisecond)
		v, err := u.register(sch, "path_updates_suspended", user)
		if err != nil || v != 0 {
			return fmt.Errorf("path_updates_suspended[%d] = %d (%v)", user, v, err)
		}
		return nil
	})
	eventually(t, programTimeout, "the status says resumed", func() error {
		var cur junctionv1.ATSSSSession
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), &cur); err != nil {
			return err
		}
		if cur.Status.PathUpdatesSuspended {
			return fmt.Errorf("still suspended")
		}
		return nil
	})
}

// TestFlipFloppingPathsOfAnActiveStandbyUserAreNotSuspended: the flip-flop guard watches only
// users whose modes read the RTT comparison (docs/pipeline.md, "The flip-flop guard, by
// mode"). An active-standby user (the default steering) whose faster access changes with every
// probe keeps its path updates: the data plane goes on writing each report's RTT, and the
// status never says suspended.
func TestFlipFloppingPathsOfAnActiveStandbyUserAreNotSuspended(t *testing.T) {
	ctx := context.Background()
	u, sch, s, user := flipFlopRig(t, nil)
	u.probeAck(t, s, contract.AccessNon3GPP, 45*time.Millisecond)
	// Twice the flip-flops that suspend a guarded user (MaxSwitches 3), spaced as in the test
	// above; the last report's RTT must be in the register, written by the data plane.
	last := time.Duration(0)
	for i := 0; i < 8; i++ {
		last = time.Duration(30+i) * time.Millisecond
		if i%2 == 0 {
			last = time.Duration(60+i) * time.Millisecond
		}
		u.probeAck(t, s, contract.Access3GPP, last)
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, programTimeout, "the status shows the last RTT, not suspended", func() error {
		var cur junctionv1.ATSSSSession
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(s), &cur); err != nil {
			return err
		}
		if p := cur.Status.Paths.ThreeGPP; p == nil || p.RTT != junctionv1.Duration(last.String()) {
			return fmt.Errorf("3GPP path %+v, want RTT %v", p, last)
		}
		if cur.Status.PathUpdatesSuspended {
			return fmt.Errorf("pathUpdatesSuspended under active-standby")
		}
		return nil
	})
	if v, err := u.register(sch, "path_updates_suspended", user); err != nil || v != 0 {
		t.Errorf("path_updates_suspended[%d] = %d (%v), want 0", user, v, err)
	}
	if v, err := u.register(sch, "rtt_3gpp", user); err != nil || v != uint64(last.Microseconds()) {
		t.Errorf("rtt_3gpp[%d] = %d (%v), want %d: the data plane's updates go on", user, v, err, last.Microseconds())
	}
}
