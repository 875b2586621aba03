package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"

	junctionv1 "github.com/junction-atsss/junction/api/v1alpha1"
)

// The API server requires spec.p4runtime.tls or insecure: true, but objects stored before that
// rule can have neither; they are refused, not served in plaintext as an unset tls once meant.
func TestLoadConnParams(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ep       junctionv1.P4RuntimeEndpoint
		granted  string // the grant's tlsServerName
		reason   string // "" : plaintext parameters, no error
		mentions []string
	}{
		{"a UPF with neither tls nor insecure is refused, naming both fields",
			junctionv1.P4RuntimeEndpoint{Address: "127.0.0.1:9559"}, "", ReasonTLSRequired,
			[]string{"spec.p4runtime.tls", "spec.p4runtime.insecure"}},
		{"a UPF with insecure: true gets plaintext",
			junctionv1.P4RuntimeEndpoint{Address: "127.0.0.1:9559", Insecure: true}, "", "", nil},
		{"a UPF with insecure: true is refused where its grant names the device's TLS name",
			junctionv1.P4RuntimeEndpoint{Address: "127.0.0.1:9559", Insecure: true}, "tofino-1.lab", ReasonTLSRequired,
			[]string{"spec.p4runtime.insecure", "tofino-1.lab"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upf := &junctionv1.UserPlaneFunction{Spec: junctionv1.UserPlaneFunctionSpec{P4Runtime: tc.ep}}
			// No Secret is read without tls: a nil reader would panic if one were.
			cp, err := loadConnParams(context.Background(), nil, upf, tc.granted)
			var le *loadError
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("error %v, want plaintext parameters", err)
			case tc.reason == "":
				if cp.tls != nil || cp.address != string(tc.ep.Address) {
					t.Errorf("parameters %+v, want plaintext to %s", cp, tc.ep.Address)
				}
			case !errors.As(err, &le) || le.Reason != tc.reason:
				t.Fatalf("error %v, want reason %s", err, tc.reason)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message %q does not name %s", err, m)
				}
			}
		})
	}
}
