package dataplane

import (
	"fmt"
	"sync"
	"sync/atomic"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
)

// A PDU session's MBR policer: the P4 program's uplink_mbr and downlink_mbr, indirect byte
// meters indexed by usage_idx, each cell a two-rate three-colour marker (RFC 2698, colour-blind)
// as BMv2 runs it: both buckets start full when a configuration is written; a packet of B bytes
// is red if the peak bucket holds fewer than B tokens, else yellow if the committed bucket does,
// else green; yellow takes B from the peak bucket, green from both. The pipeline drops red only
// (mbr_drops counts it), so the peak rate and burst are what police.
//
// A cell the controller never configured, or reset, is nil: every packet green, at the cost of
// one atomic load. Cells are pointers so that a meter as large as the usage counters costs 8
// bytes a cell until it is used.
//
// Time is the pipeline's microsecond clock (Config.Now), which wraps after 71 minutes: a cell
// idle for longer refills by the time modulo the wrap, so in the rare case the remainder is
// below the time its bucket takes to fill, its first burst after the pause finds the bucket
// part full.

type meterKind uint8

const (
	mUplinkMBR meterKind = iota
	mDownlinkMBR
	// A QoS flow's policer (qos_flows), which a program may lack (resolveSchema).
	mUplinkFlowMBR
	mDownlinkFlowMBR
	numMeters
)

// meterSpecs name the meters (all count bytes; sizes are the P4Info's).
var meterSpecs = [numMeters]string{
	mUplinkMBR:       "uplink_mbr",
	mDownlinkMBR:     "downlink_mbr",
	mUplinkFlowMBR:   "uplink_flow_mbr",
	mDownlinkFlowMBR: "downlink_flow_mbr",
}

// flowMeter is the QoS flow meter of the direction of a session's meter.
var flowMeter = [numMeters]meterKind{mUplinkMBR: mUplinkFlowMBR, mDownlinkMBR: mDownlinkFlowMBR}

// mbrDropCell is the direction's cell of mbr_drops: uplink 0, downlink 1.
var mbrDropCell = [numMeters]uint32{mUplinkMBR: 0, mDownlinkMBR: 1, mUplinkFlowMBR: 0, mDownlinkFlowMBR: 1}

// flowCounters are a QoS flow's usage and policed counters, by direction (mUplinkMBR, mDownlinkMBR).
var flowCounters = [2][2]counterKind{{cUplinkFlowUsage, cUplinkFlowPoliced}, {cDownlinkFlowUsage, cDownlinkFlowPoliced}}

// policedCounters count, at a session's cell, what each meter dropped.
var policedCounters = [numMeters]counterKind{mUplinkMBR: cUplinkPoliced, mDownlinkMBR: cDownlinkPoliced,
	mUplinkFlowMBR: cUplinkPoliced, mDownlinkFlowMBR: cDownlinkPoliced}

type meterColour uint8

const (
	green meterColour = iota
	yellow
	red
)

// tokenScale: tokens are kept in bytes × 10⁶, so that a refill of rate (bytes/s) × Δt (µs)
// is exact in integers.
const tokenScale = 1_000_000

// maxRefillUS bounds Δt so that rate × Δt cannot overflow (10 s × maxMeterRate is 1e18):
// 10 s fills any bucket at any rate above 100 kB/s.
const maxRefillUS = 10_000_000

type meterCell struct {
	config         *p4v1.MeterConfig // as written, for reads
	mu             sync.Mutex
	cir, pir       int64 // bytes per second
	cburst, pburst int64 // bytes × tokenScale
	tc, tp         int64 // tokens, bytes × tokenScale
	last           uint32
}

// The largest rate and burst a cell keeps (a larger one is clamped, which polices nothing a
// port can carry): 800 Gbit/s and 1 TB, so that no product below overflows.
const (
	maxMeterRate  = 100_000_000_000
	maxMeterBurst = 1_000_000_000_000
)

func newMeterCell(cfg *p4v1.MeterConfig, now uint32) *meterCell {
	m := &meterCell{
		config: proto.Clone(cfg).(*p4v1.MeterConfig),
		cir:    min(cfg.Cir, maxMeterRate), pir: min(cfg.Pir, maxMeterRate),
		cburst: min(cfg.Cburst, maxMeterBurst) * tokenScale, pburst: min(cfg.Pburst, maxMeterBurst) * tokenScale,
		last: now,
	}
	m.tc, m.tp = m.cburst, m.pburst
	return m
}

