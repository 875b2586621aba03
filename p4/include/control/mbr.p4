// JUNCTION-UPF: which MBR policer cell a user packet meets (mbr_sessions).
//
// A PDU session with a maximum bit rate has one entry, keyed by its UE address: the
// user packet's source on the uplink, its destination on the downlink. The entry
// names the cell of uplink_mbr / downlink_mbr the packet is metered at (the
// operator gives the session's usage cell); a miss is not policed. The meters
// themselves are each target's extern: v1model runs them in Verdict, on a packet's
// first pass; TNA in egress, where the ingress has no stage left (docs/tofino.md),
// so the lookup is by an address egress can read rather than by an index bridged
// from ingress.

#ifndef JUNCTION_CONTROL_MBR_P4
#define JUNCTION_CONTROL_MBR_P4

control MBRSessions(in ipv4_addr_t ue_addr, out bool hit, out usage_idx_t cell) {

    @name(".police") @id(0x01000017)
    action police(usage_idx_t usage_idx) {
        hit = true;
        cell = usage_idx;
    }

    @name(".no_police") @id(0x01000018)
    action no_police() {
        hit = false;
        cell = 0;
    }

    // On Tofino 2 in egress, past Encap's lookups (stages 9 and 10): left to itself, bf-p4c
    // put it in early stages, and an ingress gateway then met tunnel_qfis in stage 9's input
    // crossbar (a compiler bug: "Hash table collision").
    @name(".mbr_sessions") @id(0x0200000C) TNA_STAGE(11)
    table mbr_sessions {
        key = {
            ue_addr : exact @name("ue_addr");
        }
        actions = {
            police;
            @defaultonly no_police;
        }
        const default_action = no_police();
        size = MAX_USAGE_RECORDS;
    }

    apply {
        mbr_sessions.apply();
    }
}

#endif  // JUNCTION_CONTROL_MBR_P4
