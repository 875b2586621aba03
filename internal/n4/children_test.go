package n4

import (
	"errors"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
)

// TestChildrenOfAGroupedIE checks the rules docs/n4.md ("Refused, and with which cause") gives
// for a grouped IE's children: an IE repeated that may appear once is refused with cause 69
// naming it, a repeatable one is not, a child Junction does not apply is refused with cause 76
// naming the lowest such type, and a missing one with cause 66.
func TestChildrenOfAGroupedIE(t *testing.T) {
	refusal := func(err error) *Refusal {
		var r *Refusal
		if !errors.As(err, &r) {
			t.Fatalf("%v is no refusal", err)
		}
		return r
	}
	pdi := ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), ie.NewSDFFilter("permit out ip from any to assigned", "", "", "", 1),
		ie.NewSDFFilter("permit out ip from 192.0.2.1 to assigned", "", "", "", 2))

	c, err := childrenOf(pdi, ie.SDFFilter)
	if err != nil {
		t.Fatalf("two SDF filters (repeatable): %v", err)
	}
	if got := len(c.all(ie.SDFFilter)); got != 2 {
		t.Errorf("all(SDF Filter) = %d IEs, want 2", got)
	}
	if x, err := c.need(ie.SourceInterface); err != nil || x.Type != ie.SourceInterface {
		t.Errorf("need(Source Interface) = %v, %v", x, err)
	}
	if r := refusal(c.only(ie.SourceInterface)); r.Cause != 76 || r.OffendingIE != ie.SDFFilter {
		t.Errorf("only(Source Interface) = cause %d offending %d, want 76 and SDF Filter (%d)", r.Cause, r.OffendingIE, ie.SDFFilter)
	}
	if r := refusal(c.only()); r.OffendingIE != ie.SourceInterface {
		t.Errorf("only() names IE %d, want the lowest unknown type, Source Interface (%d)", r.OffendingIE, ie.SourceInterface)
	}
	if _, err := childrenOf(pdi); err == nil {
		t.Error("two SDF filters where one may appear: no refusal")
	} else if r := refusal(err); r.Cause != 69 || r.OffendingIE != ie.SDFFilter {
		t.Errorf("two SDF filters where one may appear: cause %d offending %d, want 69 and SDF Filter", r.Cause, r.OffendingIE)
	}
	if _, err := c.need(ie.UEIPAddress); err == nil {
		t.Error("need(UE IP Address) of a PDI without one: no refusal")
	} else if r := refusal(err); r.Cause != 66 || r.OffendingIE != ie.UEIPAddress {
		t.Errorf("need(UE IP Address) = cause %d offending %d, want 66 and UE IP Address", r.Cause, r.OffendingIE)
	}
}
