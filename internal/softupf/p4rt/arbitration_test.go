package p4rt

import (
	"context"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestCapabilitiesReportsVersion(t *testing.T) {
	h := newHarness(t, Options{})
	r, err := h.client.Capabilities(context.Background(), &p4v1.CapabilitiesRequest{})
	if err != nil || r.P4RuntimeApiVersion != "1.4.1" {
		t.Fatalf("Capabilities = %v, %v", r, err)
	}
}

func TestHigherElectionIDTakesOverAndBackupsAreTold(t *testing.T) {
	h := newHarness(t, Options{})
	a := h.primary(10)

	b := h.open()
	b.arbitrate(testDevice, nil, eid(20))
	// The old primary hears first that someone else is primary now.
	m, c := a.arbitration()
	if c != codes.AlreadyExists || fromProto(m.ElectionId) != (u128{0, 20}) {
		t.Fatalf("old primary got %v election %v, want ALREADY_EXISTS with election 20", c, m.ElectionId)
	}
	if _, c := b.arbitration(); c != codes.OK {
		t.Fatalf("new primary got %v, want OK", c)
	}

	// A lower election ID joins as a backup and only it is told.
	low := h.open()
	low.arbitrate(testDevice, nil, eid(5))
	if m, c := low.arbitration(); c != codes.AlreadyExists || fromProto(m.ElectionId) != (u128{0, 20}) {
		t.Fatalf("backup got %v election %v, want ALREADY_EXISTS with the primary's election 20", c, m.ElectionId)
	}
	// An unset election ID is lower than all: also a backup.
	none := h.open()
	none.arbitrate(testDevice, nil, nil)
	if _, c := none.arbitration(); c != codes.AlreadyExists {
		t.Fatalf("unset election got %v, want ALREADY_EXISTS", c)
	}

	// Only the primary writes.
	if err := h.setPipeline(testP4Info(), 10, 1); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("pipeline from old primary: %v, want PERMISSION_DENIED", err)
	}
	if err := h.setPipeline(testP4Info(), 20, 1); err != nil {
		t.Fatalf("pipeline from primary: %v", err)
	}
	if err := h.write(10, ins(exactEntry(1, 1))); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("write from backup: %v, want PERMISSION_DENIED", err)
	}
	if err := h.write(20, ins(exactEntry(1, 1))); err != nil {
		t.Fatalf("write from primary: %v", err)
	}
	a.quiet()
	low.quiet()
}

func TestPrimaryLossLeavesNoPrimaryUntilAHighEnoughElection(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.primary(2)
	b := h.open()
	b.arbitrate(testDevice, nil, eid(1))
	b.arbitration()

	p.cancel() // the primary's stream breaks
	m, c := b.arbitration()
	if c != codes.NotFound || fromProto(m.ElectionId) != (u128{0, 2}) {
		t.Fatalf("backup got %v election %v after primary loss, want NOT_FOUND with highest election 2", c, m.ElectionId)
	}
	if err := h.write(1, ins(exactEntry(1, 1))); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("write with no primary: %v, want PERMISSION_DENIED", err)
	}
	// The backup's election (1) is below the highest ever seen (2): it must bid at least 2.
	b.arbitrate(testDevice, nil, eid(1))
	if _, c := b.arbitration(); c != codes.NotFound {
		t.Fatalf("re-arbitration with 1 got %v, want NOT_FOUND", c)
	}
	b.arbitrate(testDevice, nil, eid(2))
	if _, c := b.arbitration(); c != codes.OK {
		t.Fatalf("re-arbitration with 2 got %v, want OK", c)
	}
}

func TestPrimaryDowngradeTellsEveryone(t *testing.T) {
	h := newHarness(t, Options{})
	p := h.primary(5)
	b := h.open()
	b.arbitrate(testDevice, nil, eid(3))
	b.arbitration()

	p.arbitrate(testDevice, nil, eid(1)) // steps down below the highest
	if _, c := p.arbitration(); c != codes.NotFound {
		t.Fatalf("downgraded primary got %v, want NOT_FOUND", c)
	}
	if _, c := b.arbitration(); c != codes.NotFound {
		t.Fatalf("backup got %v, want NOT_FOUND", c)
	}
}

func TestArbitrationRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	h.primary(7)

	dup := h.open()
	dup.arbitrate(testDevice, nil, eid(7))
	if c := dup.ended(); c != codes.InvalidArgument {
		t.Errorf("duplicate election id: stream ended with %v, want INVALID_ARGUMENT", c)
	}
	wrong := h.open()
	wrong.arbitrate(testDevice+1, nil, eid(8))
	if c := wrong.ended(); c != codes.NotFound {
		t.Errorf("unknown device: stream ended with %v, want NOT_FOUND", c)
	}
	roleChange := h.open()
	roleChange.arbitrate(testDevice, nil, eid(3))
	roleChange.arbitration()
	roleChange.arbitrate(testDevice, &p4v1.Role{Name: "other"}, eid(3))
	if c := roleChange.ended(); c != codes.FailedPrecondition {
		t.Errorf("role change on a stream: ended with %v, want FAILED_PRECONDITION", c)
	}
	devChange := h.open()
	devChange.arbitrate(testDevice, nil, eid(4))
	devChange.arbitration()
	devChange.arbitrate(testDevice+1, nil, eid(4))
	if c := devChange.ended(); c != codes.FailedPrecondition {
		t.Errorf("device change on a stream: ended with %v, want FAILED_PRECONDITION", c)
	}
	cfg, _ := anypb.New(wrapperspb.String("x"))
	defCfg := h.open()
	defCfg.arbitrate(testDevice, &p4v1.Role{Config: cfg}, eid(9))
	if c := defCfg.ended(); c != codes.InvalidArgument {
		t.Errorf("config for the default role: ended with %v, want INVALID_ARGUMENT", c)
	}
}

func TestNamedRolesArbitrateIndependently(t *testing.T) {
	h := newHarness(t, Options{})
	def := h.primary(1)
	if err := h.setPipeline(testP4Info(), 1, 1); err != nil {
		t.Fatal(err)
	}
	cfg, _ := anypb.New(wrapperspb.String("tables: exact_t"))
	r := h.open()
	r.arbitrate(testDevice, &p4v1.Role{Name: "steering", Config: cfg}, eid(1)) // same number, other role
	m, c := r.arbitration()
	if c != codes.OK || m.Role.GetName() != "steering" || !proto.Equal(m.Role.GetConfig(), cfg) {
		t.Fatalf("named role notice %v (%v), want OK with the role and its config", m, c)
	}
	rb := h.open()
	rb.arbitrate(testDevice, &p4v1.Role{Name: "steering"}, eid(0))
	if m, c := rb.arbitration(); c != codes.AlreadyExists || !proto.Equal(m.Role.GetConfig(), cfg) {
		t.Fatalf("named role backup got %v (%v), want ALREADY_EXISTS with the primary's config", c, m)
	}
	def.quiet() // other roles' changes are not the default role's business

	_, err := h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, Role: "steering", ElectionId: eid(1),
		Updates: []*p4v1.Update{ins(exactEntry(9, 1))}})
	if err != nil {
		t.Fatalf("write as the steering primary: %v", err)
	}
	_, err = h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, Role: "steering", ElectionId: eid(0),
		Updates: []*p4v1.Update{ins(exactEntry(10, 1))}})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("write as the steering backup: %v, want PERMISSION_DENIED", err)
	}
	_, err = h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice, Role: "nobody", ElectionId: eid(1)})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("write for an unknown role: %v, want NOT_FOUND", err)
	}
	_, err = h.client.Write(context.Background(), &p4v1.WriteRequest{DeviceId: testDevice + 1, ElectionId: eid(1)})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("write for an unknown device: %v, want NOT_FOUND", err)
	}
}
