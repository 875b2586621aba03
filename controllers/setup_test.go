package controllers

import (
	"net/http"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// The cache's watches must not share a connection with the client's writes (ManagerOptions):
// the manager's client takes client-go's cached transport for the config, so the watches'
// client must end in a different *http.Transport.
func TestWatchesHaveAConnectionOfTheirOwn(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	opts, err := ManagerOptions(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Cache.HTTPClient == nil {
		t.Fatal("ManagerOptions leaves Cache.HTTPClient nil: the watches share the client's connection")
	}
	writes, err := rest.HTTPClientFor(cfg) // what the manager builds for its client
	if err != nil {
		t.Fatal(err)
	}
	w, c := baseTransport(t, opts.Cache.HTTPClient.Transport), baseTransport(t, writes.Transport)
	if w == c {
		t.Error("the watches' HTTP client uses the same transport (connection pool) as the client's writes")
	}
	if again := baseTransport(t, must(rest.HTTPClientFor(cfg)).Transport); again != c {
		t.Fatal("client-go no longer shares a transport between clients of one config: this test proves nothing")
	}
}

func baseTransport(t *testing.T, rt http.RoundTripper) *http.Transport {
	for {
		switch v := rt.(type) {
		case *http.Transport:
			return v
		case utilnet.RoundTripperWrapper:
			rt = v.WrappedRoundTripper()
		default:
			t.Fatalf("cannot unwrap %T to an *http.Transport", rt)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
