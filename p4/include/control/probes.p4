// JUNCTION-UPF: RTT probes and link notifications (paper Fig. 8, section V-E).
//
// Packet's way (Junction control message with a session):
//   PROBE      -> answered with PROBE_REPLY on the same leg (Tunnels + Encap),
//                 upf_ts = now_us, every other body field echoed.
//   PROBE_ACK  -> rtt = now_us - upf_ts (0 -> 1) and the body's loss for the
//                 arrival access.
//   LINK_DOWN  -> rtt 0 and loss 0 for the access in the body.
//   LINK_UP    -> max(rtt_us, 1) and the body's loss for the access in the body.
// The last three are reports: PathState writes them into the user's path state
// unless updates are suspended and sends the probe_reports digest; the message
// itself is consumed.

#ifndef JUNCTION_CONTROL_PROBES_P4
#define JUNCTION_CONTROL_PROBES_P4

control Probes(in headers_t hdr, inout local_metadata_t md) {
    apply {
        if (!md.done && md.path == PATH_JUNCTION) {
            if (md.junction_kind == JK_PROBE) {
                md.reply = true;
            } else if (md.junction_kind == JK_PROBE_ACK) {
                rtt_us_t rtt = md.now_us - hdr.junction_ctl.upf_ts;
                if (rtt == 0) {
                    rtt = 1;  // 0 would mean "unavailable"
                }
                md.report_kind = REPORT_RTT;
                md.report_access = md.arrival_access;
                md.report_rtt = rtt;
                md.report_loss = hdr.junction_ctl.loss_pct;
                md.consume = true;
                md.done = true;
            } else if (md.junction_kind == JK_LINK_DOWN) {
                md.report_kind = REPORT_LINK_DOWN;
                md.report_access = hdr.junction_ctl.access;
                md.report_rtt = 0;
                md.consume = true;
                md.done = true;
            } else if (md.junction_kind == JK_LINK_UP) {
                rtt_us_t rtt = hdr.junction_ctl.ue_ts;
                if (rtt == 0) {
                    rtt = 1;
                }
                md.report_kind = REPORT_LINK_UP;
                md.report_access = hdr.junction_ctl.access;
                md.report_rtt = rtt;
                md.report_loss = hdr.junction_ctl.loss_pct;
                md.consume = true;
                md.done = true;
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_PROBES_P4
