// Package pfcpsimpeer reads the answers omec-project/pfcpsim's PFCP client hands back, for the
// tests that use it as an SMF written apart from Junction (test/operator, test/ueagent).
package pfcpsimpeer

import (
	"testing"

	"github.com/omec-project/pfcpsim/pkg/pfcpsim"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"
)

// Accepted reads pfcpsim's next response, which must be a T with Cause Request accepted.
func Accepted[T message.Message](t testing.TB, c *pfcpsim.PFCPClient, what string) T {
	t.Helper()
	m, err := c.PeekNextResponse()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	resp, ok := m.(T)
	if !ok {
		t.Fatalf("%s: got %T", what, m)
	}
	b := make([]byte, m.MarshalLen())
	if err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	h, err := message.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	ies, err := ie.ParseMultiIEs(h.Payload)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ies {
		if x.Type == ie.Cause {
			if cause, _ := x.Cause(); cause != ie.CauseRequestAccepted {
				t.Fatalf("%s: cause %d", what, cause)
			}
			return resp
		}
	}
	t.Fatalf("%s: no Cause", what)
	return resp
}
