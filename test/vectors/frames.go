package vectors

// Frames in vectors are layers with named fields. The bytes come from internal/wire (through
// wiretest.Build, which fills in lengths, ports, protocol numbers and checksums); this file only
// knows where each named field sits, so that a vector can override any field (for malformed
// input), mark fields as don't-care in expected frames, capture a field's value, and so that a
// mismatch is reported field by field.
//
//	vector layers ──resolve──> wire structs ──wiretest.Build──> bytes
//	                           explicit fields patched in, IPv4 checksum redone ──> frame
//	                           don't-care fields cleared in the mask ──> (frame, mask, layout)

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/wire"
	"github.com/junction-atsss/junction/internal/wire/wiretest"
)

// fieldDef is a named field at a bit offset inside its layer.
type fieldDef struct {
	name      string
	off, bits int
	syms      map[string]uint64 // symbolic values ("PROBE", "3GPP"), combinable with |
	addr      bool              // shown as a dotted quad
	mac       bool              // shown as a MAC address
}

type layerDef struct {
	name   string
	fields []fieldDef
}

var (
	junctionTypes = map[string]uint64{"DATA": 0, "PROBE": 1, "PROBE_REPLY": 2, "PROBE_ACK": 3, "LINK_DOWN": 4, "LINK_UP": 5}
	junctionMarks = map[string]uint64{"NONE": 0, "EX_PATH": 1, "CURRENT_PATH": 2, "EPOCH": 4}
	accesses      = map[string]uint64{"NONE": 0, "3GPP": 1, "NON_3GPP": 2, "NON-3GPP": 2}
	ipProtos      = map[string]uint64{"ICMP": 1, "IPV4": 4, "TCP": 6, "UDP": 17}
)

var layerDefs = map[string]*layerDef{
	"eth": {name: "eth", fields: []fieldDef{
		{name: "dst", off: 0, bits: 48, mac: true},
		{name: "src", off: 48, bits: 48, mac: true},
		{name: "type", off: 96, bits: 16},
	}},
	"ipv4": {name: "ipv4", fields: []fieldDef{
		{name: "version", off: 0, bits: 4},
		{name: "ihl", off: 4, bits: 4},
		{name: "dscp", off: 8, bits: 6},
		{name: "ecn", off: 14, bits: 2},
		{name: "total_length", off: 16, bits: 16},
		{name: "id", off: 32, bits: 16},
		{name: "flags", off: 48, bits: 3},
		{name: "frag_offset", off: 51, bits: 13},
		{name: "ttl", off: 64, bits: 8},
		{name: "proto", off: 72, bits: 8, syms: ipProtos},
		{name: "checksum", off: 80, bits: 16},
		{name: "src", off: 96, bits: 32, addr: true},
		{name: "dst", off: 128, bits: 32, addr: true},
	}},
	"udp": {name: "udp", fields: []fieldDef{
		{name: "sport", off: 0, bits: 16},
		{name: "dport", off: 16, bits: 16},
		{name: "length", off: 32, bits: 16},
		{name: "checksum", off: 48, bits: 16},
	}},
	"tcp": {name: "tcp", fields: []fieldDef{
		{name: "sport", off: 0, bits: 16},
		{name: "dport", off: 16, bits: 16},
		{name: "seq", off: 32, bits: 32},
		{name: "ack", off: 64, bits: 32},
		{name: "data_offset", off: 96, bits: 4},
		{name: "flags", off: 104, bits: 8},
		{name: "window", off: 112, bits: 16},
		{name: "checksum", off: 128, bits: 16},
		{name: "urgent", off: 144, bits: 16},
	}},
	"gtpu": {name: "gtpu", fields: []fieldDef{
		{name: "flags", off: 0, bits: 8},
		{name: "type", off: 8, bits: 8},
		{name: "length", off: 16, bits: 16},
		{name: "teid", off: 32, bits: 32},
		{name: "seq", off: 64, bits: 16},
		{name: "npdu", off: 80, bits: 8},
		{name: "next_ext", off: 88, bits: 8},
		{name: "ext_length", off: 96, bits: 8},
		{name: "pdu_type", off: 104, bits: 4},
		{name: "qfi", off: 114, bits: 6},
		{name: "ext_next", off: 120, bits: 8},
	}},
	"junction": {name: "junction", fields: []fieldDef{
		{name: "type", off: 0, bits: 4, syms: junctionTypes},
		{name: "marks", off: 4, bits: 4, syms: junctionMarks},
		{name: "proto", off: 8, bits: 8, syms: ipProtos},
		{name: "length", off: 16, bits: 16},
		{name: "seq", off: 32, bits: 32},
	}},
	"control": {name: "control", fields: []fieldDef{
		{name: "session", off: 0, bits: 32, addr: true},
		{name: "access", off: 32, bits: 8, syms: accesses},
		{name: "loss_pct", off: 40, bits: 8},
		{name: "reserved_hi", off: 48, bits: 1},
		{name: "share", off: 49, bits: 7},
		{name: "reserved", off: 56, bits: 8},
		{name: "ue_ts", off: 64, bits: 32},
		{name: "rtt_us", off: 64, bits: 32}, // the same bytes, named for link messages
		{name: "upf_ts", off: 96, bits: 32},
	}},
	"payload": {name: "payload"},
}

