// JUNCTION-UPF: RTT probes and link notifications (paper Fig. 8, section V-E).
//
// Packet's way (Junction control message with a session):
//   PROBE      -> answered with PROBE_REPLY on the same leg (Tunnels + Encap),
//                 upf_ts = now_us, every other body field echoed.
//   PROBE_ACK  -> rtt = now_us - upf_ts (0 -> 1), the body's loss for the
//                 arrival access and the UE's autonomous share.
//   LINK_DOWN  -> rtt 0 and loss 0 for the access in the body.
//   LINK_UP    -> max(rtt_us, 1) and the body's loss for the access in the body.
// The last three are reports: PathState writes them into the user's path state
// unless updates are suspended and sends the probe_reports digest; the message
// itself is consumed.

#ifndef JUNCTION_CONTROL_PROBES_P4
#define JUNCTION_CONTROL_PROBES_P4

control Probes(in headers_t hdr, inout local_metadata_t md) {

    @hidden @name("probe_reply")
    action reply() {
        md.reply = true;
    }

    @hidden @name("probe_ack")
    action ack() {
        md.report_kind = REPORT_RTT;
        md.report_access = md.arrival_access;
        md.report_rtt = md.now_us - hdr.junction_ctl.upf_ts;
        md.state_rtt = md.now_us - hdr.junction_ctl.upf_ts;
        md.report_loss = hdr.junction_ctl.loss_pct;
        // The UE's autonomous share (bit 7 is reserved), in the field that holds seq % 128 on
        // downlink: a report has no seq, and a stateful ALU takes two PHV inputs, which
        // autonomous_share's downlink read takes both of (TNA's PathState).
        md.seq_mod_128 = hdr.junction_ctl.share & 0x7f;
        md.checks.report = true;
    }

    @hidden @name("probe_link_down")
    action link_down() {
        md.report_kind = REPORT_LINK_DOWN;
        md.report_access = hdr.junction_ctl.access;
        md.report_rtt = 0;
        md.state_rtt = 0;
        md.seq_mod_128 = 0;
        md.checks.report = true;
    }

    @hidden @name("probe_link_up")
    action link_up() {
        md.report_kind = REPORT_LINK_UP;
        md.report_access = hdr.junction_ctl.access;
        md.report_rtt = hdr.junction_ctl.ue_ts;
        md.state_rtt = hdr.junction_ctl.ue_ts;
        md.report_loss = hdr.junction_ctl.loss_pct;
        md.seq_mod_128 = 0;
        md.checks.report = true;
    }

    @hidden @name("probe_none")
    action none() {
    }

    // Decided on the control body's message type, not on JunctionCheck's verdict,
    // so as not to wait for it: a message JunctionCheck refuses is dropped first
    // (DropReasons), and PathState writes nothing for it.
    @hidden @name("probes")
    table probes {
        key = {
            md.path                    : exact;
            hdr.junction_ctl.isValid() : exact;
            hdr.junction.msg_type      : exact;
        }
        actions = {
            reply;
            ack;
            link_down;
            link_up;
            none;
        }
        const default_action = none();
        const entries = {
            (PATH_JUNCTION, true, JUNCTION_PROBE) : reply();
            (PATH_JUNCTION, true, JUNCTION_PROBE_ACK) : ack();
            (PATH_JUNCTION, true, JUNCTION_LINK_DOWN) : link_down();
            (PATH_JUNCTION, true, JUNCTION_LINK_UP) : link_up();
        }
    }

    apply {
        probes.apply();
        // An RTT of 0 would mean "unavailable": a PROBE_ACK in the microsecond of its
        // reply, or a LINK_UP without an estimate, reads 1.
        if (md.report_rtt == 0 &&
                (md.report_kind == REPORT_RTT || md.report_kind == REPORT_LINK_UP)) {
            md.report_rtt = 1;
            md.state_rtt = 1;
        }
    }
}

#endif  // JUNCTION_CONTROL_PROBES_P4
