package p4rt

import (
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Target is the packet pipeline a Server programs: the software UPF's data plane, or anything
// else that runs a P4Info. The Server owns P4Runtime semantics (arbitration, validation against
// the P4Info, entry existence and capacity, reads); the Target only applies what the Server has
// already validated, and reports what its data plane produces through Events.
type Target interface {
	// CheckPipeline reports whether the target can run this P4Info and device config,
	// with an error that names what it cannot run. It changes nothing.
	CheckPipeline(info *p4configv1.P4Info, deviceConfig []byte) error
	// CommitPipeline switches to the pipeline and resets every table, register and counter,
	// and every meter cell to the default config.
	CommitPipeline(info *p4configv1.P4Info, deviceConfig []byte) error

	// WriteTableEntry applies one update that the Server validated: match fields are in
	// canonical bytestring form, sorted by field ID; for INSERT the key does not exist yet,
	// for MODIFY and DELETE it does. An error is reported for that update as its gRPC status
	// code if it carries one, else as INTERNAL (capacity is the Server's to check, from the
	// P4Info table size).
	WriteTableEntry(op p4v1.Update_Type, entry *p4v1.TableEntry) error
	// SetDefaultAction replaces a table's default action; nil restores the P4 default.
	SetDefaultAction(tableID uint32, action *p4v1.Action) error

	// ReadRegister and WriteRegister access one element (index already range-checked).
	ReadRegister(registerID uint32, index uint32) (uint64, error)
	WriteRegister(registerID uint32, index uint32, value uint64) error
	// ReadCounter and WriteCounter access one indirect counter cell.
	ReadCounter(counterID uint32, index uint32) (packets, bytes uint64, err error)
	WriteCounter(counterID uint32, index uint32, packets, bytes uint64) error
	// ReadMeter and WriteMeter access one indirect meter cell's configuration (index already
	// range-checked, config already validated); nil is the default, which marks every packet
	// green (P4Runtime spec 9.5: a MeterEntry without config resets the cell).
	ReadMeter(meterID uint32, index uint32) (*p4v1.MeterConfig, error)
	WriteMeter(meterID uint32, index uint32, config *p4v1.MeterConfig) error

	// WriteCloneSession installs (replicas non-empty) or removes (replicas nil) a clone session.
	WriteCloneSession(sessionID uint32, replicas []*p4v1.Replica) error

	// PacketOut sends a frame unchanged on egressPort or, with toIngress (packet_out's
	// to_ingress bit), through the pipeline as a frame from the CPU port.
	PacketOut(egressPort uint32, toIngress bool, frame []byte) error

	// SetEvents is called once, before the first CommitPipeline.
	SetEvents(Events)
}

// Events carries what the data plane sends to the controller. Implementations must not block:
// the Server queues and drops (counting) when a controller is slow.
type Events interface {
	// Digest delivers one digest message; members are the struct members' canonical bytestrings.
	Digest(digestID uint32, members [][]byte)
	// PacketIn delivers a frame punted to the CPU port, with the port it arrived on.
	PacketIn(ingressPort uint32, frame []byte)
}
