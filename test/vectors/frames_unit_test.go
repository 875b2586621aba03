package vectors

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func frameOf(t *testing.T, src string) Frame {
	t.Helper()
	var f Frame
	if err := yaml.Unmarshal([]byte(src), &f, func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }); err != nil {
		t.Fatal(err)
	}
	return f
}

// The bytes of a PROBE_REPLY on the non-3GPP leg, written out by hand from
// docs/junction-header.md and docs/pipeline.md, against what the builder makes of the layers.
func TestBuildFrameMatchesHandWrittenBytes(t *testing.T) {
	f := frameOf(t, `
- eth: {src: "02:00:00:00:01:0a", dst: "02:00:00:00:02:0a"}
- ipv4: {src: 192.0.2.2, dst: 198.18.2.1, ttl: 64}
- udp: {}
- junction: {type: PROBE_REPLY}
- control: {session: 198.18.0.1, access: non-3GPP, ue_ts: 0x01020304, upf_ts: "?x"}
`)
	b, err := vars{}.buildFrame(f, true)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"02000000020a", "02000000010a", "0800", // Ethernet
		"4500", "0034", "0000", "0000", "4011", "f0a3", "c0000202", "c6120201", // IPv4, 52 bytes
		"0869", "0869", "0020", "0000", // UDP 2153 -> 2153, 32 bytes, no checksum
		"20", "00", "0010", "00000000", // PROBE_REPLY, proto 0, length 16, seq 0
		"c6120001", "02000000", "01020304", "00000000", // body, upf_ts 0 in the template
	}, "")
	if got := hex.EncodeToString(b.bytes); got != want {
		t.Fatalf("frame\n got %s\nwant %s", got, want)
	}
	// upf_ts is don't care: any value matches, and is captured.
	got := append([]byte(nil), b.bytes...)
	copy(got[len(got)-4:], []byte{0xde, 0xad, 0xbe, 0xef})
	if !b.matches(got) {
		t.Fatal("a different upf_ts did not match")
	}
	v := vars{}
	b.record(got, v)
	if v["x"] != 0xdeadbeef {
		t.Fatalf("captured x = %#x", v["x"])
	}
}

func TestDiffNamesTheField(t *testing.T) {
	f := frameOf(t, `
- eth: {src: "02:00:00:00:01:06", dst: "02:00:00:00:02:06"}
- ipv4: {src: 198.18.0.1, dst: 203.0.113.10, ttl: 63}
- udp: {sport: 40000, dport: 443}
- payload: 8
`)
	b, err := vars{}.buildFrame(f, true)
	if err != nil {
		t.Fatal(err)
	}
	got := append([]byte(nil), b.bytes...)
	got[14+8] = 64 // TTL not decremented
	if b.matches(got) {
		t.Fatal("a wrong TTL matched")
	}
	d := b.diff(got)
	if !strings.Contains(d, "ipv4.ttl: want 63, got 64") {
		t.Fatalf("diff does not name the TTL:\n%s", d)
	}
	if d := b.diff(got[:30]); !strings.Contains(d, "frame too short") || !strings.Contains(d, "length: want 50 bytes, got 30") {
		t.Fatalf("diff of a short frame:\n%s", d)
	}
}

func TestExplicitFieldsOverrideAndKeepChecksumsValid(t *testing.T) {
	f := frameOf(t, `
- eth: {src: "02:00:00:00:02:06", dst: "02:00:00:00:01:06"}
- ipv4: {src: 203.0.113.10, dst: 198.18.0.1, ttl: 0, ihl: 6, proto: udp}
- payload: {hex: "01010100"}
- udp: {sport: 1, dport: 2}
`)
	b, err := vars{}.buildFrame(f, false)
	if err != nil {
		t.Fatal(err)
	}
	ip := b.bytes[14:34]
	if ip[0] != 0x46 || ip[8] != 0 {
		t.Fatalf("ihl/ttl not patched: %x", ip)
	}
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	if sum != 0xffff {
		t.Fatalf("IPv4 checksum invalid after patching: %x", ip)
	}
	if _, err := (vars{}).buildFrame(frameOf(t, `[{ipv4: {ttl: "*"}}]`), false); err == nil {
		t.Fatal("a don't-care field was accepted in an input frame")
	}
	if _, err := (vars{}).buildFrame(frameOf(t, `[{ipv4: {tll: 3}}]`), true); err == nil || !strings.Contains(err.Error(), `unknown field "tll"`) {
		t.Fatalf("misspelt field: %v", err)
	}
}

func TestDontCareIPv4FieldAlsoMasksItsChecksum(t *testing.T) {
	f := frameOf(t, `
- eth: {src: "02:00:00:00:02:06", dst: "02:00:00:00:01:06"}
- ipv4: {src: 203.0.113.10, dst: 198.18.0.1, id: "*"}
- payload: 4
`)
	b, err := vars{}.buildFrame(f, true)
	if err != nil {
		t.Fatal(err)
	}
	got := append([]byte(nil), b.bytes...)
	got[14+4], got[14+10] = 0x12, 0x34 // another ID, and so another checksum
	if !b.matches(got) {
		t.Fatal("a don't-care ID with its checksum did not match")
	}
}