func (l *layerDef) field(name string) (fieldDef, bool) {
	for _, f := range l.fields {
		if f.name == name {
			return f, true
		}
	}
	return fieldDef{}, false
}

// placed is a layer at its offset in a built frame.
type placed struct {
	def      *layerDef
	label    string // "ipv4" or "ipv4#2" for the second one
	off, len int
}

// builtFrame is a frame with its comparison mask (bits set = compared) and layout.
type builtFrame struct {
	bytes, mask []byte
	layers      []placed
	captures    []capture
}

type capture struct {
	name     string
	layer    int
	field    fieldDef
	absolute int // bit offset in the frame
}

// layerSpec is one parsed layer of a vector frame.
type layerSpec struct {
	def      *layerDef
	explicit map[string]uint64 // fields given a value
	dontCare map[string]bool   // "*" and "?x" fields
	captures map[string]string // field -> capture name
	payload  []byte
}

// buildFrame turns a vector frame into bytes. expected allows don't-care and capture values.
func (v vars) buildFrame(f Frame, expected bool) (*builtFrame, error) {
	var specs []*layerSpec
	truncate := -1
	f, err := flatten(f, 0)
	if err != nil {
		return nil, err
	}
	for i, item := range f {
		if len(item) != 1 {
			return nil, fmt.Errorf("layer %d: want one key (eth, ipv4, udp, tcp, gtpu, junction, control, payload, truncate), got %d", i+1, len(item))
		}
		for name, body := range item {
			if name == "truncate" {
				n, err := v.number(body, 16)
				if err != nil {
					return nil, fmt.Errorf("truncate: %w", err)
				}
				truncate = int(n)
				continue
			}
			spec, err := v.parseLayer(name, body, expected)
			if err != nil {
				return nil, fmt.Errorf("layer %d (%s): %w", i+1, name, err)
			}
			specs = append(specs, spec)
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("frame has no layers")
	}

	structs := make([]any, len(specs))
	for i, s := range specs {
		var next *layerSpec
		if i+1 < len(specs) {
			next = specs[i+1]
		}
		structs[i] = s.wireStruct(next)
	}
	b := &builtFrame{bytes: wiretest.Build(structs...)}

	// Lay the layers out, then patch every explicit field (Build may have filled or recomputed
	// it) and redo IPv4 checksums that a patch invalidated.
	count := map[string]int{}
	off := 0
	for i, s := range specs {
		n := s.headerLen(structs[i])
		count[s.def.name]++
		label := s.def.name
		if count[s.def.name] > 1 {
			label = fmt.Sprintf("%s#%d", s.def.name, count[s.def.name])
		}
		b.layers = append(b.layers, placed{def: s.def, label: label, off: off, len: n})
		off += n
	}
	for i, s := range specs {
		p := b.layers[i]
		patched := false
		for name, val := range s.explicit {
			fd, _ := s.def.field(name)
			if p.off*8+fd.off+fd.bits > len(b.bytes)*8 || fd.off+fd.bits > p.len*8 {
				return nil, fmt.Errorf("%s.%s lies outside the %d-byte layer", p.label, name, p.len)
			}
			setBits(b.bytes, p.off*8+fd.off, fd.bits, val)
			patched = true
		}
		if _, given := s.explicit["checksum"]; s.def.name == "ipv4" && patched && !given && p.off+20 <= len(b.bytes) {
			h := b.bytes[p.off : p.off+20]
			h[10], h[11] = 0, 0
			c := wire.IPv4Checksum(h)
			h[10], h[11] = byte(c>>8), byte(c)
		}
	}
	if truncate >= 0 {
		if truncate > len(b.bytes) {
			return nil, fmt.Errorf("truncate %d is longer than the %d-byte frame", truncate, len(b.bytes))
		}
		b.bytes = b.bytes[:truncate]
	}

	b.mask = make([]byte, len(b.bytes))
	for i := range b.mask {
		b.mask[i] = 0xff
	}
	for i, s := range specs {
		p := b.layers[i]
		for name := range s.dontCare {
			fd, _ := s.def.field(name)
			clearBits(b.mask, p.off*8+fd.off, fd.bits)
			if s.def.name == "ipv4" {
				cs, _ := s.def.field("checksum")
				clearBits(b.mask, p.off*8+cs.off, cs.bits)
			}
			if c, ok := s.captures[name]; ok {
				b.captures = append(b.captures, capture{name: c, layer: i, field: fd, absolute: p.off*8 + fd.off})
			}
		}
	}
	return b, nil
}

// flatten splices {packet: [layers]} items into the frame.
func flatten(f Frame, depth int) (Frame, error) {
	if depth > 8 {
		return nil, fmt.Errorf("packet layers nested too deep")
	}
	var out Frame
	for _, item := range f {
		inner, ok := item["packet"]
		if !ok || len(item) != 1 {
			out = append(out, item)
			continue
		}
		list, ok := inner.([]any)
		if !ok {
			return nil, fmt.Errorf("packet: want a list of layers, got %T", inner)
		}
		var sub Frame
		for _, x := range list {
			m, ok := x.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("packet: each layer is a one-key map, got %T", x)
			}
			sub = append(sub, m)
		}
		flat, err := flatten(sub, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, flat...)
	}
	return out, nil
}

