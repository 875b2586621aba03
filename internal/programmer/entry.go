package programmer

// How the programmer keeps a table entry: as its P4Runtime encoding, one pointer-free
// allocation, rather than the tree of a dozen protobuf objects a *p4v1.TableEntry is. It holds
// every entry of every session twice (wanted and on the device, sharing one encoding), and the
// Go collector walks each pointer of what is live in every cycle: with 10,000 N4 sessions the
// built entries were a quarter of the live objects (make bench-n4), and the collector's marks
// set the tail of the SMF's answers (docs/operator.md, "N4 (PFCP) sessions"). An entry is decoded again
// only to be written.

import (
	"bytes"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/junction-atsss/junction/internal/upfclient"
)

// entry is a table entry, encoded, with what the mirror counts read out once.
type entry struct {
	wire  []byte // proto encoding of the *p4v1.TableEntry; nil for a placeholder
	table uint32 // table ID
	usage cell   // the counted cell the action names (usage_idx or flow_idx), if hasUsage
	user  uint32 // a sessions entry's user_idx, if hasLegs
	legs  legs   // a sessions entry's access legs, if hasLegs
	app   uint64 // a session_overrides entry's app_id, if hasApp

	hasUsage, hasLegs, hasApp bool
}

// packEntry encodes te and reads out what the mirror counts (sch names the table, params and
// fields).
func packEntry(sch *upfclient.Schema, te *p4v1.TableEntry) entry {
	// A TableEntry has no map fields: its encoding is deterministic, so equal entries built the
	// same way encode to equal bytes. Marshal cannot fail for a message without required fields.
	wire, _ := proto.Marshal(te)
	e := entry{wire: wire, table: te.GetTableId()}
	e.usage, e.hasUsage = countedCell(sch, te)
	e.user, e.legs, e.hasLegs = sessionLegs(sch, te)
	e.app, e.hasApp = overrideApp(sch, te)
	return e
}

// placeholder stands for an entry of a table on the device whose content is unknown (someone
// else wrote it): it matches no wanted entry, so the next round modifies it.
func placeholder(table uint32) entry { return entry{table: table} }

// tableEntry decodes the entry for a write.
func (e entry) tableEntry() *p4v1.TableEntry {
	te := &p4v1.TableEntry{}
	if proto.Unmarshal(e.wire, te) != nil {
		// Not reached: the bytes are packEntry's. An entry of the right table and nothing else
		// is refused by the device with an error naming the table, never written as another.
		return &p4v1.TableEntry{TableId: e.table}
	}
	return te
}

// sameEntry reports whether writing a over b would change nothing. Entries built by this
// programmer compare by their bytes; one read back from the device may encode the same entry
// otherwise (values of another width), and is compared decoded.
func sameEntry(a, b entry) bool {
	switch {
	case a.wire == nil || b.wire == nil: // a placeholder is the same as nothing
		return false
	case bytes.Equal(a.wire, b.wire):
		return true
	}
	return upfclient.SameEntry(a.tableEntry(), b.tableEntry())
}

// overrideApp is the app_id a session_overrides entry matches.
func overrideApp(sch *upfclient.Schema, te *p4v1.TableEntry) (uint64, bool) {
	if sch == nil || sch.TableName(te.GetTableId()) != tableOverrides {
		return 0, false
	}
	fid, err := sch.MatchFieldID(tableOverrides, fieldAppID)
	if err != nil {
		return 0, false
	}
	for _, fm := range te.GetMatch() {
		if fm.GetFieldId() == fid {
			return bigEndian(fm.GetExact().GetValue()), true
		}
	}
	return 0, false
}
