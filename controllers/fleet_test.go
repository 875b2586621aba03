package controllers

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Two UPFs name one device when their hosts share an address, however each is spelled.
func TestDeviceHostsSurviveSpelling(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		{"localhost is 127.0.0.1", "localhost:9559", "127.0.0.1:9559", true},
		{"an IPv4-mapped address is the IPv4 address", "[::ffff:192.0.2.1]:9559", "192.0.2.1:9559", true},
		{"a name that does not resolve matches itself in any case", "tofino-1.invalid:9559", "TOFINO-1.invalid.:9559", true},
		{"two addresses are two devices", "192.0.2.1:9559", "192.0.2.2:9559", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := overlap(deviceHosts(ctx, tc.a), deviceHosts(ctx, tc.b)); got != tc.same {
				t.Errorf("%s and %s: one device %v, want %v (%v, %v)", tc.a, tc.b, got, tc.same, deviceHosts(ctx, tc.a), deviceHosts(ctx, tc.b))
			}
		})
	}
}

// A device host is looked up once per hostTTL, whatever the spelling of the address's case.
func TestDeviceHostCacheKeepsALookupForItsTTL(t *testing.T) {
	now := time.Unix(0, 0)
	c := deviceHostCache{now: func() time.Time { return now }}
	ctx := context.Background()
	// A name that cannot resolve (RFC 6761 .invalid) is kept in its own form.
	if got := c.hosts(ctx, "Tofino-1.invalid:9559"); !slices.Equal(got, []string{"name:tofino-1.invalid"}) {
		t.Fatalf("hosts = %v, want the name", got)
	}
	c.m["tofino-1.invalid:9559"] = cachedHosts{hosts: []string{"192.0.2.9"}, at: now} // as if it had resolved
	if got := c.hosts(ctx, "tofino-1.INVALID:9559"); !slices.Equal(got, []string{"192.0.2.9"}) {
		t.Errorf("within the TTL: %v, want the kept answer", got)
	}
	now = now.Add(hostTTL)
	if got := c.hosts(ctx, "tofino-1.invalid:9559"); !slices.Equal(got, []string{"name:tofino-1.invalid"}) {
		t.Errorf("after the TTL: %v, want a new lookup", got)
	}
}