func (v vars) parseLayer(name string, body any, expected bool) (*layerSpec, error) {
	def, ok := layerDefs[name]
	if !ok {
		return nil, fmt.Errorf("unknown layer %q (eth, ipv4, udp, tcp, gtpu, junction, control, payload, truncate)", name)
	}
	s := &layerSpec{def: def, explicit: map[string]uint64{}, dontCare: map[string]bool{}, captures: map[string]string{}}
	if name == "payload" {
		p, err := v.payloadBytes(body)
		s.payload = p
		return s, err
	}
	fields, ok := body.(map[string]any)
	if !ok && body != nil {
		return nil, fmt.Errorf("want a map of fields, got %T", body)
	}
	for fname, val := range fields {
		fd, ok := def.field(fname)
		if !ok {
			return nil, fmt.Errorf("unknown field %q (have %s)", fname, fieldNames(def))
		}
		if str, isStr := val.(string); isStr && (str == "*" || strings.HasPrefix(str, "?")) {
			if !expected {
				return nil, fmt.Errorf("field %s: %q only makes sense in expected frames", fname, str)
			}
			s.dontCare[fname] = true
			if strings.HasPrefix(str, "?") {
				s.captures[fname] = str[1:]
			}
			continue
		}
		n, err := v.fieldValue(fd, val)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fname, err)
		}
		s.explicit[fname] = n
	}
	return s, nil
}

