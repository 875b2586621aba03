package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-atsss/junction/internal/softupf/dataplane"
	"github.com/junction-atsss/junction/internal/softupf/ports"
	"github.com/junction-atsss/junction/p4"
)

func TestFlags(t *testing.T) {
	o, err := parseFlags([]string{"-i", "1@veth0", "--i", "2@veth1", "--grpc-addr", "127.0.0.1:9600", "--cpu-port", "510"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ports.Mapping{{Port: 1, Iface: "veth0"}, {Port: 2, Iface: "veth1"}}
	if len(o.ports) != 2 || o.ports[0] != want[0] || o.ports[1] != want[1] {
		t.Errorf("ports = %v, want %v", o.ports, want)
	}
	if o.grpcAddr != "127.0.0.1:9600" || o.cpuPort != 510 || o.deviceID != 1 {
		t.Errorf("options = %+v", o)
	}
	for _, bad := range [][]string{{"-i", "veth0"}, {"--cpu-port", "512"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestCheckP4Info(t *testing.T) {
	dp, err := dataplane.New(dataplane.Config{Pool: dataplane.NewPool(4), MaxHeld: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "p4info.txtpb")
	if err := os.WriteFile(good, p4.P4InfoText(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkP4Info(dp, good); err != nil {
		t.Errorf("the checked-in P4Info is refused: %v", err)
	}
	bad := filepath.Join(dir, "bad.txtpb")
	text := strings.ReplaceAll(string(p4.P4InfoText()), `"rtt_non3gpp"`, `"rtt_wifi"`) // name and alias
	if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkP4Info(dp, bad); err == nil || !strings.Contains(err.Error(), `"rtt_non3gpp"`) {
		t.Errorf("checkP4Info = %v, want an error naming rtt_non3gpp", err)
	}
}
