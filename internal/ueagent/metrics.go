package ueagent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/junction-atsss/junction/internal/contract"
	"github.com/junction-atsss/junction/internal/ueagent/steer"
)

// Metrics are the agent's Prometheus series, per session and leg, registered once per process.
type Metrics struct {
	legRTT      *prometheus.GaugeVec
	legUp       *prometheus.GaugeVec
	legDowns    *prometheus.CounterVec
	packets     *prometheus.CounterVec
	bytes       *prometheus.CounterVec
	txErrors    *prometheus.CounterVec
	probes      *prometheus.CounterVec
	replies     *prometheus.CounterVec
	probesLost  *prometheus.GaugeVec
	legLoss     *prometheus.GaugeVec
	drops       *prometheus.CounterVec
	markers     *prometheus.CounterVec
	reorder     *prometheus.GaugeVec
	upHold      *prometheus.GaugeVec
	upHeld      *prometheus.CounterVec
	statusWrite *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	sl := []string{"session"}
	ll := []string{"session", "access"}
	m := &Metrics{
		legRTT:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_leg_rtt_seconds", Help: "RTT the UE measured with its last answered probe on the leg."}, ll),
		legUp:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_leg_up", Help: "1 while the leg is up (address present, probes answered)."}, ll),
		legDowns:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_leg_down_total", Help: "Times the leg went down (link, address or missed probes)."}, ll),
		packets:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_leg_packets_total", Help: "Packets on the leg by direction (tx: to the UPF, data and control)."}, append(ll, "direction")),
		bytes:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_leg_bytes_total", Help: "Bytes on the leg by direction (UDP payload)."}, append(ll, "direction")),
		txErrors:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_leg_send_errors_total", Help: "Sends on the leg that failed, had no socket, or drew an ICMP error."}, ll),
		probes:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_probes_sent_total", Help: "PROBE messages sent on the leg."}, ll),
		replies:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_probe_replies_total", Help: "PROBE_REPLY messages that matched an outstanding probe."}, ll),
		probesLost:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_probes_lost", Help: "Probes on the leg that went unanswered, since the tunnel started."}, ll),
		legLoss:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_leg_loss_percent", Help: "Share of the leg's last 20 probes that went unanswered, in percent."}, ll),
		drops:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_drops_total", Help: "Packets the agent dropped, by reason."}, append(sl, "reason")),
		markers:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_exp_path_markers_total", Help: "EX-PATH markers sent on uplink path switches."}, sl),
		reorder:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_reorder_packets", Help: "Downlink reorder buffer counters since the tunnel started, by kind."}, append(sl, "kind")),
		upHold:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "junction_ue_uplink_hold_seconds", Help: "How long a split uplink waits on the leg to arrive with the other leg's (their one-way delay difference)."}, ll),
		upHeld:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_uplink_held_packets_total", Help: "Uplink packets that waited on the leg's delay line (early: sent before their time, the line being full)."}, append(ll, "kind")),
		statusWrite: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "junction_ue_status_writes_total", Help: "Server-side applies of session status by result."}, []string{"result"}),
	}
	reg.MustRegister(m.legRTT, m.legUp, m.legDowns, m.packets, m.bytes, m.txErrors, m.probes, m.replies,
		m.probesLost, m.legLoss, m.drops, m.markers, m.reorder, m.upHold, m.upHeld, m.statusWrite)
	return m
}

// tunnelMetrics are one session's resolved series, so the data path never looks up labels.
type tunnelMetrics struct {
	m       *Metrics
	session string
	markers prometheus.Counter
}

type legMetrics struct {
	rtt                                    prometheus.Gauge
	up                                     prometheus.Gauge
	downs                                  prometheus.Counter
	txPackets, txBytes, rxPackets, rxBytes prometheus.Counter
	txErrors, probes, replies              prometheus.Counter
	lost, loss                             prometheus.Gauge
	upHold                                 prometheus.Gauge
	upHeld, upEarly                        prometheus.Counter
}

func (m *Metrics) forSession(session string) *tunnelMetrics {
	return &tunnelMetrics{m: m, session: session, markers: m.markers.WithLabelValues(session)}
}

func (tm *tunnelMetrics) leg(a contract.Access) *legMetrics {
	m, s, as := tm.m, tm.session, a.String()
	return &legMetrics{
		rtt: m.legRTT.WithLabelValues(s, as), up: m.legUp.WithLabelValues(s, as), downs: m.legDowns.WithLabelValues(s, as),
		txPackets: m.packets.WithLabelValues(s, as, "tx"), txBytes: m.bytes.WithLabelValues(s, as, "tx"),
		rxPackets: m.packets.WithLabelValues(s, as, "rx"), rxBytes: m.bytes.WithLabelValues(s, as, "rx"),
		txErrors: m.txErrors.WithLabelValues(s, as), probes: m.probes.WithLabelValues(s, as),
		replies: m.replies.WithLabelValues(s, as), lost: m.probesLost.WithLabelValues(s, as), loss: m.legLoss.WithLabelValues(s, as),
		upHold: m.upHold.WithLabelValues(s, as), upHeld: m.upHeld.WithLabelValues(s, as, "held"), upEarly: m.upHeld.WithLabelValues(s, as, "early"),
	}
}

// reorderStats publishes the downlink reorder buffer's counters (called by the timer
// goroutine, not per packet).
func (tm *tunnelMetrics) reorderStats(st steer.ReorderStats) {
	for kind, v := range map[string]uint64{
		"delivered": st.Delivered, "late": st.Late, "duplicate": st.Duplicate,
		"timed_out": st.TimedOut, "lost": st.Lost, "overflow": st.Overflow, "resync": st.Resync, "stale": st.Stale,
	} {
		tm.m.reorder.WithLabelValues(tm.session, kind).Set(float64(v))
	}
}

// drop counts a dropped packet; drops are the exception, so the label lookup is acceptable.
func (tm *tunnelMetrics) drop(reason string) { tm.m.drops.WithLabelValues(tm.session, reason).Inc() }
func (tm *tunnelMetrics) dropN(reason string, n int) {
	tm.m.drops.WithLabelValues(tm.session, reason).Add(float64(n))
}

// forget removes a closed session's series.
func (tm *tunnelMetrics) forget() {
	l := prometheus.Labels{"session": tm.session}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		tm.m.legRTT, tm.m.legUp, tm.m.legDowns, tm.m.packets, tm.m.bytes, tm.m.txErrors, tm.m.probes,
		tm.m.replies, tm.m.probesLost, tm.m.legLoss, tm.m.drops, tm.m.markers, tm.m.reorder, tm.m.upHold, tm.m.upHeld,
	} {
		v.DeletePartialMatch(l)
	}
}
