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
// the packet it carries). The
// session address that finds the user comes from the user packet's source
// (DATA), the control body (probes, link messages) or the marker's seq field.

#ifndef JUNCTION_CONTROL_JUNCTION_P4
#define JUNCTION_CONTROL_JUNCTION_P4

control JunctionCheck(in headers_t hdr, inout local_metadata_t md) {
    apply {
        if (!md.done && md.path == PATH_JUNCTION) {
            // The UDP header that carries Junction: inside GTP-U on the 3GPP leg.
            bit<16> udp_len = hdr.udp.len;
            if (hdr.inner_udp.isValid()) {
                udp_len = hdr.inner_udp.len;
            }
            bit<4> marks = hdr.junction.marks;
            bool user_fault = false;  // a sound DATA header around an unsound user packet
            bool len_ok = hdr.junction.len == udp_len - (UDP_HDR_BYTES + JUNCTION_HDR_BYTES);
            bool ctl_ok = marks == 0 && hdr.junction.proto == 0 &&
                          hdr.junction.len == JUNCTION_CTL_BYTES && hdr.junction_ctl.isValid() &&
                          (hdr.junction_ctl.access == ACCESS_3GPP ||
                           hdr.junction_ctl.access == ACCESS_NON3GPP);

            if (!len_ok) {
                md.junction_kind = JK_NONE;
            } else if (hdr.junction.msg_type == JUNCTION_DATA) {
                if ((marks & (MARK_EX_PATH | MARK_CURRENT_PATH | MARK_RESERVED)) == MARK_EX_PATH &&
                        hdr.junction.proto == 0 && hdr.junction.len == 0) {
                    // EX-PATH marker: no payload; seq carries the session address.
                    md.junction_kind = JK_MARKER;
                    md.session_addr = hdr.junction.seq;
                } else if ((marks & (MARK_EX_PATH | MARK_RESERVED)) == 0 &&
                        ((marks & MARK_CURRENT_PATH) != 0 || (marks & MARK_EPOCH) == 0) &&
                        hdr.junction.proto == PROTO_IPV4 &&
                        hdr.junction.len >= IPV4_HDR_BYTES &&
                        (md.malformed_user || !hdr.user_ipv4.isValid() ||
                         hdr.user_ipv4.total_len < IPV4_HDR_BYTES ||
                         hdr.user_ipv4.total_len > hdr.junction.len ||
                         (hdr.user_ipv4.frag_offset == 0 &&
                          (hdr.user_ipv4.protocol == PROTO_TCP || hdr.user_ipv4.protocol == PROTO_UDP) &&
                          hdr.user_ipv4.total_len < IPV4_HDR_BYTES + L4_PORTS_BYTES))) {
                    user_fault = true;
                } else if ((marks & (MARK_EX_PATH | MARK_RESERVED)) == 0 &&
                        ((marks & MARK_CURRENT_PATH) != 0 || (marks & MARK_EPOCH) == 0) &&
                        hdr.junction.proto == PROTO_IPV4 &&
                        hdr.junction.len >= IPV4_HDR_BYTES &&
                        hdr.user_ipv4.total_len == hdr.junction.len) {
                    md.junction_kind = JK_DATA;
                    md.session_addr = hdr.user_ipv4.src_addr;
                    md.current_path = (marks & MARK_CURRENT_PATH) != 0;
                    // CURRENT_PATH data carries the reorder timeout in seq,
                    // at most REORDER_MAX_HOLD_US.
                    md.reorder_timeout = hdr.junction.seq;
                    if (hdr.junction.seq > REORDER_MAX_HOLD_US) {
                        md.reorder_timeout = REORDER_MAX_HOLD_US;
                    }
                }
                if ((marks & MARK_EPOCH) != 0) {
                    md.epoch = 1;
                }
            } else if (ctl_ok) {
                md.session_addr = hdr.junction_ctl.session_addr;
                if (hdr.junction.msg_type == JUNCTION_PROBE) {
                    md.junction_kind = JK_PROBE;
                } else if (hdr.junction.msg_type == JUNCTION_PROBE_ACK) {
                    md.junction_kind = JK_PROBE_ACK;
                } else if (hdr.junction.msg_type == JUNCTION_LINK_DOWN) {
                    md.junction_kind = JK_LINK_DOWN;
                } else if (hdr.junction.msg_type == JUNCTION_LINK_UP) {
                    md.junction_kind = JK_LINK_UP;
                }
            }

            if (user_fault) {
                md.drop_reason = DROP_PARSER_ERROR;
                md.done = true;
            } else if (md.junction_kind == JK_NONE) {
                md.drop_reason = DROP_BAD_JUNCTION;
                md.done = true;
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_JUNCTION_P4
