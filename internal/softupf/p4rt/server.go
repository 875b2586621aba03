package p4rt

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// APIVersion is the P4Runtime version this server implements (Capabilities RPC).
const APIVersion = "1.4.1"

// Tuning defaults, each with its reason.
const (
	// A ReadResponse of 1000 table entries is ~100 KB: far below gRPC's 4 MiB receive default.
	defaultReadChunk = 1000
	// Cap a chunk at 1 MiB whatever the entities' size (long metadata, wide keys).
	defaultReadChunkBytes = 1 << 20
	// Per-controller queue of packet-ins and digest lists: a few ms of a busy punt path.
	defaultStreamQueue = 1024
	// Arbitration notices and stream errors have their own queue so bursts of packet-ins
	// cannot push them out.
	controlQueue = 256
	// Digest messages held per digest while a list awaits its ack.
	defaultDigestBuffer = 4096
	// A digest list with max_list_size 0 ("no limit") is still cut at this size.
	maxDigestList = 1024
	// Live streams per role (spec 5.3 rule 1.4: RESOURCE_EXHAUSTED beyond a limit).
	maxControllersPerRole = 64
)

// Clock gives the server time; tests substitute a manual one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it if it has not run.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Options configure a Server. The zero value is usable (device ID 0).
type Options struct {
	// DeviceID is the P4Runtime device_id every request must carry.
	DeviceID uint64
	// MaxReadChunk is the most entities per ReadResponse (default 1000).
	MaxReadChunk int
	// MaxReadChunkBytes caps the encoded size of a ReadResponse (default 1 MiB).
	MaxReadChunkBytes int
	// StreamQueue is each controller's queue of packet-ins and digest lists (default 1024);
	// when it is full, new ones are dropped and counted.
	StreamQueue int
	// DigestBuffer is how many digest messages wait per digest for a list (default 4096).
	DigestBuffer int
	// Clock defaults to the system clock.
	Clock Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Stats counts what the server did since it started.
type Stats struct {
	Inserts, Modifies, Deletes uint64 // successful updates of any entity
	UpdateErrors               uint64 // updates rejected (validation, existence, capacity, target)
	WriteRequests              uint64
	ReadRequests               uint64
	EntitiesRead               uint64
	PacketIns                  uint64 // queued to the primary
	PacketInDrops              uint64 // no primary or its queue full
	PacketOuts                 uint64 // handed to the target
	PacketOutErrors            uint64
	DigestLists                uint64 // lists queued to the primary
	DigestMessages             uint64 // messages in those lists
	DigestDrops                uint64 // messages lost: disabled digest, buffer or queue full, no primary
	DigestDuplicates           uint64 // messages suppressed as already sent and not acked
	StreamErrors               uint64 // StreamError messages sent
	NoticeDrops                uint64 // arbitration notices or stream errors lost to a full queue
}

type stats struct {
	inserts, modifies, deletes, updateErrors, writeRequests, readRequests, entitiesRead atomic.Uint64
	packetIns, packetInDrops, packetOuts, packetOutErrors                               atomic.Uint64
	digestLists, digestMessages, digestDrops, digestDuplicates                          atomic.Uint64
	streamErrors, noticeDrops                                                           atomic.Uint64
}

// Server implements p4v1.P4RuntimeServer for one device.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer

	target Target
	opts   Options
	log    *slog.Logger
	clock  Clock

	// state serializes Writes and pipeline changes (Lock) against Reads (RLock). It guards
	// active: the pipeline that Read and Write refer to (a saved one between VERIFY_AND_SAVE
	// and COMMIT).
	state  sync.RWMutex
	active *pipeline
	// running is the pipeline the Target runs, read without locks by packet I/O and digests.
	running atomic.Pointer[pipeline]

	arb     *arbiter
	digests *digestEngine
	stats   stats
}

// New returns a Server in front of target and registers itself as the target's Events.
func New(target Target, opts Options) *Server {
	if opts.MaxReadChunk <= 0 {
		opts.MaxReadChunk = defaultReadChunk
	}
	if opts.MaxReadChunkBytes <= 0 {
		opts.MaxReadChunkBytes = defaultReadChunkBytes
	}
	if opts.StreamQueue <= 0 {
		opts.StreamQueue = defaultStreamQueue
	}
	if opts.DigestBuffer <= 0 {
		opts.DigestBuffer = defaultDigestBuffer
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{target: target, opts: opts, log: opts.Logger, clock: opts.Clock}
	s.arb = newArbiter(s)
	s.digests = newDigestEngine(s)
	target.SetEvents(serverEvents{s})
	return s
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{
		Inserts: c.inserts.Load(), Modifies: c.modifies.Load(), Deletes: c.deletes.Load(),
		UpdateErrors: c.updateErrors.Load(), WriteRequests: c.writeRequests.Load(),
		ReadRequests: c.readRequests.Load(), EntitiesRead: c.entitiesRead.Load(),
		PacketIns: c.packetIns.Load(), PacketInDrops: c.packetInDrops.Load(),
		PacketOuts: c.packetOuts.Load(), PacketOutErrors: c.packetOutErrors.Load(),
		DigestLists: c.digestLists.Load(), DigestMessages: c.digestMessages.Load(),
		DigestDrops: c.digestDrops.Load(), DigestDuplicates: c.digestDuplicates.Load(),
		StreamErrors: c.streamErrors.Load(), NoticeDrops: c.noticeDrops.Load(),
	}
}

// Capabilities reports the implemented P4Runtime version.
func (s *Server) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: APIVersion}, nil
}

func (s *Server) checkDevice(id uint64) error {
	if id != s.opts.DeviceID {
		return errf(codes.NotFound, "device_id %d is not served here (this device is %d)", id, s.opts.DeviceID)
	}
	return nil
}
