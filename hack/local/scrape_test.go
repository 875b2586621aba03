package main

import (
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// scrape reads the agent's series as the agent exports them (internal/ueagent/metrics.go names).
func TestScrapeReadsTheAgentsLegSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_leg_bytes_total"}, []string{"session", "access", "direction"})
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_leg_up"}, []string{"session", "access"})
	rtt := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_leg_rtt_seconds"}, []string{"session", "access"})
	reg.MustRegister(bytes, up, rtt)
	bytes.WithLabelValues("default/alice", "3GPP", "rx").Add(1500)
	up.WithLabelValues("default/alice", "Non3GPP").Set(1)
	rtt.WithLabelValues("default/alice", "Non3GPP").Set(0.012)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	series := map[string]float64{}
	scrape(srv.URL, series)
	want := map[string]float64{"default/alice|bytes|3GPP|rx": 1500, "default/alice|up|Non3GPP": 1, "default/alice|rtt|Non3GPP": 0.012}
	for k, v := range want {
		if series[k] != v {
			t.Errorf("series[%q] = %v, want %v (all: %v)", k, series[k], v, series)
		}
	}
}
