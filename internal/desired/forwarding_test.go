package desired

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

// unhex decodes hex written with spaces between the headers.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A G-PDU forwarded on an indirect forwarding tunnel is sent on with its GTP-U message as it came
// (TS 29.281 §5.1: flags, type, length, TEID, then sequence number, N-PDU number and next
// extension header type; the PDU Session Container, TS 38.415 §5.5.2.1; the T-PDU) but for the
// TEID, in a new IPv4/UDP header (TS 29.281 §4.4.2: UDP 2152; the pipeline's own: TTL 64, ID 0,
// checksum 0 over UDP), whose lengths count the message.
func TestRelayedMessage(t *testing.T) {
	in := unhex(t, "020000000101 020000000201 0800"+
		"4500 0048 1234 0000 3e11 0000 c633640a c0000201"+ // IPv4 198.51.100.10 -> 192.0.2.1, TTL 62, 72 bytes (checksum not read)
		"d431 0868 0034 abcd"+ // UDP 54321 -> 2152, 52 bytes
		"34ff 0024 00000701 0000 0085 0100 0100"+ // G-PDU, E, length 36, TEID 0x701; container: DL, QFI 1
		"4500 001c 0000 0000 3f11 0000 cb0071c8 0a3c000b 01bb 9c40 0008 0000") // 28-byte user packet
	teid, msg, ok := TunnelMessage(in)
	if !ok || teid != 0x701 || !bytes.Equal(msg, in[42:]) {
		t.Fatalf("TunnelMessage: teid %#x, ok %v, message %x; want 0x701 and the 44 bytes from the GTP-U header on", teid, ok, msg)
	}
	got := RelayedMessage(msg, netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.12"), 0x777)
	want := unhex(t, "000000000000 000000000000 0800"+
		"4500 0048 0000 0000 4011 8e64 c0000201 c633640c"+
		"0868 0868 0034 0000"+
		"34ff 0024 00000777 0000 0085 0100 0100"+
		"4500 001c 0000 0000 3f11 0000 cb0071c8 0a3c000b 01bb 9c40 0008 0000")
	if !bytes.Equal(got, want) {
		t.Errorf("relayed\n%x\nwant\n%x", got, want)
	}
	if &msg[0] != &in[42] || !bytes.Equal(in[46:50], []byte{0, 0, 7, 1}) {
		t.Error("the received frame was changed")
	}

	for name, frame := range map[string]string{
		"an Echo Request": "020000000101 020000000201 0800 4500 0024 0000 0000 4011 0000 c633640a c0000201 0868 0868 0010 0000 3201 0004 00000000 0007 0000",
		"not GTP-U":       "020000000101 020000000201 0800 4500 001c 0000 0000 4011 0000 c633640a c0000201 1234 5678 0008 0000",
		"not IPv4":        "020000000101 020000000201 0806 0001 0800 0604 0001",
	} {
		if _, _, ok := TunnelMessage(unhex(t, frame)); ok {
			t.Errorf("%s: taken for a G-PDU or End Marker", name)
		}
	}
	// An End Marker (TS 29.281 §7.3.2: the header alone) is relayed as it came too.
	em := unhex(t, "020000000101 020000000201 0800 4500 0024 0000 0000 4011 0000 c633640a c0000201 0868 0868 0010 0000 30fe 0000 00000701")
	if teid, msg, ok := TunnelMessage(em); !ok || teid != 0x701 || !bytes.Equal(msg, em[42:]) {
		t.Errorf("an End Marker: teid %#x, ok %v, message %x; want 0x701 and its 8-byte header", teid, ok, msg)
	}
}
