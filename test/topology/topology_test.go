//go:build linux

package topology

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/testenv"
)

// The topology is wired as the samples say: a user who applies config/samples to `make run` gets
// sessions whose packets cross it. The samples are the source; this checks the copy.
func TestTopologyIsTheSamples(t *testing.T) {
	var upf junctionv1.UserPlaneFunction
	readSample(t, "upf.yaml", func(doc []byte) {
		if err := yaml.UnmarshalStrict(doc, &upf); err != nil {
			t.Fatal(err)
		}
	})
	got := (&Topology{}).UPFSpec(upf.Spec.P4Runtime, upf.Spec.Pipeline.ConfigMapRef.Name)
	if !equality.Semantic.DeepEqual(got, upf.Spec) {
		t.Errorf("UPFSpec differs from config/samples/upf.yaml:\n got  %+v\n want %+v", got, upf.Spec)
	}

	// alice, bob and carol are the first three default UEs; a leg over N3 goes through the
	// access gateway's W-AGF.
	names := []string{"alice-internet", "bob-internet", "carol-branch"}
	legs := map[string][2]string{}
	readSample(t, "sessions.yaml", func(doc []byte) {
		var s junctionv1.ATSSSSession
		if err := yaml.Unmarshal(doc, &s); err != nil {
			t.Fatal(err)
		}
		if s.Spec.AccessLegs.ThreeGPP == nil || s.Spec.AccessLegs.NonThreeGPP == nil {
			return
		}
		legs[s.Name] = [2]string{string(s.Spec.AccessLegs.ThreeGPP.UEAddress), string(s.Spec.AccessLegs.NonThreeGPP.UEAddress)}
		if s.Spec.AccessLegs.ThreeGPP.GNBAddress == junctionv1.IPv4Address(GNBN3.String()) {
			if ue := s.Spec.UE.NodeName; ue != DefaultUE(0).Node && ue != DefaultUE(1).Node && ue != DefaultUE(2).Node {
				t.Errorf("session %s on node %q: the topology's default UEs are on ue-node-a, b and c", s.Name, ue)
			}
		}
		if l := s.Spec.AccessLegs.NonThreeGPP; l.OverN3() && l.GatewayAddress != junctionv1.IPv4Address(WAGFN3.String()) {
			t.Errorf("session %s: its line's gateway %s is not the topology's W-AGF %s", s.Name, l.GatewayAddress, WAGFN3)
		}
	})
	for i, name := range names {
		ue := DefaultUE(i)
		want := [2]string{ue.Addr3GPP[0].String(), ue.AddrWiFi[0].String()}
		if legs[name] != want {
			t.Errorf("%s: legs %v in the samples, DefaultUE(%d) has %v", name, legs[name], i, want)
		}
	}
	if !SessionPool.Contains(netip.MustParseAddr("10.60.1.1")) {
		t.Error("alice-enterprise's address is outside the data network's route back")
	}
}

func readSample(t *testing.T, file string, each func(doc []byte)) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		if head.Kind != "" {
			each([]byte(doc))
		}
	}
}
