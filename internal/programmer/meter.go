package programmer

// Meter cells: what an owner wants configured (a session's MBR policer, desired.SessionMeters),
// beside its table entries. A cell is indexed by the owner's usage cell, which one session holds
// at a time, so cells are never contended. The programmer writes a cell when what its owner
// wants differs from what it wrote last (meterOn), resets one its owner stopped naming, and
// resets both MBR cells of a usage cell it zeroes for a session that wants none there (a cell
// that held another session's policer: usageZeroLocked). After a replay what the device holds
// is unknown, so every wanted cell is written again; cells nobody wants are reset when a session
// next takes them.

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/junction-atsss/junction/internal/desired"
)

// The MBR policer's meters (desired names them).
const (
	MeterUplinkMBR   = desired.MeterUplinkMBR
	MeterDownlinkMBR = desired.MeterDownlinkMBR
)

type meterKey struct {
	meter string
	index uint32
}

type meterWant struct {
	owner  string
	config desired.MeterConfig
}

// setMetersLocked replaces an owner's wanted meter cells; a cell it no longer names is to be
// reset. It reports whether it dropped any.
func (p *Programmer) setMetersLocked(owner string, cells []desired.MeterCell) (dropped bool) {
	next := make([]meterKey, 0, len(cells))
	for _, c := range cells {
		k := meterKey{c.Meter, c.Index}
		next = append(next, k)
		p.meterWant[k] = meterWant{owner, c.Config}
	}
	for _, k := range p.ownerMeters[owner] {
		if slices.Contains(next, k) {
			continue
		}
		if w, ok := p.meterWant[k]; ok && w.owner == owner {
			delete(p.meterWant, k)
		}
		p.meterReset[k] = owner
		dropped = true
	}
	if len(next) == 0 {
		delete(p.ownerMeters, owner)
	} else {
		p.ownerMeters[owner] = next
	}
	return dropped
}

// metersInSyncLocked: the owner's cells hold what it wants and none it dropped waits for a reset.
func (p *Programmer) metersInSyncLocked(owner string) bool {
	for _, k := range p.ownerMeters[owner] {
		if on, ok := p.meterOn[k]; !ok || on != p.meterWant[k].config {
			return false
		}
	}
	for _, o := range p.meterReset {
		if o == owner {
			return false
		}
	}
	return true
}

// meterPlanLocked plans the writes of the owners' cells that differ from the device's, the
// resets of cells dropped or zeroed (zeroed: the counted cells this round zeroes, whose MBR or
// QoS flow policer cells go with them), skipping a
// cell someone wants configured. A cell the pipeline does not have (a P4Info without the
// meter, an index beyond it) is its owner's error, never a silent success.
func (p *Programmer) meterPlanLocked(owners []string, zeroed []pendingUpdate, ownerErr map[string]error) []pendingUpdate {
	var out []pendingUpdate
	planned := map[meterKey]bool{}
	plan := func(k meterKey, owner string, cfg *desired.MeterConfig) {
		if planned[k] {
			return
		}
		planned[k] = true
		var mc *p4v1.MeterConfig
		if cfg != nil {
			mc = &p4v1.MeterConfig{Cir: cfg.CIR, Cburst: cfg.CBurst, Pir: cfg.PIR, Pburst: cfg.PBurst}
		}
		u, err := p.sch.MeterUpdate(k.meter, int64(k.index), mc)
		if err != nil {
			p.log.Error(err, "Meter cell not planned", "meter", k.meter, "index", k.index)
			if cfg != nil && owner != "" {
				if ownerErr[owner] == nil {
					ownerErr[owner] = err
				}
				p.failed[owner] = err
			}
			return
		}
		out = append(out, pendingUpdate{u: u, table: k.meter, owner: owner, user: k.index, meter: true, meterCfg: cfg})
	}
	for _, o := range owners {
		for _, k := range p.ownerMeters[o] {
			w := p.meterWant[k]
			if on, ok := p.meterOn[k]; !ok || on != w.config {
				plan(k, o, &w.config)
			}
		}
	}
	for _, k := range sortedMeterKeys(p.meterReset) {
		if _, wanted := p.meterWant[k]; wanted {
			delete(p.meterReset, k) // taken by a session that configures it
			continue
		}
		plan(k, p.meterReset[k], nil)
	}
	for _, z := range zeroed {
		meters := []string{MeterUplinkMBR, MeterDownlinkMBR}
		if z.zero.flow {
			meters = []string{desired.MeterUplinkFlowMBR, desired.MeterDownlinkFlowMBR}
		}
		for _, m := range meters {
			k := meterKey{m, z.user}
			if _, wanted := p.meterWant[k]; !wanted && p.hasMeter(m) {
				plan(k, z.owner, nil)
			}
		}
	}
	return out
}

// hasMeter: the pipeline has the meter (one pushed before meters were added has not).
func (p *Programmer) hasMeter(name string) bool {
	_, err := p.sch.MeterUpdate(name, 0, nil)
	return err == nil
}

// settleMeterLocked records a meter write's result; a refused one is the owner's error, and
// is tried again in the next round (a reset) or the owner's next change (a configuration).
func (p *Programmer) settleMeterLocked(pu pendingUpdate, err error, ownerErr map[string]error) {
	k := meterKey{pu.table, pu.user}
	if err == nil {
		if pu.meterCfg != nil {
			p.meterOn[k] = *pu.meterCfg
		} else {
			delete(p.meterOn, k)
			delete(p.meterReset, k)
		}
		return
	}
	delete(p.meterOn, k) // unknown now
	p.log.Error(err, "Meter cell not written", "meter", pu.table, "index", pu.user)
	if pu.owner != "" {
		if ownerErr[pu.owner] == nil {
			ownerErr[pu.owner] = err
		}
		p.failed[pu.owner] = err
	}
}

func sortedMeterKeys[V any](m map[meterKey]V) []meterKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b meterKey) int {
		return cmp.Or(strings.Compare(a.meter, b.meter), cmp.Compare(a.index, b.index))
	})
}
