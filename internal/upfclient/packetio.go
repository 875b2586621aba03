package upfclient

import (
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// PacketOut sends frame to the device as a packet-out on the primary stream (P4Runtime spec
// 16.1), with the packet_out controller header's fields set by name and the rest 0. A field the
// P4Info's packet_out does not have, or a value wider than the field, is an error: the device
// would send the frame somewhere else than the caller meant.
func (d *Device) PacketOut(frame []byte, fields map[string]uint64) error {
	sch := d.Schema()
	if sch == nil {
		return ErrNoPipeline
	}
	hdr := sch.ps.PacketOut
	if hdr == nil {
		return fmt.Errorf("the P4Info has no packet_out controller header")
	}
	for n := range fields {
		if _, ok := hdr.ByName[n]; !ok {
			return fmt.Errorf("packet_out has no field %q", n)
		}
	}
	// Every field, in the header's order: targets refuse a packet-out that leaves one out.
	md := make([]*p4v1.PacketMetadata, 0, len(hdr.Fields))
	for _, f := range hdr.Fields {
		v := fields[f.Name]
		if f.Width < 64 && v>>uint(f.Width) != 0 {
			return fmt.Errorf("packet_out field %q is %d bits wide; %d does not fit", f.Name, f.Width, v)
		}
		md = append(md, &p4v1.PacketMetadata{MetadataId: f.ID, Value: Uint(v)})
	}
	s, err := d.primary()
	if err != nil {
		return err
	}
	return s.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{
		Packet: &p4v1.PacketOut{Payload: frame, Metadata: md}}})
}

// PacketOutHas reports whether the packet_out controller header has a field called name.
func (s *Schema) PacketOutHas(name string) bool {
	if s == nil || s.ps.PacketOut == nil {
		return false
	}
	_, ok := s.ps.PacketOut.ByName[name]
	return ok
}

// TableTakes reports whether table lists action among its actions (a P4 program may leave an
// action out, as an older one does buffer_downlink).
func (s *Schema) TableTakes(table, action string) bool {
	if s == nil {
		return false
	}
	t, err := s.ps.Table(table)
	if err != nil {
		return false
	}
	a, err := s.ps.Action(action)
	if err != nil {
		return false
	}
	_, ok := t.Actions[a.ID]
	return ok
}
