package p4rt

import (
	"fmt"

	"github.com/junction-atsss/junction/internal/p4schema"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// pipeline is one forwarding-pipeline config and everything written against it. Table entries
// are kept compactly (key string -> entryValue) so that half a million of them stay small; the
// protos a Read returns are rebuilt from this form.
type pipeline struct {
	schema    *schema
	config    *p4v1.ForwardingPipelineConfig
	committed bool // false between VERIFY_AND_SAVE and COMMIT: the Target does not run it yet

	tables    map[uint32]*tableState
	clones    map[uint32]*p4v1.CloneSessionEntry
	mcast     map[uint32]*p4v1.MulticastGroupEntry
	digestCfg map[uint32]*p4v1.DigestEntry_Config

	// Register, counter and meter cells written while the pipeline is saved but not committed;
	// the Target resets every cell on commit, so these are the whole state to replay. A nil
	// meter config is the default (a reset).
	regShadow map[uint32]map[int64]uint64
	ctrShadow map[uint32]map[int64]counterCell
	mtrShadow map[uint32]map[int64]*p4v1.MeterConfig
}

type tableState struct {
	info    *p4schema.Table
	entries map[string]entryValue
	// defaultEntry is the default entry a client set (MODIFY with is_default_action), in
	// canonical form; nil while the P4 program's default applies.
	defaultEntry *p4v1.TableEntry
}

// entryValue is the non-key part of a table entry.
type entryValue struct {
	action      uint32
	params      string // writer.packParams encoding
	metadata    string
	ctrlMeta    uint64
	idleTimeout int64
}

type counterCell struct{ packets, bytes uint64 }

func newPipeline(sch *schema, cfg *p4v1.ForwardingPipelineConfig, committed bool) *pipeline {
	p := &pipeline{
		schema:    sch,
		config:    cfg,
		committed: committed,
		tables:    make(map[uint32]*tableState, len(sch.Tables)),
		clones:    map[uint32]*p4v1.CloneSessionEntry{},
		mcast:     map[uint32]*p4v1.MulticastGroupEntry{},
		digestCfg: map[uint32]*p4v1.DigestEntry_Config{},
	}
	p.clearCells()
	for _, ti := range sch.Tables {
		p.tables[ti.ID] = &tableState{info: ti, entries: map[string]entryValue{}}
	}
	return p
}

// clearCells forgets the shadow cells (replayed, or lost with a recommit).
func (p *pipeline) clearCells() {
	p.regShadow = map[uint32]map[int64]uint64{}
	p.ctrShadow = map[uint32]map[int64]counterCell{}
	p.mtrShadow = map[uint32]map[int64]*p4v1.MeterConfig{}
}

// withConfig returns a copy of p's state bound to a new config object (same P4Info), used by
// RECONCILE_AND_COMMIT to keep entries while the cookie or device config changes.
func (p *pipeline) withConfig(cfg *p4v1.ForwardingPipelineConfig) *pipeline {
	q := *p
	q.config = cfg
	return &q
}

// entryProto rebuilds the TableEntry of a stored key and value.
func (p *pipeline) entryProto(ts *tableState, key string, v entryValue) *p4v1.TableEntry {
	match, prio := decodeKey(ts.info, key)
	te := &p4v1.TableEntry{
		TableId:            ts.info.ID,
		Match:              match,
		Priority:           prio,
		ControllerMetadata: v.ctrlMeta,
		IdleTimeoutNs:      v.idleTimeout,
	}
	if v.metadata != "" {
		te.Metadata = []byte(v.metadata)
	}
	if ai, ok := p.schema.ActionByID(v.action); ok {
		te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: v.action,
			Params:   unpackParams(ai, v.params),
		}}}
	}
	return te
}

// defaultEntryProto is the table's default entry as a Read returns it.
func defaultEntryProto(ts *tableState) *p4v1.TableEntry {
	if ts.defaultEntry != nil {
		return ts.defaultEntry
	}
	te := &p4v1.TableEntry{TableId: ts.info.ID, IsDefaultAction: true}
	if ts.info.InitialDefault != nil {
		te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: proto.Clone(ts.info.InitialDefault).(*p4v1.Action)}}
	}
	return te
}

// replay pushes p's whole state to a Target that has just committed p's P4Info (COMMIT after
// VERIFY_AND_SAVE, or RECONCILE_AND_COMMIT with a new device config).
func (p *pipeline) replay(t Target, withCells bool) error {
	for _, ti := range p.schema.Tables {
		id, ts := ti.ID, p.tables[ti.ID]
		if ts.defaultEntry != nil {
			if err := t.SetDefaultAction(id, ts.defaultEntry.GetAction().GetAction()); err != nil {
				return fmt.Errorf("default action of table %q: %w", ts.info.Name, err)
			}
		}
		for k, v := range ts.entries {
			if err := t.WriteTableEntry(p4v1.Update_INSERT, p.entryProto(ts, k, v)); err != nil {
				return fmt.Errorf("entry of table %q: %w", ts.info.Name, err)
			}
		}
	}
	for id, cs := range p.clones {
		if err := t.WriteCloneSession(id, cs.Replicas); err != nil {
			return fmt.Errorf("clone session %d: %w", id, err)
		}
	}
	if !withCells {
		return nil
	}
	for id, cells := range p.regShadow {
		for idx, v := range cells {
			if err := t.WriteRegister(id, uint32(idx), v); err != nil {
				return fmt.Errorf("register %q[%d]: %w", registerName(p.schema, id), idx, err)
			}
		}
	}
	for id, cells := range p.ctrShadow {
		for idx, c := range cells {
			if err := t.WriteCounter(id, uint32(idx), c.packets, c.bytes); err != nil {
				return fmt.Errorf("counter %q[%d]: %w", counterName(p.schema, id), idx, err)
			}
		}
	}
	for id, cells := range p.mtrShadow {
		for idx, c := range cells {
			if c == nil {
				continue // the commit already reset the cell to the default
			}
			if err := t.WriteMeter(id, uint32(idx), c); err != nil {
				return fmt.Errorf("meter %q[%d]: %w", meterName(p.schema, id), idx, err)
			}
		}
	}
	return nil
}
