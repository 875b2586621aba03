// JUNCTION-UPF, TNA build: per-session sequence counters (session_seq).
//
// Packet's way (downlink with a session_overrides hit): one stateful ALU step
// increments session_seq[seq_index] (skipping 0, which means "unsequenced")
// and returns the new value as seq. The second copy of a redundant packet
// reuses the first copy's seq.

#ifndef JUNCTION_TNA_SESSION_SEQ_P4
#define JUNCTION_TNA_SESSION_SEQ_P4

control SessionSeq(inout local_metadata_t md, out bit<1> seq_bit6) {

    @name(".session_seq") @id(0x16000004)
    Register<seq_t, seq_index_t>(MAX_SESSION_OVERRIDES, 0) session_seq;

    RegisterAction<seq_t, seq_index_t, seq_t>(session_seq) next_seq = {
        void apply(inout seq_t value, out seq_t result) {
            if (value == 0xFFFFFFFF) {
                value = 1;
            } else {
                value = value + 1;
            }
            result = value;
        }
    };

    // seq % 128 and its bit 6 by the hash unit: an ALU taking bits of seq would split
    // it, and every field it is copied to, across containers.
    Hash<ratio_t>(HashAlgorithm_t.IDENTITY) mod_128;
    Hash<bit<1>>(HashAlgorithm_t.IDENTITY) bit6;

    apply {
        if (md.path == PATH_DOWNLINK && md.session_hit && !md.checks.parser_error) {
            if (md.redundant_copy) {
                md.seq = md.forced_seq;
            } else if (md.has_override) {
                md.seq = next_seq.execute(md.seq_index);
            }
            md.seq_mod_128 = mod_128.get({1w0, md.seq[6:0]});
            seq_bit6 = bit6.get({md.seq[6:6]});
        }
    }
}

#endif  // JUNCTION_TNA_SESSION_SEQ_P4
