package operator

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
	"github.com/junction-atsss/junction/internal/p4bytes"
)

// TestSamplesProgramTheEntriesWrittenByHand applies config/samples and compares every table
// entry the UPF then holds with testdata/samples-entries.txt, which was written from the
// manifests and docs/pipeline.md. expectedEntries (used by the other tests) derives its
// expectations with internal/desired, the operator's own encoder, so an encoding bug there would
// pass them; it cannot pass this one.
func TestSamplesProgramTheEntriesWrittenByHand(t *testing.T) {
	ns := newNamespace(t)
	u, sch, objs := samplesUPF(t, ns)
	create(t, objs...)
	startOperator(t, ns, operatorOptions{})
	waitSamplesDone(t, objs)

	indexes, err := allocatedIndexes(ns)
	if err != nil {
		t.Fatal(err)
	}
	want, err := handWrittenEntries("testdata/samples-entries.txt", indexes)
	if err != nil {
		t.Fatal(err)
	}
	if err := diffLists(mustEntries(t, u, sch), want); err != nil {
		t.Error(err)
	}

	// Every sample's thresholds are read by its mode (voice's packet-loss threshold is in its
	// entries above): no policy may call them unenforced.
	for _, o := range objs {
		p, ok := o.(*junctionv1.SteeringPolicy)
		if !ok {
			continue
		}
		c, err := condition(p, junctionv1.ConditionReady)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c.Message, "not enforced") {
			t.Errorf("SteeringPolicy %s: Ready says %q", p.Name, c.Message)
		}
	}
}

// allocatedIndexes reads the indexes the operator recorded in the objects' status, keyed
// "object.field" as the testdata's placeholders name them.
func allocatedIndexes(ns string) (map[string]int32, error) {
	ctx := context.Background()
	out := map[string]int32{}
	put := func(name, field string, v *int32) {
		if v != nil {
			out[name+"."+field] = *v
		}
	}
	var sessions junctionv1.ATSSSSessionList
	if err := k8s.List(ctx, &sessions, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, s := range sessions.Items {
		put(s.Name, "userIndex", s.Status.UserIndex)
		put(s.Name, "sequenceIndex", s.Status.SequenceIndex)
		put(s.Name, "tunnelPeerIndex", s.Status.TunnelPeerIndex)
		put(s.Name, "usageIndex", s.Status.UsageIndex)
	}
	var policies junctionv1.SteeringPolicyList
	if err := k8s.List(ctx, &policies, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, p := range policies.Items {
		put(p.Name, "applicationID", p.Status.ApplicationID)
	}
	return out, nil
}

var placeholder = regexp.MustCompile(`\{([a-z0-9-]+)\.([a-zA-Z]+)\}`)

// handWrittenEntries reads a testdata entry list into describe's format. Placeholders become the
// allocated indexes; placeholders of one field that name different objects must resolve to
// different values (two users, two gNBs, two policies never share an index).
func handWrittenEntries(path string, indexes map[string]int32) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	owner := map[string]map[int32]string{} // field -> value -> the object it was read from
	var out []string
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var resolveErr error
		line = placeholder.ReplaceAllStringFunc(line, func(ph string) string {
			m := placeholder.FindStringSubmatch(ph)
			v, ok := indexes[m[1]+"."+m[2]]
			if !ok {
				resolveErr = fmt.Errorf("%s has no %s in its status", m[1], m[2])
				return ph
			}
			if owner[m[2]] == nil {
				owner[m[2]] = map[int32]string{}
			}
			if prev, ok := owner[m[2]][v]; ok && prev != m[1] {
				resolveErr = fmt.Errorf("%s and %s both have %s %d", prev, m[1], m[2], v)
			}
			owner[m[2]][v] = m[1]
			return strconv.Itoa(int(v))
		})
		if resolveErr == nil {
			var e string
			e, resolveErr = handWrittenEntry(line)
			out = append(out, e)
		}
		if resolveErr != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, resolveErr)
		}
	}
	return out, nil
}

// handWrittenEntry turns "table f=v ... [prio=N] -> action(p=v, ...)" into describe's format.
func handWrittenEntry(line string) (string, error) {
	key, action, ok := strings.Cut(line, " -> ")
	if !ok || !strings.HasSuffix(action, ")") {
		return "", fmt.Errorf("want TABLE FIELDS -> ACTION(PARAMS): %q", line)
	}
	words := strings.Fields(key)
	var fields []string
	prio := ""
	for _, w := range words[1:] {
		name, v, ok := strings.Cut(w, "=")
		if !ok {
			return "", fmt.Errorf("field %q has no value", w)
		}
		if name == "prio" {
			prio = " prio=" + v
			continue
		}
		s, err := matchValue(v)
		if err != nil {
			return "", fmt.Errorf("field %s: %w", name, err)
		}
		fields = append(fields, name+"="+s)
	}
	sort.Strings(fields)
	name, params, _ := strings.Cut(strings.TrimSuffix(action, ")"), "(")
	var ps []string
	for _, p := range strings.Split(params, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, v, ok := strings.Cut(p, "=")
		if !ok {
			return "", fmt.Errorf("param %q has no value", p)
		}
		s, err := hexValue(v)
		if err != nil {
			return "", fmt.Errorf("param %s: %w", n, err)
		}
		ps = append(ps, n+"="+s)
	}
	sort.Strings(ps)
	var b strings.Builder
	b.WriteString(words[0])
	for _, f := range fields {
		b.WriteString(" " + f)
	}
	fmt.Fprintf(&b, "%s -> %s(%s)", prio, name, strings.Join(ps, ","))
	return b.String(), nil
}

// matchValue renders an LPM, ternary, range or exact value as describe does.
func matchValue(v string) (string, error) {
	join := func(sep string, parts ...string) (string, error) {
		out := make([]string, len(parts))
		for i, p := range parts {
			s, err := hexValue(p)
			if err != nil {
				return "", err
			}
			out[i] = s
		}
		return strings.Join(out, sep), nil
	}
	if lo, hi, ok := strings.Cut(v, ".."); ok {
		return join("..", lo, hi)
	}
	if val, mask, ok := strings.Cut(v, "&"); ok {
		return join("&", val, mask)
	}
	if a, bits, ok := strings.Cut(v, "/"); ok {
		s, err := hexValue(a)
		return s + "/" + bits, err
	}
	return hexValue(v)
}

// hexValue is the canonical bytestring of a dotted IPv4 address, a MAC, 0xHEX or a decimal.
func hexValue(v string) (string, error) {
	var b []byte
	if a, err := netip.ParseAddr(v); err == nil && a.Is4() {
		b = a.AsSlice()
	} else if m, err := net.ParseMAC(v); err == nil {
		b = m
	} else if n, err := strconv.ParseUint(v, 0, 64); err == nil {
		b = binary.BigEndian.AppendUint64(nil, n)
	} else {
		return "", fmt.Errorf("%q is not an IPv4 address, MAC or number", v)
	}
	return fmt.Sprintf("%x", p4bytes.Canonical(b)), nil
}
