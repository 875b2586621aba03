package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/junction-atsss/junction/internal/upfclient"
)

// Operator metrics, registered with controller-runtime's registry and served on the manager's
// authenticated metrics endpoint next to controller-runtime's own (reconcile counts, errors and
// controller_runtime_reconcile_time_seconds, the reconcile latency).
var (
	// P4RuntimeMetrics are the P4Runtime clients' metrics (writes, errors, latency, reads,
	// connections, digests), shared by every UPF.
	P4RuntimeMetrics = upfclient.NewMetrics()

	sessionProgramSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "junction_session_programming_seconds",
		Help:    "Time from an ATSSSSession's creation to its first Programmed=True.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14), // 5 ms .. 40 s
	})
	tableEntries = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "junction_table_entries",
		Help: "Entries the operator holds in each table of a UPF.",
	}, []string{"upf", "table"})
	tableSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "junction_table_size",
		Help: "Capacity of each table of a UPF, from its P4Info.",
	}, []string{"upf", "table"})
)

func init() {
	metrics.Registry.MustRegister(sessionProgramSeconds, tableEntries, tableSize)
	if err := P4RuntimeMetrics.Register(metrics.Registry); err != nil {
		panic(err)
	}
}
