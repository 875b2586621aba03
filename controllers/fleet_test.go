package controllers

import (
	"context"
	"testing"
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
