// JUNCTION-UPF, TNA build (Tofino 2, t2na.p4): target facts and internal
// encodings of recirculation, mirroring and advanced flow control.

#ifndef JUNCTION_TNA_DEFINE_P4
#define JUNCTION_TNA_DEFINE_P4

// Port numbers are target facts; override with -D for another board.
#ifndef CPU_PORT
#define CPU_PORT 0        // Tofino 2 PCIe CPU port (pipe 0)
#endif
#ifndef RECIRC_PORT
#define RECIRC_PORT 6     // Tofino 2 recirculation port of pipe 0
#endif
const PortId_t TNA_CPU_PORT = CPU_PORT;

// The smaller of two values, one ALU instruction: how the shared controls compare
// two fields (a <= b is min_u32(a, b) == a), since a gateway compares a field only
// with a constant or for equality. Macros, not functions: an inlined function
// copies its arguments first, and an action cannot use a value it computes.
#define min_u32(a, b) min<bit<32>>(a, b)
#define min_u16(a, b) min<bit<16>>(a, b)
#define min_u8(a, b) min<bit<8>>(a, b)
const PortId_t TNA_RECIRC_PORT = RECIRC_PORT;

// Mirror session of the reorder timer and queue-free notices; its egress port
// must be TNA_RECIRC_PORT, with truncation if the SDE offers it.
const MirrorId_t REORDER_TIMER_SESSION = 101;

// First byte of what the egress parser sees: bridged metadata or a mirror header.
// (A mirror header takes its first byte from metadata: Tofino's deparser emits no
// non-zero constant in a mirror field list.)
const bit<8> BMD_BRIDGED              = 0x01;
const bit<8> BMD_MIRROR_REDUNDANT     = 0x11;
const bit<8> BMD_MIRROR_TIMER         = 0x12;
const bit<8> BMD_MIRROR_QUEUE_FREE    = 0x13;

// ig/eg_intr_md_for_dprsr.mirror_type values (0: no mirror, the deparser's default).
const bit<4> MIRROR_TYPE_REDUNDANT    = 1;  // I2E: second copy of a redundant packet
const bit<4> MIRROR_TYPE_TIMER        = 2;  // I2E: reorder timer
const bit<4> MIRROR_TYPE_QUEUE_FREE   = 3;  // E2E: a reorder queue ran empty

// internal_t.kind: what a recirculated internal packet is.
const bit<8> INTERNAL_REDUNDANT       = 1;
const bit<8> INTERNAL_TIMER           = 2;
const bit<8> INTERNAL_QUEUE_FREE      = 3;

const bit<3> DIGEST_TYPE_PROBE_REPORT = 1;

// Reorder decisions (Reorder -> ReorderQueue).
const bit<8> REORDER_FORWARD          = 0;
const bit<8> REORDER_HOLD             = 1;  // into the user's paused queue
const bit<8> REORDER_START            = 2;  // first held packet: claim and pause a queue
// What a reorder timer finds (a queue-free notice: ENDED or not).
const bit<8> TIMER_KEEP               = 0;  // still holding: recirculate the timer
const bit<8> TIMER_ENDED              = 2;  // the marker released it, or the timer did now
                                            // (deadline passed): resume the queue
const bit<8> TIMER_STALE              = 3;  // another hold owns the queue now

// Advanced flow control message (adv_flow_ctl, 32 bits):
//   qfc (1) | egress port (9) | queue id (7) | credit (15)
// credit 1 pauses (XOFF) the queue, 0 resumes (XON) it.
const bit<1>  AFC_QFC                 = 1;
const bit<15> AFC_CREDIT_PAUSE        = 1;
const bit<15> AFC_CREDIT_RESUME       = 0;

// Reorder queues: way A is 64..127, way B is 32..63 (size.p4).
const bit<7> REORDER_QID_BASE_A       = 64;
const bit<7> REORDER_QID_BASE_B       = 32;

// Timer and queue-free packets need no more than the internal header.
const bit<14> INTERNAL_TRUNC_BYTES    = 64;

// Where Encap's tables go (egress): bf-p4c put them in the first stages, whose 16 logical
// tables ingress needs, and ingress then took 21 stages. Stages 9 and 10 have SRAM, TCAM and
// logical tables to spare (docs/tofino.md, per stage).
#define TNA_STAGE(n) @stage(n)

#endif  // JUNCTION_TNA_DEFINE_P4
