// JUNCTION-UPF, TNA build: per-session sequence counters (session_seq).
//
// Packet's way (downlink with a session_overrides hit): one stateful ALU step
// increments session_seq[seq_index] (skipping 0, which means "unsequenced")
// and returns the new value as seq. The second copy of a redundant packet
// reuses the first copy's seq.

#ifndef JUNCTION_TNA_SESSION_SEQ_P4
#define JUNCTION_TNA_SESSION_SEQ_P4

control SessionSeq(inout local_metadata_t md) {

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

    apply {
        if (!md.done && md.path == PATH_DOWNLINK && md.session_hit) {
            if (md.redundant_copy) {
                md.seq = md.forced_seq;
            } else if (md.has_override) {
                md.seq = next_seq.execute(md.seq_index);
            }
        }
    }
}

#endif  // JUNCTION_TNA_SESSION_SEQ_P4
