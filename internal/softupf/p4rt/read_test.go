package p4rt

import (
	"context"
	"io"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// insertBig fills big_t with n entries, 1000 per Write.
func insertBig(t testing.TB, h *harness, n int) {
	t.Helper()
	ups := make([]*p4v1.Update, 0, 1000)
	for k := 0; k < n; k++ {
		ups = append(ups, ins(bigEntry(uint32(k))))
		if len(ups) == cap(ups) || k == n-1 {
			h.mustWrite(ups...)
			ups = ups[:0]
		}
	}
}

func TestWildcardReadOf500kEntriesIsChunked(t *testing.T) {
	if testing.Short() {
		t.Skip("writes half a million entries")
	}
	h, _ := ready(t, Options{})
	h.target.record = false
	const n = 500_000
	insertBig(t, h, n)
	if h.target.tableOps != n {
		t.Fatalf("target saw %d table writes, want %d", h.target.tableOps, n)
	}
	if st := h.srv.Stats(); st.Inserts != n || st.WriteRequests < n/1000 {
		t.Fatalf("stats %+v", st)
	}

	rs, err := h.client.Read(context.Background(), &p4v1.ReadRequest{DeviceId: testDevice,
		Entities: []*p4v1.Entity{tableEnt(&p4v1.TableEntry{})}}) // table_id 0: every table
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, n)
	msgs, total := 0, 0
	for {
		r, err := rs.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs++
		if len(r.Entities) > defaultReadChunk || proto.Size(r) > defaultReadChunkBytes+1024 {
			t.Fatalf("chunk of %d entities, %d bytes", len(r.Entities), proto.Size(r))
		}
		for _, e := range r.Entities {
			te := e.GetTableEntry()
			k := decodeUint(te.Match[0].GetExact().Value)
			if te.TableId != tblBig || seen[k] || decodeUint(te.GetAction().GetAction().Params[0].Value) != k*7 {
				t.Fatalf("unexpected entity %v", te)
			}
			seen[k] = true
			total++
		}
	}
	if total != n || msgs < n/defaultReadChunk {
		t.Fatalf("read %d entities in %d messages, want %d in at least %d", total, msgs, n, n/defaultReadChunk)
	}
}

func TestReadFiltersAndBatchErrors(t *testing.T) {
	h, _ := ready(t, Options{MaxReadChunk: 3})
	for i := uint32(1); i <= 4; i++ {
		h.mustWrite(ins(exactEntry(i, uint64(i))))
	}
	h.mustWrite(mod(tableEnt(&p4v1.TableEntry{TableId: tblExact, Match: []*p4v1.FieldMatch{exactM(1, 4)}, Action: action(actDrop), Metadata: []byte("x")})))
	h.mustWrite(
		ins(te(tblTernary, 5, action(actDrop), ternaryM(2, []byte{6}, []byte{0xff}))),
		ins(te(tblTernary, 6, action(actDrop), ternaryM(2, []byte{6}, []byte{0xff}))),
		ins(te(tblTernary, 6, action(actDrop), ternaryM(2, []byte{17}, []byte{0xff}))),
	)

	out, msgs, err := h.read(tableEnt(&p4v1.TableEntry{TableId: tblExact}))
	if err != nil || len(out) != 4 || msgs != 2 {
		t.Fatalf("table wildcard: %d entities in %d messages (%v), want 4 in 2 (chunk 3)", len(out), msgs, err)
	}
	if out := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact, Action: action(actDrop)})); len(out) != 1 {
		t.Fatalf("action filter: %v", out)
	}
	if out := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact, Metadata: []byte("x")})); len(out) != 1 {
		t.Fatalf("metadata filter: %v", out)
	}
	if out := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblTernary, Priority: 6})); len(out) != 2 {
		t.Fatalf("priority filter: %v", out)
	}
	// A match without priority on a priority table reads that match at every priority.
	if out := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblTernary, Match: []*p4v1.FieldMatch{ternaryM(2, []byte{6}, []byte{0xff})}})); len(out) != 2 {
		t.Fatalf("match at any priority: %v", out)
	}
	if out := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact, Match: []*p4v1.FieldMatch{exactM(1, 77)}})); len(out) != 0 {
		t.Fatalf("missing key: %v", out)
	}

	// Bad requests fail one by one; the good ones still return their entities.
	out, _, err = h.read(
		tableEnt(&p4v1.TableEntry{TableId: tblExact, Match: []*p4v1.FieldMatch{exactM(1, 1)}}),
		tableEnt(&p4v1.TableEntry{TableId: 0x0200ffff}),
		&p4v1.Entity{},
		tableEnt(&p4v1.TableEntry{TableId: 0, Priority: 3}),
	)
	got := errCodes(t, err)
	want := []codes.Code{codes.OK, codes.InvalidArgument, codes.InvalidArgument, codes.InvalidArgument}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("read codes %v, want %v", got, want)
		}
	}
	if len(out) != 1 {
		t.Fatalf("entities before the error status: %v", out)
	}
	if _, _, err := h.read(); err != nil {
		t.Fatalf("empty read: %v", err)
	}
	rs, err := h.client.Read(context.Background(), &p4v1.ReadRequest{DeviceId: testDevice + 1})
	if err == nil {
		_, err = rs.Recv()
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("read of an unknown device: %v", err)
	}
}

func TestBackupsCanRead(t *testing.T) {
	h, _ := ready(t, Options{})
	h.mustWrite(ins(exactEntry(1, 1)))
	b := h.open()
	b.arbitrate(testDevice, nil, nil)
	b.arbitration()
	if out := h.mustRead(tableEnt(&p4v1.TableEntry{TableId: tblExact})); len(out) != 1 {
		t.Fatalf("read by any client: %v", out)
	}
}
