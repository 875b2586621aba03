// JUNCTION-UPF: IPv4 routing on the final outer destination
// (docs/pipeline.md, step 5).
//
// Packet's way: whatever leaves the UPF (decapsulated uplink, encapsulated
// downlink, probe replies, plain routed traffic) looks up routes with the
// destination of its outermost IPv4 header as it will leave; the hit gives
// the egress port and the Ethernet addresses, a miss drops NO_ROUTE. An EX-PATH
// marker goes nowhere: Reorder, after this, consumes it.

#ifndef JUNCTION_CONTROL_ROUTING_P4
#define JUNCTION_CONTROL_ROUTING_P4

control Routing(inout headers_t hdr, inout local_metadata_t md) {

    // The Ethernet addresses are written here, straight from the entry: the frame
    // that leaves has them whatever headers Rewrite and Encap take off or add.
    @name(".route") @id(0x01000013)
    action route(port_num_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        md.egress_port = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }

    @name(".drop_no_route") @id(0x01000014)
    action drop_no_route() {
        md.checks.no_route = true;
    }

    @name(".routes") @id(0x0200000A)
    table routes {
        key = {
            md.route_dst : lpm @name("dst_addr");
        }
        actions = {
            route;
            @defaultonly drop_no_route;
        }
        const default_action = drop_no_route();
        size = MAX_ROUTES;
    }

    apply {
        // For every packet that may leave, dropped or not (that costs nothing); not
        // for a punted frame, which goes to the controller as it came.
        if (!md.done && !md.punt && md.junction_kind != JK_MARKER) {
            routes.apply();
        }
    }
}

#endif  // JUNCTION_CONTROL_ROUTING_P4
