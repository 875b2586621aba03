package p4rt

import (
	"bytes"
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// SetForwardingPipelineConfig verifies, saves and commits pipelines (spec section 14); the
// primary only.
//
//   - VERIFY: the server compiles the P4Info and asks Target.CheckPipeline; nothing changes.
//   - VERIFY_AND_SAVE: verified, then Reads and Writes refer to the new pipeline, whose state
//     is kept by the server only; the Target keeps running the old one.
//   - COMMIT: the saved pipeline is committed to the Target and everything written since the
//     save is replayed (entries, default actions, clone sessions, register, counter and meter
//     cells).
//   - VERIFY_AND_COMMIT: verified and committed with empty state.
//   - RECONCILE_AND_COMMIT: when the P4Info equals the running one, the state is kept: with the
//     same device config nothing reaches the Target (only the cookie changes); with another
//     device config the Target recommits and the server replays entries, default actions and
//     clone sessions (register and counter cells restart from 0, meter cells from the default
//     config). A different P4Info is handled as VERIFY_AND_COMMIT (state cleared) rather than
//     refused.
func (s *Server) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	s.state.Lock()
	defer s.state.Unlock()
	if err := s.arb.checkPrimary(req.DeviceId, req.Role, req.ElectionId); err != nil {
		return nil, rpcErr(err)
	}
	var err error
	switch req.Action {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY:
		_, err = s.verify(req.Config)
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE:
		err = s.save(req.Config)
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		err = s.verifyAndCommit(req.Config)
	case p4v1.SetForwardingPipelineConfigRequest_COMMIT:
		err = s.commitSaved(req.Config)
	case p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		err = s.reconcile(req.Config)
	default:
		err = errf(codes.InvalidArgument, "action %v: use VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT or RECONCILE_AND_COMMIT", req.Action)
	}
	if err != nil {
		return nil, rpcErr(err)
	}
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// verify checks that the server and the Target can run cfg.
func (s *Server) verify(cfg *p4v1.ForwardingPipelineConfig) (*schema, error) {
	if cfg.GetP4Info() == nil {
		return nil, errf(codes.InvalidArgument, "config with a p4info is required")
	}
	sch, err := compileP4Info(cfg.P4Info)
	if err != nil {
		return nil, err
	}
	if err := s.target.CheckPipeline(cfg.P4Info, cfg.P4DeviceConfig); err != nil {
		return nil, errf(codes.InvalidArgument, "the target cannot run this pipeline: %v", err)
	}
	return sch, nil
}

func (s *Server) save(cfg *p4v1.ForwardingPipelineConfig) error {
	sch, err := s.verify(cfg)
	if err != nil {
		return err
	}
	s.active = newPipeline(sch, cfg, false)
	s.log.Info("pipeline saved", "cookie", cfg.GetCookie().GetCookie())
	return nil
}

func (s *Server) verifyAndCommit(cfg *p4v1.ForwardingPipelineConfig) error {
	sch, err := s.verify(cfg)
	if err != nil {
		return err
	}
	return s.commit(newPipeline(sch, cfg, true), false)
}

func (s *Server) commitSaved(cfg *p4v1.ForwardingPipelineConfig) error {
	if cfg != nil {
		return errf(codes.InvalidArgument, "COMMIT takes no config: it commits the one saved by VERIFY_AND_SAVE")
	}
	if s.active == nil || s.active.committed {
		return errf(codes.NotFound, "no saved config to commit: send VERIFY_AND_SAVE first")
	}
	p := s.active
	p.committed = true
	if err := s.commit(p, true); err != nil {
		p.committed = false
		return err
	}
	return nil
}

func (s *Server) reconcile(cfg *p4v1.ForwardingPipelineConfig) error {
	sch, err := s.verify(cfg)
	if err != nil {
		return err
	}
	run := s.running.Load()
	if run == nil || !proto.Equal(run.config.GetP4Info(), cfg.P4Info) {
		return s.commit(newPipeline(sch, cfg, true), false)
	}
	p := run.withConfig(cfg)
	if bytes.Equal(run.config.GetP4DeviceConfig(), cfg.P4DeviceConfig) {
		s.active = p
		s.running.Store(p)
		s.log.Info("pipeline reconciled: state kept", "cookie", cfg.GetCookie().GetCookie())
		return nil
	}
	p.clearCells()
	return s.commit(p, true)
}

// commit makes the Target run p, replays p's state when asked, and makes p current.
func (s *Server) commit(p *pipeline, replay bool) error {
	if err := s.target.CommitPipeline(p.schema.Info, p.config.P4DeviceConfig); err != nil {
		return targetErr(err, codes.Internal, "committing the pipeline")
	}
	// From here the Target runs p whatever happens next.
	s.active = p
	s.running.Store(p)
	s.digests.reset(p.schema, p.digestCfg)
	if replay {
		if err := p.replay(s.target, true); err != nil {
			return errf(codes.Internal, "replaying state into the committed pipeline: %v", err)
		}
		p.clearCells()
	}
	s.log.Info("pipeline committed", "cookie", p.config.GetCookie().GetCookie(), "replayed", replay)
	return nil
}

// GetForwardingPipelineConfig returns the current config (the saved one after
// VERIFY_AND_SAVE), or an unset config when there is none. Any controller may ask.
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if err := s.checkDevice(req.DeviceId); err != nil {
		return nil, rpcErr(err)
	}
	s.state.RLock()
	p := s.active
	s.state.RUnlock()
	if p == nil {
		return &p4v1.GetForwardingPipelineConfigResponse{}, nil
	}
	out := &p4v1.ForwardingPipelineConfig{Cookie: p.config.Cookie}
	switch req.ResponseType {
	case p4v1.GetForwardingPipelineConfigRequest_ALL:
		out.P4Info, out.P4DeviceConfig = p.config.P4Info, p.config.P4DeviceConfig
	case p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY:
	case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
		out.P4Info = p.config.P4Info
	case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
		out.P4DeviceConfig = p.config.P4DeviceConfig
	default:
		return nil, rpcStatus(codes.InvalidArgument, fmt.Sprintf("unknown response_type %d", req.ResponseType))
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: out}, nil
}
