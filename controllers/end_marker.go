package controllers

import (
	"context"
	"errors"
	"fmt"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/n4"
	"github.com/junction-atsss/junction/internal/programmer"
)

// sendEndMarkers sends a GTP-U End Marker on each tunnel an SMF's modification moved session
// key off (SNDEM), once its new entries are on the switch: a packet-out of the whole frame to
// the port of the route toward the old peer, so it is the old path's last packet (docs/n4.md,
// "End Markers"). One that cannot be built or sent is logged: the modification holds either way.
func (st *n4Store) sendEndMarkers(ctx context.Context, key string, s *junctionv1.ATSSSSession, markers []n4.EndMarker) {
	if len(markers) == 0 {
		return
	}
	var upf junctionv1.UserPlaneFunction
	ep := 0
	failed := st.c.Get(ctx, st.upf, &upf)
	if failed == nil {
		ep, failed = upf.TunnelEndpointIndex(s.Spec.TunnelEndpoint)
	}
	rts := st.fleet.runtimesHolding(key)
	if failed == nil && len(rts) == 0 {
		failed = errors.New("no UPF holds the session")
	}
	for _, m := range markers {
		err := failed
		var frame []byte
		var port int32
		if err == nil {
			frame, port, err = desired.EndMarker(upf.Spec, ep, m.Peer, m.TEID)
		}
		for _, rt := range rts {
			if err != nil {
				break
			}
			if dev := rt.dev.cur.Load(); dev == nil {
				err = fmt.Errorf("UserPlaneFunction %s: %w", rt.key.Name, programmer.ErrNotSynced)
			} else {
				err = dev.PacketOut(frame, map[string]uint64{desired.PacketOutEgressPort: uint64(port)})
			}
		}
		if err != nil {
			st.log.Info("N4: no End Marker sent", "session", key, "peer", m.Peer, "teid", m.TEID, "error", err.Error())
		}
	}
}