// mark colours a packet of size bytes at time now.
func (m *meterCell) mark(size int, now uint32) meterColour {
	b := int64(size) * tokenScale
	m.mu.Lock()
	defer m.mu.Unlock()
	if dt := int64(now - m.last); dt > 0 {
		m.last = now
		dt = min(dt, maxRefillUS)
		m.tc = min(m.cburst, m.tc+m.cir*dt)
		m.tp = min(m.pburst, m.tp+m.pir*dt)
	}
	switch {
	case m.tp < b:
		return red
	case m.tc < b:
		m.tp -= b
		return yellow
	}
	m.tp -= b
	m.tc -= b
	return green
}

// police runs the policers of one direction (k: mUplinkMBR or mDownlinkMBR) on the packet
// being processed, which usage has counted, and reports whether it is red; the caller drops it.
// A packet in a QoS flow of its own (fq, qos_flows) is counted in the flow's usage and meets the
// flow's cell first: red there is counted in mbr_drops (cell: the direction), in the direction's
// policed counter at usage, the session's usage cell, and in the flow's policed counter.
// Then the session's, at the cell mbr_sessions gives its UE address (the user packet's source
// on the uplink, destination on the downlink; no entry: not policed), unless the flow is a GBR
// flow (outside the Session-AMBR): red there is counted likewise, at that cell (and in the
// flow's policed counter).
func (c *proc) police(k meterKind, ueAddr uint32, fq qosFlow, usage uint32) bool {
	if fq.ok {
		c.st.add(flowCounters[k][0], fq.cell, c.inLen)
		if c.red(flowMeter[k], fq.cell) {
			c.st.add(cMBRDrops, mbrDropCell[k], c.inLen)
			c.st.add(policedCounters[k], usage, c.inLen)
			c.st.add(flowCounters[k][1], fq.cell, c.inLen)
			return true
		}
		if fq.gbr {
			return false
		}
	}
	cell, ok := c.t.mbr.lookup(ueAddr)
	if !ok || !c.red(k, cell) {
		return false
	}
	c.st.add(cMBRDrops, mbrDropCell[k], c.inLen)
	c.st.add(policedCounters[k], cell, c.inLen)
	if fq.ok {
		c.st.add(flowCounters[k][1], fq.cell, c.inLen)
	}
	return true
}

// red marks the packet at cell of meter k (a cell out of range, or never configured: green).
func (c *proc) red(k meterKind, cell uint32) bool {
	cells := c.st.meters[k]
	if uint64(cell) >= uint64(len(cells)) {
		return false
	}
	m := cells[cell].Load()
	return m != nil && m.mark(c.inLen, c.clock()) == red
}

func (p *Pipeline) meter(id, index uint32) (*atomic.Pointer[meterCell], error) {
	st, err := p.writable()
	if err != nil {
		return nil, err
	}
	k, ok := st.schema.meters[id]
	if !ok {
		return nil, fmt.Errorf("meter %d is not implemented by the software UPF", id)
	}
	cells := st.meters[k]
	if uint64(index) >= uint64(len(cells)) {
		return nil, fmt.Errorf("meter %q index %d out of range (size %d)", meterSpecs[k], index, len(cells))
	}
	return &cells[index], nil
}

// ReadMeter returns one meter cell's configuration, nil if it has none.
func (p *Pipeline) ReadMeter(id, index uint32) (*p4v1.MeterConfig, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c, err := p.meter(id, index)
	if err != nil {
		return nil, err
	}
	if m := c.Load(); m != nil {
		return proto.Clone(m.config).(*p4v1.MeterConfig), nil
	}
	return nil, nil
}

// WriteMeter configures one meter cell with full buckets, or resets it (nil: every packet green).
func (p *Pipeline) WriteMeter(id, index uint32, config *p4v1.MeterConfig) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c, err := p.meter(id, index)
	if err != nil {
		return err
	}
	if config == nil {
		c.Store(nil)
		return nil
	}
	c.Store(newMeterCell(config, p.now()))
	return nil
}
