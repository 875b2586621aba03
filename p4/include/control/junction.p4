// JUNCTION-UPF: Junction message classification and validation
// (docs/junction-header.md, "Valid combinations").
//
// Packet's way: a Junction packet to a local address becomes one of DATA,
// EX-PATH marker, PROBE, PROBE_ACK, LINK_DOWN, LINK_UP; anything else
// (unknown type, marks other than the allowed ones, a length that disagrees
// with UDP or with the user packet, a control body whose access is not 1 or
// 2, PROBE_REPLY sent to the UPF) is dropped as BAD_JUNCTION; DATA whose header is
// sound but whose user packet is not (options, a total length below 20 or beyond
// the Junction payload, TCP or UDP without room for its ports) is PARSER_ERROR,
// the order the software UPF's parser checks them in (header, its length, then
// the packet it carries).
//
// Two steps, as a switch pipeline takes them: the lengths and the user packet
// become one bit each, then junction_kinds (DATA and markers) or
// junction_controls (control messages), whose constant entries are the valid
// combinations of docs/junction-header.md row by row, classify the header (the
// first entry that matches wins).

#ifndef JUNCTION_CONTROL_JUNCTION_P4
#define JUNCTION_CONTROL_JUNCTION_P4

control JunctionCheck(in headers_t hdr, inout local_metadata_t md) {
    bit<1> len_ok;     // the header's length is its UDP payload's, less the header
    bit<1> user_bad;   // the user packet inside DATA is unsound (a PARSER_ERROR)
    bit<1> user_fits;  // the user packet's total length is the header's length

    @hidden @name("junction_data")
    action data(bit<1> current_path) {
        md.junction_kind = JK_DATA;
        md.current_path = (bool)current_path;
        md.epoch = hdr.junction.marks[2:2];
        // CURRENT_PATH data carries the reorder timeout in seq, at most REORDER_MAX_HOLD_US.
        md.reorder_timeout = min_u32(hdr.junction.seq, REORDER_MAX_HOLD_US);
    }

    // EX-PATH marker: no payload; seq carries the session address (UserPacket).
    @hidden @name("junction_marker")
    action marker() {
        md.junction_kind = JK_MARKER;
        md.epoch = hdr.junction.marks[2:2];
    }

    @hidden @name("junction_control")
    action control_message(junction_kind_t kind) {
        md.junction_kind = kind;
    }

    @hidden @name("junction_user_fault")
    action user_fault() {
        md.checks.bad_user_packet = true;
    }

    @hidden @name("junction_bad")
    action bad() {
        md.checks.bad_junction = true;
    }

    // The marks that say which DATA message it is; EPOCH goes with either.
#define MARKS_DATA (MARK_EX_PATH | MARK_CURRENT_PATH | MARK_RESERVED)
    @hidden @name("junction_kinds")
    table junction_kinds {
        key = {
            len_ok                : exact;
            hdr.junction.msg_type : ternary;
            hdr.junction.marks    : ternary;
            hdr.junction.proto    : ternary;
            hdr.junction.len      : range;
            user_bad              : ternary;
            user_fits             : ternary;
        }
        actions = {
            data;
            marker;
            user_fault;
            bad;
        }
        const default_action = bad();
        const entries = {
            // DATA: marks none, CURRENT_PATH or CURRENT_PATH | EPOCH (EPOCH is outside
            // MARKS_DATA), proto 4, at least an IPv4 header; its user packet sound (else
            // a parser error) and exactly as long as the header says.
            (1, JUNCTION_DATA, 0, PROTO_IPV4, IPV4_HDR_BYTES .. 0xFFFF, 1, _) : user_fault();
            (1, JUNCTION_DATA, MARK_CURRENT_PATH &&& MARKS_DATA, PROTO_IPV4, IPV4_HDR_BYTES .. 0xFFFF, 1, _) : user_fault();
            (1, JUNCTION_DATA, 0, PROTO_IPV4, IPV4_HDR_BYTES .. 0xFFFF, 0, 1) : data(0);
            (1, JUNCTION_DATA, MARK_CURRENT_PATH &&& MARKS_DATA, PROTO_IPV4, IPV4_HDR_BYTES .. 0xFFFF, 0, 1) : data(1);
            // EX-PATH marker: EX_PATH, with or without EPOCH.
            (1, JUNCTION_DATA, MARK_EX_PATH &&& MARKS_DATA, 0, 0 .. 0, _, _) : marker();
        }
    }

    // Control messages: the parser extracts the 16-byte body only after a header with
    // no marks, proto 0 and length 16; here its length against the UDP payload and
    // the body's access, 1 or 2. PROBE_REPLY is the UPF's own: sent to it,
    // BAD_JUNCTION. (A table of its own, so that reports need not wait for the
    // checks of a user packet they do not carry.)
    @hidden @name("junction_controls")
    table junction_controls {
        key = {
            len_ok                  : exact;
            hdr.junction.msg_type   : exact;
            hdr.junction_ctl.access : exact;
        }
        actions = {
            control_message;
            bad;
        }
        const default_action = bad();
        const entries = {
            (1, JUNCTION_PROBE, ACCESS_3GPP) : control_message(JK_PROBE);
            (1, JUNCTION_PROBE, ACCESS_NON3GPP) : control_message(JK_PROBE);
            (1, JUNCTION_PROBE_ACK, ACCESS_3GPP) : control_message(JK_PROBE_ACK);
            (1, JUNCTION_PROBE_ACK, ACCESS_NON3GPP) : control_message(JK_PROBE_ACK);
            (1, JUNCTION_LINK_DOWN, ACCESS_3GPP) : control_message(JK_LINK_DOWN);
            (1, JUNCTION_LINK_DOWN, ACCESS_NON3GPP) : control_message(JK_LINK_DOWN);
            (1, JUNCTION_LINK_UP, ACCESS_3GPP) : control_message(JK_LINK_UP);
            (1, JUNCTION_LINK_UP, ACCESS_NON3GPP) : control_message(JK_LINK_UP);
        }
    }

#undef MARKS_DATA

    apply {
        if (md.path == PATH_JUNCTION) {
            // The header's length against the UDP's that carries it (inside GTP-U on
            // the 3GPP leg), through the parser's copies (junction_*): the header's
            // length plus 16, under isValid() as in Lengths so that p4c does not fold
            // the sum into the test.
            bit<16> udp_len = 0;
            if (hdr.junction.isValid()) {
                udp_len = md.junction_len + (UDP_HDR_BYTES + JUNCTION_HDR_BYTES);
            }
            len_ok = 0;
            if (md.junction_udp_len == udp_len) {
                len_ok = 1;
            }

            // The user packet: options or another version (the parser's malformed_user),
            // a total length below 20 or beyond the Junction payload, TCP or UDP
            // without room for its ports.
            bit<16> user_fit = min_u16(md.user_total_len, md.junction_len);
            user_bad = 0;
            user_fits = 0;
            if (md.malformed_user || !hdr.user_ipv4.isValid()) {
                user_bad = 1;
            } else if (md.user_ipv4_short == IPV4_NO_HEADER) {
                user_bad = 1;
            } else if (user_fit != md.user_total_len) {
                user_bad = 1;
            } else if (hdr.user_ipv4.frag_offset == 0 &&
                    (hdr.user_ipv4.protocol == PROTO_TCP || hdr.user_ipv4.protocol == PROTO_UDP)) {
                if (md.user_ipv4_short != IPV4_LONG_ENOUGH) {
                    user_bad = 1;
                }
            }
            if (md.user_total_len == md.junction_len) {
                user_fits = 1;
            }

            if (hdr.junction_ctl.isValid()) {
                junction_controls.apply();
            } else {
                junction_kinds.apply();
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_JUNCTION_P4