func (v vars) fieldValue(fd fieldDef, val any) (uint64, error) {
	if str, ok := val.(string); ok && fd.syms != nil && !strings.HasPrefix(str, "$") {
		var n uint64
		matched := true
		for _, part := range strings.Split(str, "|") {
			sym, ok := fd.syms[strings.ToUpper(strings.TrimSpace(part))]
			if !ok {
				matched = false
				break
			}
			n |= sym
		}
		if matched {
			return n, nil
		}
	}
	return v.number(val, fd.bits)
}

// payloadBytes reads a payload: a size (pattern bytes 00 01 02 ...), or {size|text|hex}.
func (v vars) payloadBytes(body any) ([]byte, error) {
	if m, ok := body.(map[string]any); ok {
		if len(m) != 1 {
			return nil, fmt.Errorf("payload wants one of size, text, hex")
		}
		for k, x := range m {
			switch k {
			case "size":
				n, err := v.number(x, 14)
				return wiretest.Payload(int(n)), err
			case "text":
				return []byte(fmt.Sprint(x)), nil
			case "hex":
				s := strings.NewReplacer(" ", "", "\n", "", "|", "").Replace(fmt.Sprint(x))
				b, err := hex.DecodeString(s)
				if err != nil {
					return nil, fmt.Errorf("payload hex: %w", err)
				}
				return b, nil
			}
			return nil, fmt.Errorf("payload: unknown key %q (size, text, hex)", k)
		}
	}
	n, err := v.number(body, 14)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return wiretest.Payload(int(n)), nil
}

func fieldNames(def *layerDef) string {
	var out []string
	for _, f := range def.fields {
		out = append(out, f.name)
	}
	return strings.Join(out, ", ")
}

