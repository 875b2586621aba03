// Package steer is the decision logic of the UE agent (JUNCTION-UE, paper section V-B): which
// application a user packet belongs to, which leg it leaves on, how a switch of legs is marked
// for the UPF's reorder engine, how the downlink is put back in order, and when a leg is up.
// Everything here is a pure state machine: no I/O, no goroutines, no clock of its own (time is
// an argument, so tests use a fake one), no allocation on the per-packet calls.
//
// How the agent uses each piece, per session:
//
//	uplink packet   Classifier.Classify (the UPF's applications table, seen from the UE)
//	                ─> Choose (the pipeline's steering decision over the legs' path state)
//	                ─> single-path modes: Switcher.Next (EX-PATH marker on the old leg, CURRENT_PATH
//	                   marks and ReorderTimeout on the new one) ─> Junction header ─> leg(s)
//	downlink DATA   seq 0: straight to the TUN; else Reorder.Push ─> deliver in sequence order,
//	                drop redundant mode's second copies; a timer calls Reorder.Expire at
//	                Reorder.Deadline, with the timeout from BufferTimeout
//	per leg         Leg: Sent when NextProbe is due (PROBE with the returned ue_ts), Reply on a
//	                PROBE_REPLY (then PROBE_ACK, only when it is accepted), Tick at NextDeadline
//	                for missed replies, LinkDown/LinkUp from netlink, Traffic while data flows;
//	                Leg.Event hands out the state changes, which say when to send LINK_DOWN (on
//	                the other leg) and LINK_UP; PathRTT is the leg's path state for Choose
//	                (0: unavailable), RTT and RTTVar feed ReorderTimeout and BufferTimeout
//
// The encodings are docs/pipeline.md's ("Encodings shared by every part"): accesses 1 (3GPP) and
// 2 (non-3GPP), modes 1..6, RTTs in microseconds with 0 meaning "unavailable", sequence numbers
// that skip 0. Steering parameters are desired.Steering, built by internal/desired exactly as the
// operator builds the UPF's entries, so that both ends of a session steer alike.
package steer
