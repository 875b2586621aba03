package controllers

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/junction-atsss/junction/internal/pathmon"
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
	sessionsByReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "junction_sessions",
		Help: "ATSSSSessions by UPF and the reason of their Programmed condition (Programmed while programmed).",
	}, []string{"upf", "reason"})
)

func init() {
	metrics.Registry.MustRegister(sessionProgramSeconds, tableEntries, tableSize, sessionsByReason, downlinkBuffered, forwardedFrames)
	if err := P4RuntimeMetrics.Register(metrics.Registry); err != nil {
		panic(err)
	}
}

// Collectors lists every metric the operator serves besides controller-runtime's own: its own,
// the P4Runtime clients' and path monitoring's. The chart's alerts and dashboard are checked
// against it (test/chart).
func Collectors() []prometheus.Collector {
	out := []prometheus.Collector{sessionProgramSeconds, tableEntries, tableSize, sessionsByReason, downlinkBuffered, forwardedFrames}
	out = append(out, P4RuntimeMetrics.Collectors()...)
	return append(out, pathmon.Collectors()...)
}

// sessionMetrics keeps junction_sessions (the labels each session was last counted under, so
// that a change moves it from one series to the other and a deleted session leaves) and
// junction_session_programming_seconds (once per session, when it is first Programmed, however
// many reconciles that took). A session Programmed before this operator started is not timed;
// one that lost Programmed before a restart and regains it after is timed from its creation.
type sessionMetrics struct {
	mu         sync.Mutex
	last       map[types.NamespacedName][2]string // upf, reason
	programmed map[types.NamespacedName]bool      // seen Programmed by this operator
}

// observe counts the session under upf and reason (its Programmed condition's, "" forgets it);
// wasProgrammed is the condition before this reconcile, age the session's age now.
func (c *sessionMetrics) observe(key types.NamespacedName, upf, reason string, wasProgrammed bool, age time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last, c.programmed = map[types.NamespacedName][2]string{}, map[types.NamespacedName]bool{}
	}
	if reason == "" {
		delete(c.programmed, key)
	} else if (reason == ReasonProgrammed || wasProgrammed) && !c.programmed[key] {
		c.programmed[key] = true
		if !wasProgrammed {
			sessionProgramSeconds.Observe(age.Seconds())
		}
	}
	now := [2]string{upf, reason}
	old, ok := c.last[key]
	if ok && old == now {
		return
	}
	if ok {
		sessionsByReason.WithLabelValues(old[0], old[1]).Dec()
		delete(c.last, key)
	}
	if reason != "" {
		sessionsByReason.WithLabelValues(upf, reason).Inc()
		c.last[key] = now
	}
}
