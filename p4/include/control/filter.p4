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
        md.checks.filtered = true;
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

    // Each path's TTL tested and written where it is (a TTL copied to one field
    // first would tie the three headers together in the PHV), as 0 or 1 rather
    // than <= 1 (a test of bits 7..1 would split the field).
    apply {
        if (md.path == PATH_DOWNLINK || md.path == PATH_GTPU_UPLINK ||
                (md.path == PATH_JUNCTION && hdr.user_ipv4.isValid())) {
            filters.apply();
            if (!md.skip_ttl && !md.reorder_held) {
                if (md.path == PATH_GTPU_UPLINK) {
                    if (hdr.inner_ipv4.ttl == 0 || hdr.inner_ipv4.ttl == 1) {
                        md.checks.ttl_expired = true;
                    } else {
                        hdr.inner_ipv4.ttl = hdr.inner_ipv4.ttl - 1;
                    }
                } else if (md.path == PATH_JUNCTION) {
                    if (hdr.user_ipv4.ttl == 0 || hdr.user_ipv4.ttl == 1) {
                        md.checks.ttl_expired = true;
                    } else {
                        hdr.user_ipv4.ttl = hdr.user_ipv4.ttl - 1;
                    }
                } else if (hdr.ipv4.ttl == 0 || hdr.ipv4.ttl == 1) {
                    md.checks.ttl_expired = true;
                } else {
                    hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                }
            }
        }
    }
}

#endif  // JUNCTION_CONTROL_FILTER_P4
