package pathmon

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are registered once with controller-runtime's registry, so they are served on the
// manager's (authenticated) metrics endpoint. Labels stay bounded: the UPF and the access,
// never the user (a UPF has up to 262144 of them).
var (
	rttSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "junction_path_rtt_seconds",
		Help: "RTTs measured by the UPF's probe exchange, per access.",
		// 0.5 ms to ~4 s: LAN WiFi to a congested cellular uplink.
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	}, []string{"upf", "access"})
	reportsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "junction_path_reports_total",
		Help: "probe_reports digest messages received, by kind (rtt, link_down, link_up).",
	}, []string{"upf", "kind"})
	reportsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "junction_path_reports_dropped_total",
		Help: "probe_reports the operator could not decode or had no room to queue.",
	}, []string{"upf"})
	switchesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "junction_path_switches_total",
		Help: "Changes of a user's active access (the access smallest-delay steering picks).",
	}, []string{"upf"})
	suspensionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "junction_path_suspensions_total",
		Help: "Times a user's in-data-plane path updates were suspended because its paths flip-flopped.",
	}, []string{"upf"})
	usersSuspended = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "junction_path_users_suspended",
		Help: "Users whose in-data-plane path updates are suspended now.",
	}, []string{"upf"})
	actuationErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "junction_path_actuation_errors_total",
		Help: "Failed register writes of path monitoring (suspend, resume, path state).",
	}, []string{"upf"})
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors lists path monitoring's metrics (registered by init; dashboards and alerts are
// checked against this list).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{rttSeconds, reportsTotal, reportsDropped, switchesTotal,
		suspensionsTotal, usersSuspended, actuationErrors}
}

// forgetMetrics drops a UPF's series when its monitor stops.
func forgetMetrics(upf string) {
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		rttSeconds, reportsTotal, reportsDropped, switchesTotal, suspensionsTotal, usersSuspended, actuationErrors,
	} {
		v.DeletePartialMatch(prometheus.Labels{"upf": upf})
	}
}
