package upfclient

import (
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// Metrics are the P4Runtime client's Prometheus metrics, labelled by device (Config.Name).
// Create one per process with NewMetrics, register it (for example with controller-runtime's
// metrics.Registry) and pass it to every Device. A nil *Metrics records nothing.
type Metrics struct {
	WriteUpdates   *prometheus.CounterVec   // device, type (INSERT/MODIFY/DELETE), code
	WriteRequests  *prometheus.CounterVec   // device, code
	WriteLatency   *prometheus.HistogramVec // device: one WriteRequest round trip
	Reads          *prometheus.CounterVec   // device, code: Read RPCs
	ReadEntities   *prometheus.CounterVec   // device
	Reconnects     *prometheus.CounterVec   // device: sessions ended by an error
	Connected      *prometheus.GaugeVec     // device: 1 while the stream is up
	Primary        *prometheus.GaugeVec     // device: 1 while this controller is primary
	Generation     *prometheus.GaugeVec     // device: State.Generation
	PipelinePushes *prometheus.CounterVec   // device, code
	DigestLists    *prometheus.CounterVec   // device, digest: lists handed to the handler
	DigestMessages *prometheus.CounterVec   // device, digest
	DigestDrops    *prometheus.CounterVec   // device: lists dropped unacked, handler behind
	PacketIns      *prometheus.CounterVec   // device, result (delivered/dropped)
	StreamErrors   *prometheus.CounterVec   // device: StreamError messages from the device
}

// NewMetrics creates the metrics (namespace "junction", subsystem "p4runtime").
func NewMetrics() *Metrics {
	const ns, sub = "junction", "p4runtime"
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, []string{"device"})
	}
	return &Metrics{
		WriteUpdates:  counter("write_updates_total", "P4Runtime updates written, by update type and result code.", "device", "type", "code"),
		WriteRequests: counter("write_requests_total", "P4Runtime WriteRequests, by result code (UNKNOWN: some updates failed).", "device", "code"),
		WriteLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "write_request_duration_seconds",
			Help:    "Round trip of one P4Runtime WriteRequest.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16), // 0.2 ms .. 6.5 s
		}, []string{"device"}),
		Reads:          counter("read_requests_total", "P4Runtime Read RPCs, by result code.", "device", "code"),
		ReadEntities:   counter("read_entities_total", "Entities received from P4Runtime reads.", "device"),
		Reconnects:     counter("stream_reconnects_total", "P4Runtime sessions that ended in an error and were retried.", "device"),
		Connected:      gauge("connected", "1 while the P4Runtime stream to the device is up."),
		Primary:        gauge("primary", "1 while this controller is the primary of the device."),
		Generation:     gauge("primary_generation", "How many times this controller became primary of the device."),
		PipelinePushes: counter("pipeline_pushes_total", "SetForwardingPipelineConfig calls, by result code.", "device", "code"),
		DigestLists:    counter("digest_lists_total", "Digest lists received and handled.", "device", "digest"),
		DigestMessages: counter("digest_messages_total", "Digest messages received and handled.", "device", "digest"),
		DigestDrops:    counter("digest_lists_dropped_total", "Digest lists dropped unacked because the handler was behind.", "device"),
		PacketIns:      counter("packet_ins_total", "Packet-ins received, by result (delivered, dropped).", "device", "result"),
		StreamErrors:   counter("stream_errors_total", "StreamError messages received from the device.", "device"),
	}
}

// Collectors lists every metric, for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.WriteUpdates, m.WriteRequests, m.WriteLatency, m.Reads, m.ReadEntities, m.Reconnects,
		m.Connected, m.Primary, m.Generation, m.PipelinePushes, m.DigestLists, m.DigestMessages,
		m.DigestDrops, m.PacketIns, m.StreamErrors,
	}
}

// Register registers every metric with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range m.Collectors() {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Forget removes a device's series (when its UserPlaneFunction is deleted).
func (m *Metrics) Forget(device string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"device": device}
	m.WriteUpdates.DeletePartialMatch(l)
	m.WriteRequests.DeletePartialMatch(l)
	m.WriteLatency.DeletePartialMatch(l)
	m.Reads.DeletePartialMatch(l)
	m.ReadEntities.DeletePartialMatch(l)
	m.Reconnects.DeletePartialMatch(l)
	m.Connected.DeletePartialMatch(l)
	m.Primary.DeletePartialMatch(l)
	m.Generation.DeletePartialMatch(l)
	m.PipelinePushes.DeletePartialMatch(l)
	m.DigestLists.DeletePartialMatch(l)
	m.DigestMessages.DeletePartialMatch(l)
	m.DigestDrops.DeletePartialMatch(l)
	m.PacketIns.DeletePartialMatch(l)
	m.StreamErrors.DeletePartialMatch(l)
}

func (m *Metrics) writeUpdates(device string, updates []*p4v1.Update, errs []error) {
	if m == nil {
		return
	}
	// Count per (type, code) first: one label lookup per distinct pair, not per update.
	type key struct {
		t    p4v1.Update_Type
		code codes.Code
	}
	counts := map[key]int{}
	for i, u := range updates {
		counts[key{u.GetType(), Code(errs[i])}]++
	}
	for k, n := range counts {
		m.WriteUpdates.WithLabelValues(device, k.t.String(), k.code.String()).Add(float64(n))
	}
}

func (m *Metrics) writeRequest(device string, code codes.Code, took time.Duration) {
	if m == nil {
		return
	}
	m.WriteRequests.WithLabelValues(device, code.String()).Inc()
	m.WriteLatency.WithLabelValues(device).Observe(took.Seconds())
}

func (m *Metrics) read(device string, code codes.Code, entities int) {
	if m == nil {
		return
	}
	m.Reads.WithLabelValues(device, code.String()).Inc()
	m.ReadEntities.WithLabelValues(device).Add(float64(entities))
}

func (m *Metrics) reconnect(device string) {
	if m != nil {
		m.Reconnects.WithLabelValues(device).Inc()
	}
}

func (m *Metrics) setState(device string, st State) {
	if m == nil {
		return
	}
	m.Connected.WithLabelValues(device).Set(b2f(st.Connected))
	m.Primary.WithLabelValues(device).Set(b2f(st.Primary))
	m.Generation.WithLabelValues(device).Set(float64(st.Generation))
}

func (m *Metrics) pipelinePush(device string, code codes.Code) {
	if m != nil {
		m.PipelinePushes.WithLabelValues(device, code.String()).Inc()
	}
}

func (m *Metrics) digestList(device, digest string, messages int) {
	if m == nil {
		return
	}
	m.DigestLists.WithLabelValues(device, digest).Inc()
	m.DigestMessages.WithLabelValues(device, digest).Add(float64(messages))
}

func (m *Metrics) digestDrop(device string) {
	if m != nil {
		m.DigestDrops.WithLabelValues(device).Inc()
	}
}

func (m *Metrics) packetIn(device string, delivered bool) {
	if m == nil {
		return
	}
	result := "dropped"
	if delivered {
		result = "delivered"
	}
	m.PacketIns.WithLabelValues(device, result).Inc()
}

func (m *Metrics) streamError(device string) {
	if m != nil {
		m.StreamErrors.WithLabelValues(device).Inc()
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
