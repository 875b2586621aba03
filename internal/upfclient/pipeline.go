package upfclient

import (
	"context"
	"fmt"
	"hash/fnv"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// PushPolicy says when EnsurePipeline may replace the device's pipeline. Pushing resets
// every table, register and digest configuration on the device.
type PushPolicy int

const (
	// PushIfDifferent pushes when the device's cookie differs from ours (the default).
	PushIfDifferent PushPolicy = iota
	// PushAlways pushes unconditionally.
	PushAlways
	// PushNever never pushes and fails when the cookies differ: the pipeline is managed by
	// someone else (a switch image, another tool) and must already be the expected one.
	PushNever
)

func (p PushPolicy) String() string {
	switch p {
	case PushIfDifferent:
		return "IfDifferent"
	case PushAlways:
		return "Always"
	case PushNever:
		return "Never"
	}
	return fmt.Sprintf("PushPolicy(%d)", int(p))
}

// Cookie is a stable fingerprint of a pipeline: FNV-64a over the P4Info's deterministic
// encoding and the device config. It is never 0, which GetPipelineCookie reserves for "none".
func Cookie(p4info *p4configv1.P4Info, deviceConfig []byte) uint64 {
	h := fnv.New64a()
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(p4info) // a valid message always encodes
	var n [8]byte
	for i, v := 0, uint64(len(b)); i < 8; i++ {
		n[i] = byte(v >> (8 * i))
	}
	h.Write(n[:]) // length first, so that info and config cannot shift into each other
	h.Write(b)
	h.Write(deviceConfig)
	if c := h.Sum64(); c != 0 {
		return c
	}
	return 1
}

// GetPipelineCookie returns the cookie of the device's pipeline; 0 when it has no pipeline
// or its pipeline carries no cookie. Backups may call it.
func (d *Device) GetPipelineCookie(ctx context.Context) (uint64, error) {
	s, err := d.connected()
	if err != nil {
		return 0, err
	}
	resp, err := s.client.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: d.cfg.DeviceID, ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY,
	})
	if status.Code(err) == codes.FailedPrecondition {
		return 0, nil // some servers answer so when no pipeline was ever set
	}
	if err != nil {
		return 0, fmt.Errorf("reading the pipeline cookie: %w", err)
	}
	return resp.GetConfig().GetCookie().GetCookie(), nil
}

// SetPipeline pushes a pipeline with VERIFY_AND_COMMIT (primary only). On success names
// resolve against p4info.
func (d *Device) SetPipeline(ctx context.Context, p4info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	sch, err := NewSchema(p4info) // refuse what cannot be used before disturbing the device
	if err != nil {
		return fmt.Errorf("pipeline not pushed: %w", err)
	}
	s, err := d.primary()
	if err != nil {
		return err
	}
	_, err = s.client.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId:   d.cfg.DeviceID,
		Role:       d.cfg.Role,
		ElectionId: s.electionID(),
		Action:     p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config: &p4v1.ForwardingPipelineConfig{
			P4Info:         p4info,
			P4DeviceConfig: deviceConfig,
			Cookie:         &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie},
		},
	})
	d.m.pipelinePush(d.cfg.Name, status.Code(err))
	if err != nil {
		return fmt.Errorf("pushing the pipeline: %w", err)
	}
	d.adoptSchema(sch)
	d.log.Info("pipeline pushed", "cookie", cookie)
	return nil
}

// EnsurePipeline makes the device run the given pipeline: it pushes only when policy says so
// (by default when the device's cookie differs from cookie) and reports whether it pushed,
// in which case the device lost all its state and everything must be written again. Either
// way, names resolve against p4info afterwards.
func (d *Device) EnsurePipeline(ctx context.Context, p4info *p4configv1.P4Info, deviceConfig []byte, cookie uint64, policy PushPolicy) (pushed bool, err error) {
	if cookie == 0 {
		return false, fmt.Errorf("pipeline cookie 0 means \"no pipeline\": use Cookie(p4info, deviceConfig)")
	}
	if policy != PushAlways {
		have, err := d.GetPipelineCookie(ctx)
		if err != nil {
			return false, err
		}
		if have == cookie {
			sch, err := NewSchema(p4info)
			if err != nil {
				return false, err
			}
			d.adoptSchema(sch)
			return false, nil
		}
		if policy == PushNever {
			return false, fmt.Errorf("the device runs pipeline cookie %d, expected %d, and the push policy is %s", have, cookie, policy)
		}
	}
	if err := d.SetPipeline(ctx, p4info, deviceConfig, cookie); err != nil {
		return false, err
	}
	return true, nil
}

// LoadPipeline fetches the device's P4Info and resolves names against it, for a controller
// that does not own the pipeline (a backup, a read-only tool). It returns the device's cookie.
func (d *Device) LoadPipeline(ctx context.Context) (uint64, error) {
	s, err := d.connected()
	if err != nil {
		return 0, err
	}
	resp, err := s.client.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: d.cfg.DeviceID, ResponseType: p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE,
	})
	if err != nil {
		return 0, fmt.Errorf("reading the pipeline: %w", err)
	}
	info := resp.GetConfig().GetP4Info()
	if info == nil {
		return 0, fmt.Errorf("the device has no pipeline: %w", ErrNoPipeline)
	}
	sch, err := NewSchema(info)
	if err != nil {
		return 0, err
	}
	d.adoptSchema(sch)
	return resp.GetConfig().GetCookie().GetCookie(), nil
}

// adoptSchema makes names resolve against sch, but keeps the schema in use when its P4Info is
// the same: what was built against it stays valid, so a programmer replaying after a reconnect
// or a device restart does not build every entry again (3.8 s of a 100,000-session replay).
func (d *Device) adoptSchema(sch *Schema) {
	if cur := d.schema.Load(); cur != nil && proto.Equal(cur.P4Info(), sch.P4Info()) {
		return
	}
	d.schema.Store(sch)
}
