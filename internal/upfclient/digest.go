package upfclient

import (
	"context"
	"fmt"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// DigestList is one list of digest messages from the device, decoded by the P4Info names.
type DigestList struct {
	Digest    string // digest name; "" if the list arrived before any P4Info was known
	DigestID  uint32
	ListID    uint64
	Timestamp time.Time
	// Messages are the list's messages, each a map from struct member name to its value
	// (a digest of a plain bit<W> has one member named "").
	Messages []DigestMessage
	// Raw is the list as received.
	Raw *p4v1.DigestList
}

// DigestMessage maps struct member names to their bytestrings.
type DigestMessage map[string][]byte

// Uint returns member name as an integer (0 when absent or wider than 64 bits).
func (m DigestMessage) Uint(name string) uint64 {
	v, err := DecodeUint(m[name])
	if err != nil {
		return 0
	}
	return v
}

// PacketIn is a frame the data plane punted to the controller.
type PacketIn struct {
	Payload []byte
	// Metadata maps the packet_in header's field names (e.g. "ingress_port") to values.
	Metadata map[string][]byte
}

// ConfigureDigest enables digest name on the device (spec 9.9): the device sends a list when
// maxListSize messages wait or maxTimeout after the first one, and holds back the next list
// until the previous one is acked or ackTimeout passes. The configuration is device state:
// set it again after every pipeline push and on every new Generation.
func (d *Device) ConfigureDigest(ctx context.Context, name string, maxTimeout time.Duration, maxListSize int32, ackTimeout time.Duration) error {
	sch := d.Schema()
	if sch == nil {
		return ErrNoPipeline
	}
	id, err := sch.DigestID(name)
	if err != nil {
		return err
	}
	entry := &p4v1.DigestEntry{DigestId: id, Config: &p4v1.DigestEntry_Config{
		MaxTimeoutNs: maxTimeout.Nanoseconds(), MaxListSize: maxListSize, AckTimeoutNs: ackTimeout.Nanoseconds(),
	}}
	u := &p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: entry}}}
	if errs := d.Write(ctx, []*p4v1.Update{u}); errs != nil {
		if !IsAlreadyExists(errs[0]) {
			return fmt.Errorf("configuring digest %q: %w", name, errs[0])
		}
		u.Type = p4v1.Update_MODIFY
		if errs := d.Write(ctx, []*p4v1.Update{u}); errs != nil {
			return fmt.Errorf("configuring digest %q: %w", name, errs[0])
		}
	}
	return nil
}

type digestItem struct {
	s    *session
	list *p4v1.DigestList
}

// onDigest queues a list for the handler without blocking the stream.
func (d *Device) onDigest(s *session, l *p4v1.DigestList) {
	select {
	case d.digestQ <- digestItem{s: s, list: l}:
	default:
		d.m.digestDrop(d.cfg.Name)
		d.log.V(1).Info("digest list dropped: handler is behind", "listID", l.GetListId(), "messages", len(l.GetData()))
	}
}

// dispatchDigests hands lists to the handler one at a time and acks each after it returns.
func (d *Device) dispatchDigests(ctx context.Context) {
	for {
		var it digestItem
		select {
		case <-ctx.Done():
			return
		case it = <-d.digestQ:
		}
		dl := d.decodeDigest(it.list)
		d.m.digestList(d.cfg.Name, dl.Digest, len(dl.Messages))
		if h := d.cfg.DigestHandler; h != nil {
			h(ctx, dl)
		}
		// Ack on the stream the list came on; list IDs mean nothing to a later stream.
		if it.s != d.session() {
			continue
		}
		ack := &p4v1.DigestListAck{DigestId: it.list.GetDigestId(), ListId: it.list.GetListId()}
		if err := it.s.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: ack}}); err != nil {
			d.log.V(1).Info("digest ack not sent", "listID", ack.ListId, "err", err.Error())
		}
	}
}

func (d *Device) decodeDigest(l *p4v1.DigestList) DigestList {
	out := DigestList{DigestID: l.GetDigestId(), ListID: l.GetListId(), Timestamp: time.Unix(0, l.GetTimestamp()), Raw: l}
	sch := d.Schema()
	if sch == nil {
		return out
	}
	ds, ok := sch.ps.DigestByID(l.GetDigestId())
	if !ok {
		return out
	}
	out.Digest = ds.Name
	out.Messages = make([]DigestMessage, 0, len(l.GetData()))
	for _, data := range l.GetData() {
		m := DigestMessage{}
		if st := data.GetStruct(); st != nil {
			for i, member := range st.GetMembers() {
				if i < len(ds.Members) {
					m[ds.Members[i].Name] = member.GetBitstring()
				}
			}
		} else {
			m[""] = data.GetBitstring()
		}
		out.Messages = append(out.Messages, m)
	}
	return out
}

// onPacketIn queues a packet-in without blocking the stream.
func (d *Device) onPacketIn(p *p4v1.PacketIn) {
	pin := PacketIn{Payload: p.GetPayload(), Metadata: make(map[string][]byte, len(p.GetMetadata()))}
	sch := d.Schema()
	for _, md := range p.GetMetadata() {
		name := fmt.Sprintf("id:%d", md.GetMetadataId())
		if hdr := sch.packetInHeader(); hdr != nil {
			if i, ok := hdr.Index[md.GetMetadataId()]; ok {
				name = hdr.Fields[i].Name
			}
		}
		pin.Metadata[name] = md.GetValue()
	}
	select {
	case d.packetIns <- pin:
		d.m.packetIn(d.cfg.Name, true)
	default:
		d.m.packetIn(d.cfg.Name, false)
	}
}
