// JUNCTION-UPF, v1model: per-session sequence counters (session_seq).
//
// Packet's way (downlink with a session_overrides hit): seq = session_seq[seq_index]
// + 1, written back; 0 is skipped when the counter wraps, since seq 0 means
// "unsequenced". Summarized sessions keep seq 0. The second copy of a redundant
// packet reuses the first copy's seq.

#ifndef JUNCTION_V1MODEL_SESSION_SEQ_P4
#define JUNCTION_V1MODEL_SESSION_SEQ_P4

control SessionSeq(inout local_metadata_t md) {

    @name(".session_seq") @id(0x16000004)
    register<seq_t, seq_index_t>(MAX_SESSION_OVERRIDES) session_seq;

    apply {
        if (md.path == PATH_DOWNLINK && md.session_hit && !md.checks.parser_error) {
            if (md.redundant_copy) {
                md.seq = md.forced_seq;
            } else if (md.has_override) {
                seq_t last;
                session_seq.read(last, md.seq_index);
                seq_t next = last + 1;
                if (next == 0) {
                    next = 1;
                }
                session_seq.write(md.seq_index, next);
                md.seq = next;
            }
            md.seq_mod_128 = (ratio_t)md.seq[6:0];
        }
    }
}

#endif  // JUNCTION_V1MODEL_SESSION_SEQ_P4
