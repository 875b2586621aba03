package operator

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/desired"
	"github.com/junction-atsss/junction/internal/upfclient"
)

// expectedEntries computes, independently of the operator's bookkeeping, what the UPF must hold
// for the objects the API server has: the UPF's own entries, every policy with an application
// ID, and every session with the indexes its status records (policies by reference only, as
// the tests use them).
func expectedEntries(ns, upfName string, sch *upfclient.Schema) ([]string, error) {
	ctx := context.Background()
	var upf junctionv1.UserPlaneFunction
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: upfName}, &upf); err != nil {
		return nil, err
	}
	var all []desired.Entry
	es, err := desired.UPFEntries(upf.Spec)
	if err != nil {
		return nil, err
	}
	all = append(all, es...)

	var pols junctionv1.SteeringPolicyList
	if err := k8s.List(ctx, &pols, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	byName := map[string]desired.Policy{}
	for _, p := range pols.Items {
		if p.DeletionTimestamp != nil || p.Status.ApplicationID == nil {
			continue
		}
		dp := desired.Policy{Name: p.Name, AppID: uint16(*p.Status.ApplicationID), Spec: p.Spec}
		byName[p.Name] = dp
		es, err := desired.ApplicationEntries(dp)
		if err != nil {
			return nil, err
		}
		all = append(all, es...)
	}

	var sessions junctionv1.ATSSSSessionList
	if err := k8s.List(ctx, &sessions, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	peers := map[string]uint16{}
	for _, s := range sessions.Items {
		if s.DeletionTimestamp != nil || s.Spec.UPFRef.Name != upfName {
			continue
		}
		if s.Status.UserIndex == nil {
			return nil, fmt.Errorf("session %s has no user index in its status", s.Name)
		}
		ds := desired.Session{Name: s.Name, Spec: s.Spec, UserIndex: uint32(*s.Status.UserIndex)}
		if s.Status.TunnelPeerIndex != nil {
			ds.PeerIndex = uint16(*s.Status.TunnelPeerIndex)
			peers[string(s.Spec.AccessLegs.ThreeGPP.GNBAddress)] = ds.PeerIndex
		}
		if s.Status.SequenceIndex != nil {
			v := uint32(*s.Status.SequenceIndex)
			ds.SequenceIndex = &v
		}
		if s.Status.UsageIndex != nil {
			ds.UsageIndex = uint32(*s.Status.UsageIndex)
		}
		for _, ref := range s.Spec.PolicyRefs {
			if p, ok := byName[ref.Name]; ok {
				ds.Policies = append(ds.Policies, p)
			}
		}
		es, err := desired.SessionEntries(ds)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", s.Name, err)
		}
		all = append(all, es...)
	}
	for gnb, idx := range peers {
		all = append(all, desired.TunnelPeerEntry(idx, netip.MustParseAddr(gnb)))
	}

	out := make([]string, 0, len(all))
	for _, e := range all {
		te, err := sch.Build(e.Client())
		if err != nil {
			return nil, err
		}
		out = append(out, describe(sch, te))
	}
	sort.Strings(out)
	return out, nil
}

// sameEntries reports the difference between what the UPF holds and what it should hold.
// entryReader is a target the tests read entries back from (softUPF, p4rtTarget).
type entryReader interface {
	entries(sch *upfclient.Schema) ([]string, error)
}

func sameEntries(u entryReader, sch *upfclient.Schema, ns, upf string) error {
	want, err := expectedEntries(ns, upf, sch)
	if err != nil {
		return err
	}
	got, err := u.entries(sch)
	if err != nil {
		return err
	}
	return diffLists(got, want)
}

func diffLists(got, want []string) error {
	g, w := map[string]int{}, map[string]int{}
	for _, x := range got {
		g[x]++
	}
	for _, x := range want {
		w[x]++
	}
	var extra, missing []string
	for x, n := range g {
		if n > w[x] {
			extra = append(extra, x)
		}
	}
	for x, n := range w {
		if n > g[x] {
			missing = append(missing, x)
		}
	}
	if len(extra)+len(missing) == 0 {
		return nil
	}
	sort.Strings(extra)
	sort.Strings(missing)
	return fmt.Errorf("UPF entries differ from the objects:\n  extra on the UPF:\n    %s\n  missing on the UPF:\n    %s",
		strings.Join(extra, "\n    "), strings.Join(missing, "\n    "))
}

// countTable counts the entries of one table in a read-back list.
func countTable(entries []string, table string) int {
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e, table+" ") {
			n++
		}
	}
	return n
}

func mustEntries(t *testing.T, u *softUPF, sch *upfclient.Schema) []string {
	t.Helper()
	es, err := u.entries(sch)
	if err != nil {
		t.Fatal(err)
	}
	return es
}