// wireStruct makes the wire value for Build; fields it cannot express are patched later.
func (s *layerSpec) wireStruct(next *layerSpec) any {
	e := s.explicit
	ip4 := func(name string) [4]byte {
		n := e[name]
		return [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	mac := func(name string) [6]byte {
		n := e[name]
		return [6]byte{byte(n >> 40), byte(n >> 32), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	switch s.def.name {
	case "eth":
		return wire.Ethernet{Dst: mac("dst"), Src: mac("src"), Type: uint16(e["type"])}
	case "ipv4":
		return wire.IPv4{
			TOS:      uint8(e["dscp"]<<2 | e["ecn"]),
			TotalLen: uint16(e["total_length"]),
			ID:       uint16(e["id"]),
			Frag:     uint16(e["flags"]<<13 | e["frag_offset"]),
			TTL:      uint8(e["ttl"]),
			Proto:    uint8(e["proto"]),
			Src:      ip4("src"),
			Dst:      ip4("dst"),
		}
	case "udp":
		u := wire.UDP{SrcPort: uint16(e["sport"]), DstPort: uint16(e["dport"]), Length: uint16(e["length"]), Checksum: uint16(e["checksum"])}
		if next != nil && u.SrcPort == 0 && u.DstPort == 0 {
			// Tunnel ports by default; one port given means both were meant (sport = dport).
			switch next.def.name {
			case "gtpu":
				u.SrcPort, u.DstPort = wire.GTPUPort, wire.GTPUPort
			case "junction":
				u.SrcPort, u.DstPort = wire.JunctionPort, wire.JunctionPort
			}
		}
		return u
	case "tcp":
		return wiretest.TCP{SrcPort: uint16(e["sport"]), DstPort: uint16(e["dport"]), Seq: uint32(e["seq"]), Ack: uint32(e["ack"]), Flags: uint8(e["flags"]), Window: uint16(e["window"])}
	case "gtpu":
		g := wire.GTPU{Flags: uint8(e["flags"]), Type: uint8(e["type"]), Length: uint16(e["length"]), TEID: uint32(e["teid"]),
			Seq: uint16(e["seq"]), NPDU: uint8(e["npdu"]), NextExt: uint8(e["next_ext"])}
		_, qfi := e["qfi"]
		_, pduType := e["pdu_type"]
		if (qfi || pduType) && g.NextExt == 0 {
			g.NextExt = wire.GTPUExtPDUSession
		}
		g.PSC = [2]byte{uint8(e["pdu_type"] << 4), uint8(e["qfi"])}
		if _, given := e["flags"]; !given {
			g.Flags = wire.GTPUFlags
			if g.NextExt != 0 {
				g.Flags |= wire.GTPUFlagExtension
			}
			if _, ok := e["seq"]; ok {
				g.Flags |= wire.GTPUFlagSequence
			}
			if _, ok := e["npdu"]; ok {
				g.Flags |= wire.GTPUFlagNPDU
			}
		}
		return g
	case "junction":
		h := wire.Header{Type: wire.Type(e["type"]), Marks: wire.Marks(e["marks"]), Proto: uint8(e["proto"]), Length: uint16(e["length"]), Seq: uint32(e["seq"])}
		if _, given := e["proto"]; !given && next != nil && next.def.name == "ipv4" {
			h.Proto = wire.ProtoIPv4
		}
		return h
	case "control":
		ts := e["ue_ts"]
		if r, ok := e["rtt_us"]; ok {
			ts = r
		}
		return wire.Control{Session: ip4("session"), Access: contract.Access(e["access"]), LossPercent: uint8(e["loss_pct"]),
			Share: contract.AutonomousShare(e["share"]), UETime: uint32(ts), UPFTime: uint32(e["upf_ts"])}
	}
	return s.payload
}

func (s *layerSpec) headerLen(w any) int {
	switch s.def.name {
	case "eth":
		return wire.EthernetHeaderLen
	case "ipv4":
		return wire.IPv4HeaderLen
	case "udp":
		return wire.UDPHeaderLen
	case "tcp":
		return 20
	case "gtpu":
		return w.(wire.GTPU).HeaderLen()
	case "junction":
		return wire.HeaderLen
	case "control":
		return wire.ControlLen
	}
	return len(s.payload)
}

func getBits(b []byte, off, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		bit := off + i
		v = v<<1 | uint64(b[bit/8]>>(7-uint(bit%8))&1)
	}
	return v
}

func setBits(b []byte, off, n int, v uint64) {
	for i := 0; i < n; i++ {
		bit := off + i
		mask := byte(1) << (7 - uint(bit%8))
		if v>>(uint(n-1-i))&1 == 1 {
			b[bit/8] |= mask
		} else {
			b[bit/8] &^= mask
		}
	}
}

func clearBits(b []byte, off, n int) {
	for i := 0; i < n; i++ {
		bit := off + i
		if bit/8 < len(b) {
			b[bit/8] &^= byte(1) << (7 - uint(bit%8))
		}
	}
}

// matches reports whether got equals the frame under its mask.
func (b *builtFrame) matches(got []byte) bool {
	if len(got) != len(b.bytes) {
		return false
	}
	for i := range got {
		if (got[i]^b.bytes[i])&b.mask[i] != 0 {
			return false
		}
	}
	return true
}

// record stores the frame's captured fields from got into v.
func (b *builtFrame) record(got []byte, v vars) {
	for _, c := range b.captures {
		if c.absolute+c.field.bits <= len(got)*8 {
			v[c.name] = getBits(got, c.absolute, c.field.bits)
		}
	}
}

// diff describes, layer by layer and field by field, how got differs from the expected frame.
func (b *builtFrame) diff(got []byte) string {
	var out []string
	for _, p := range b.layers {
		if p.def.name == "payload" {
			end := min(p.off+p.len, len(got))
			for i := p.off; i < end; i++ {
				if (got[i]^b.bytes[i])&b.mask[i] != 0 {
					out = append(out, fmt.Sprintf("  %s: differs at byte %d of %d: want %x, got %x", p.label, i-p.off, p.len, b.bytes[p.off:p.off+p.len], got[p.off:end]))
					break
				}
			}
			if p.off+p.len > len(got) && p.off < len(got)+1 {
				out = append(out, fmt.Sprintf("  %s: frame ends %d bytes early", p.label, p.off+p.len-len(got)))
			}
			continue
		}
		for _, f := range p.def.fields {
			if f.off+f.bits > p.len*8 || f.name == "rtt_us" {
				continue
			}
			start := p.off*8 + f.off
			if start+f.bits > len(b.bytes)*8 {
				continue
			}
			if getBits(b.mask, start, f.bits) == 0 {
				continue // don't care
			}
			want := getBits(b.bytes, start, f.bits)
			if start+f.bits > len(got)*8 {
				out = append(out, fmt.Sprintf("  %s.%s: want %s, got nothing (frame too short)", p.label, f.name, f.format(want)))
				continue
			}
			if g := getBits(got, start, f.bits); g != want {
				out = append(out, fmt.Sprintf("  %s.%s: want %s, got %s", p.label, f.name, f.format(want), f.format(g)))
			}
		}
	}
	if len(got) != len(b.bytes) {
		out = append(out, fmt.Sprintf("  length: want %d bytes, got %d", len(b.bytes), len(got)))
	}
	out = append(out, "  want: "+summarize(b.bytes), "  got:  "+summarize(got),
		"  want hex: "+hex.EncodeToString(b.bytes), "  got hex:  "+hex.EncodeToString(got))
	return strings.Join(out, "\n")
}

func (f fieldDef) format(v uint64) string {
	switch {
	case f.addr:
		return fmt.Sprintf("%d.%d.%d.%d", byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	case f.mac:
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	case f.syms != nil:
		var names []string
		for n, s := range f.syms {
			if s == v && n == strings.ToUpper(n) && !strings.Contains(n, "-") {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			return fmt.Sprintf("%d (%s)", v, names[0])
		}
	case f.bits >= 16:
		return fmt.Sprintf("%d (%#x)", v, v)
	}
	return fmt.Sprint(v)
}

// summarize decodes a frame with the wire parser, for a one-line view of what arrived.
func summarize(frame []byte) string {
	var f wire.Frame
	err := f.Parse(frame)
	var parts []string
	if f.Has&wire.HasEthernet != 0 {
		parts = append(parts, fmt.Sprintf("eth %x>%x type %#04x", f.Ethernet.Src, f.Ethernet.Dst, f.Ethernet.Type))
	}
	ip := func(h wire.IPv4) string {
		return fmt.Sprintf("ipv4 %d.%d.%d.%d>%d.%d.%d.%d ttl %d proto %d len %d", h.Src[0], h.Src[1], h.Src[2], h.Src[3],
			h.Dst[0], h.Dst[1], h.Dst[2], h.Dst[3], h.TTL, h.Proto, h.TotalLen)
	}
	if f.Has&wire.HasIPv4 != 0 {
		parts = append(parts, ip(f.IPv4))
	}
	if f.Has&wire.HasUDP != 0 {
		parts = append(parts, fmt.Sprintf("udp %d>%d", f.UDP.SrcPort, f.UDP.DstPort))
	}
	if f.Has&wire.HasGTPU != 0 {
		parts = append(parts, fmt.Sprintf("gtpu teid %#x", f.GTPU.TEID))
	}
	if f.Has&wire.HasInnerIPv4 != 0 {
		parts = append(parts, ip(f.InnerIPv4))
	}
	if f.Has&wire.HasJunction != 0 {
		parts = append(parts, fmt.Sprintf("junction %v marks %v seq %d len %d", f.Junction.Type, f.Junction.Marks, f.Junction.Seq, f.Junction.Length))
	}
	if f.Has&wire.HasControl != 0 {
		c := f.Control
		parts = append(parts, fmt.Sprintf("control session %d.%d.%d.%d access %v ts %d upf_ts %d", c.Session[0], c.Session[1], c.Session[2], c.Session[3], c.Access, c.UETime, c.UPFTime))
	}
	if f.Has&wire.HasUser != 0 && (f.Has&wire.HasJunction != 0 || f.Has&wire.HasGTPU != 0) {
		parts = append(parts, "user "+ip(f.User))
	}
	s := strings.Join(parts, " / ")
	if err != nil {
		s += " [parse: " + err.Error() + "]"
	}
	return fmt.Sprintf("%d bytes: %s", len(frame), s)
}
