// JUNCTION-UPF: the stateless filter and the user packet's TTL
// (docs/pipeline.md, step 5).
//
// Packet's way: every user packet (uplink after decapsulation, downlink
// before encapsulation, plain routing) meets filters on its own 5-tuple; deny
// drops FILTERED. Then its TTL goes down by one; a packet that arrived with
// TTL <= 1 is dropped TTL_EXPIRED. UPF-generated replies skip both; a held
// packet back from the v1model reorder loop keeps the TTL its first pass gave it.

#ifndef JUNCTION_CONTROL_FILTER_P4
#define JUNCTION_CONTROL_FILTER_P4

control Filter(inout headers_t hdr, inout local_metadata_t md) {

    @name(".permit") @id(0x01000011)
    action permit() {
    }

    @name(".deny") @id(0x01000012)
    action deny() {
        md.drop_reason = DROP_FILTERED;
        md.done = true;
    }

    @name(".filters") @id(0x02000009)
    table filters {
        key = {
            md.user_src   : ternary @name("src_addr");
            md.user_dst   : ternary @name("dst_addr");
            md.user_proto : ternary @name("proto");
            md.user_sport : range   @name("src_port");
            md.user_dport : range   @name("dst_port");
        }
        actions = {
            permit;
            deny;
        }
        const default_action = permit();
        size = MAX_FILTERS;
    }

    apply {
        bool user_packet = md.path == PATH_DOWNLINK || md.path == PATH_GTPU_UPLINK ||
                           (md.path == PATH_JUNCTION && md.junction_kind == JK_DATA);
        if (!md.done && user_packet) {
            filters.apply();
        }
        if (!md.done && user_packet && !md.skip_ttl && !md.reorder_held) {
            bit<8> ttl = hdr.ipv4.ttl;
            if (md.path == PATH_GTPU_UPLINK) {
                ttl = hdr.inner_ipv4.ttl;
            } else if (md.path == PATH_JUNCTION) {
                ttl = hdr.user_ipv4.ttl;
            }
            if (ttl <= 1) {
                md.drop_reason = DROP_TTL_EXPIRED;
                md.done = true;
            } else if (md.path == PATH_GTPU_UPLINK) {
                hdr.inner_ipv4.ttl = ttl - 1;
            } else if (md.path == PATH_JUNCTION) {
                hdr.user_ipv4.ttl = ttl - 1;
            } else {
                hdr.ipv4.ttl = ttl - 1;
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_FILTER_P4
