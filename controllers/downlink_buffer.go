package controllers

// Downlink buffering for idle UEs (docs/n4.md, "Buffering"): a session whose spec says
// accessLegs.threeGPP.bufferDownlink has a buffer_downlink entry, so the pipeline sends its
// downlink here as packet-ins; the UPF's runtime holds them (internal/dlbuffer), tells the N4
// endpoint of the first one (a Downlink Data Report to the SMF), and sends them back into the
// pipeline (to_ingress packet-outs) once the session's downlink forwards.

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/dlbuffer"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// downlinkBuffered is registered with the operator's other metrics (metrics.go).
var downlinkBuffered = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "junction_downlink_buffered_frames_total",
	Help: "Downlink frames of idle UEs' sessions by what became of them: held, released (sent to the gNB once the session forwards), dropped_full (the session or the UPF held all it may), dropped (the session went, or stopped buffering without forwarding), release_failed.",
}, []string{"upf", "result"})

// DownlinkDataFunc is told of the first downlink frame a session holds since its downlink started
// buffering (the N4 endpoint reports it to the SMF, TS 29.244 §5.2.3.1).
type DownlinkDataFunc func(upf types.NamespacedName, session types.NamespacedName)

// readPacketIns relays the packet-ins of dev that arrived on a forwarding tunnel
// (indirect_forwarding.go) and holds those that are downlink of a session that buffers, until
// ctx ends (the connection's). Other packet-ins (frames the pipeline punts: docs/pipeline.md)
// are not the operator's business and are let go.
func (rt *upfRuntime) readPacketIns(ctx context.Context, dev *upfclient.Device) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-dev.PacketIns():
			if rt.relay(p.Payload) {
				continue
			}
			o, key, first := rt.held.Hold(p.Payload)
			switch o {
			case dlbuffer.NotBuffering:
				continue
			case dlbuffer.Late:
				rt.sendHeld(key, [][]byte{p.Payload})
				continue
			case dlbuffer.Held:
				downlinkBuffered.WithLabelValues(rt.key.Name, "held").Inc()
			case dlbuffer.Full:
				downlinkBuffered.WithLabelValues(rt.key.Name, "dropped_full").Inc()
			}
			if f := rt.f.downlinkData.Load(); first && f != nil {
				(*f)(rt.key, splitKey(key))
			}
		}
	}
}

// canBuffer reports whether the UPF's pipeline can hold a session's downlink: buffer_downlink
// in downlink_tunnels, and a packet_out that sends a frame through the pipeline (a P4 program
// may leave both out, as one older than them does). A pipeline not known yet is given the
// benefit of the doubt, as canPolice does.
func (rt *upfRuntime) canBuffer(s *junctionv1.ATSSSSession) error {
	sch := rt.pipe.Load().schema
	if sch == nil || !s.Spec.AccessLegs.ThreeGPP.Buffers() {
		return nil
	}
	if !sch.TableTakes(desired.TableDownlinkTunnels, desired.ActionBufferDownlink) || !sch.PacketOutHas(desired.PacketOutToIngress) {
		return fmt.Errorf("accessLegs.threeGPP.bufferDownlink: the UPF's pipeline cannot buffer (it needs %s in %s and packet_out.%s, docs/pipeline.md)",
			desired.ActionBufferDownlink, desired.TableDownlinkTunnels, desired.PacketOutToIngress)
	}
	return nil
}

// startBuffering, before a session's entries are written, has the runtime hold the downlink of a
// session whose spec buffers; releaseHeld, once entries that forward are written, sends what
// the session held back into the pipeline, in order, and then what the pipeline punted before
// the new entry took effect (dlbuffer.Late).
func (rt *upfRuntime) startBuffering(key string, s *junctionv1.ATSSSSession) {
	if s.Spec.AccessLegs.ThreeGPP.Buffers() {
		if a, err := netip.ParseAddr(string(s.Spec.SessionAddress)); err == nil {
			rt.held.Start(key, a)
		}
	}
}

// openLegs, before an MA PDU session's held downlink goes back into the pipeline, makes the legs
// its SMF made active available in the path state. The session had no `sessions` entry while it
// held, so the programmer has just reset its user's path state to unavailable until the UE
// reports each leg (as for a new user), and the held packets would find no path; the SMF's
// tunnel says the access is up (TS 23.501 §5.32.5: an access is available while it has user
// plane resources). A leg's RTT as last reported stands in, 1 µs for one never reported; the
// UE's next report replaces it.
func (rt *upfRuntime) openLegs(ctx context.Context, user uint32, s *junctionv1.ATSSSSession) {
	sum, _ := rt.mon.Summary(user)
	for _, a := range []contract.Access{contract.Access3GPP, contract.AccessNon3GPP} {
		if !legActive(s, a) {
			continue
		}
		v := uint32(1)
		if _, rtt, seen := sum.Path(a); seen && rtt >= time.Microsecond {
			v = uint32(rtt / time.Microsecond)
		}
		if err := rt.WriteRTT(ctx, user, a, v); err != nil {
			rt.log.Error(err, "The held downlink may find no path: the leg's RTT was not written", "user", user, "access", a.Label())
		}
	}
}

func (rt *upfRuntime) releaseHeld(key string) {
	rt.releaseMu.Lock() // a Late frame goes after what was held (readPacketIns)
	defer rt.releaseMu.Unlock()
	rt.sendHeldLocked(key, rt.held.Stop(key, true))
}

// sendHeld sends frames into the pipeline (to_ingress packet-outs), in order.
func (rt *upfRuntime) sendHeld(key string, frames [][]byte) {
	rt.releaseMu.Lock()
	defer rt.releaseMu.Unlock()
	rt.sendHeldLocked(key, frames)
}

func (rt *upfRuntime) sendHeldLocked(key string, frames [][]byte) {
	if len(frames) == 0 {
		return
	}
	dev := rt.dev.cur.Load()
	toIngress := map[string]uint64{desired.PacketOutToIngress: 1} // egress_port 0: not read
	sent := 0
	for _, f := range frames {
		if dev == nil || dev.PacketOut(f, toIngress) != nil {
			break
		}
		sent++
	}
	downlinkBuffered.WithLabelValues(rt.key.Name, "released").Add(float64(sent))
	if n := len(frames) - sent; n > 0 {
		downlinkBuffered.WithLabelValues(rt.key.Name, "release_failed").Add(float64(n))
		rt.log.Info("Held downlink frames not sent: the UPF is away", "session", key, "frames", n)
	}
}

// dropBuffered drops what session key holds on its UPF (an SMF's DROBU); the session's next
// entries buffer anew if they buffer.
func (f *Fleet) dropBuffered(key string) {
	for _, rt := range f.runtimesHolding(key) {
		rt.dropHeld(key)
	}
}

// dropHeld drops what a session held (the session went, or its SMF said DROBU).
func (rt *upfRuntime) dropHeld(key string) {
	if n := len(rt.held.Stop(key, false)); n > 0 {
		downlinkBuffered.WithLabelValues(rt.key.Name, "dropped").Add(float64(n))
	}
}
