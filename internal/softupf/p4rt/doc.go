// Package p4rt is a P4Runtime server (spec v1.4.1) in front of a Target data plane. It knows
// nothing about Junction's tables: everything is checked against whatever P4Info the primary
// controller pushes. The server owns the P4Runtime semantics — arbitration, validation,
// canonical bytestrings, entry existence and capacity, reads, digest batching, packet I/O — and
// hands the Target only updates that are already valid.
//
// Register it on a gRPC server with p4v1.RegisterP4RuntimeServer; give that server a
// MaxRecvMsgSize well above gRPC's 4 MiB default (spec 19.2: large Write batches and device
// configs). Clients sending big batches should raise their max metadata (header list) size so
// that a status with one error per update fits (spec 19.1).
//
// Choices where the spec leaves room, or where this server deviates:
//
//   - Bytestrings: any length is accepted if the value fits the bitwidth; values are stored and
//     read back in the shortest form. An empty string or a value too wide is OUT_OF_RANGE (spec
//     8.4), also for match fields and action params. Structural match errors (LPM bits past the
//     prefix, ternary value outside its mask, low > high, a don't-care that was not omitted)
//     are INVALID_ARGUMENT (spec 9.1.1).
//   - An unknown table, register, counter, meter or digest ID in a Write or Read is
//     INVALID_ARGUMENT.
//     A fully specified key that matches nothing reads as no entity, not as an error.
//   - Action scope violations (@defaultonly in an entry, @tableonly as default) are
//     PERMISSION_DENIED, as spec 9.1.2 says.
//   - MODIFY of an entry without an action keeps its action; metadata and controller_metadata
//     take the request's values. DELETE passes only the key (action cleared) to the Target.
//   - Atomicity: ROLLBACK_ON_ERROR is implemented by undoing applied updates in reverse (store
//     and Target); the failed update gets its code and all others ABORTED. DATAPLANE_ATOMIC is
//     UNIMPLEMENTED.
//   - Action profiles, direct counters/meters, idle timeouts, value sets and externs are
//     UNIMPLEMENTED per update; a P4Info that uses them is still accepted if the Target
//     accepts it. Only bit<W> registers (W <= 64) and struct-of-bit<W> or bit<W> digests.
//   - Indirect meters: MODIFY only; a config is checked against the meter type (spec 9.5;
//     for a two-rate meter also pir >= cir, RFC 2698) and no value may be negative; an unset
//     config resets to the default (every packet green). A read returns every cell asked for,
//     a wildcard one included, with config unset on default cells. Per-color counter_data is
//     UNIMPLEMENTED.
//   - Multicast groups are validated and stored for reads but do not reach the Target (the
//     Target interface has no multicast replication). Clone sessions need >= 1 replica.
//   - Roles are opaque: any role.config is accepted for a named role, stored and echoed in
//     notices; every role has full pipeline access and reads are never filtered by role. The
//     default role cannot carry a config. PacketOut is accepted from the primary of any role;
//     packet-ins, digest lists (and acks) belong to the default role's primary.
//   - Packet-out: metadata are checked against the P4Info packet_out header; egress_port is
//     required, other fields (to_ingress, padding) may be omitted (0). to_ingress 1 hands the
//     frame to the Target's pipeline instead of a port. Packet-in carries every packet_in field:
//     ingress_port by name, 0 for the others.
//   - Digests are off until a DigestEntry INSERT (spec 9.9). Besides the spec's duplicate
//     suppression, the next list of a digest waits until the previous one is acked or its
//     ack_timeout_ns passes (flow control). Lists with max_list_size 0 are cut at 1024
//     messages. With no primary, due lists are dropped and counted. A new primary starts with
//     an empty digest cache. An ack for a list never sent is a StreamError INVALID_ARGUMENT;
//     a repeated ack is ignored.
//   - RECONCILE_AND_COMMIT keeps the state when the P4Info equals the running one (with a new
//     device config the Target recommits and tables, default actions and clone sessions are
//     replayed; register and counter cells restart from 0, meter cells from the default
//     config); a different P4Info is handled as VERIFY_AND_COMMIT instead of being refused.
//   - Slow controllers: each stream has a bounded queue for packet-ins and digest lists and a
//     separate one for arbitration notices and stream errors; a full queue drops and counts
//     (Stats). Events never block the data plane.
package p4rt
