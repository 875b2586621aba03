// Package upfclient is the operator's P4Runtime client for one device (one
// UserPlaneFunction): connection and arbitration, pipeline push, name-based entry building,
// batched writes with per-update errors, streamed reads, registers, counters, digests and
// packet-ins.
//
// Typical use by a controller:
//
//	var calls atomic.Uint64 // leadership epoch high, a per-connect counter low
//	dev, _ := upfclient.New(upfclient.Config{Address: "upf:9559", DeviceID: 1,
//		ElectionID: func() (uint64, uint64) { return leaseTransitions(), calls.Add(1) }, Metrics: m})
//	go dev.Run(ctx) // reconnects forever, with backoff
//	for st := range dev.States() {
//		if st.Primary && st.Generation != replayed {
//			pushed, _ := dev.EnsurePipeline(ctx, info, cfg, upfclient.Cookie(info, cfg), upfclient.PushIfDifferent)
//			// configure digests, then replay: read back, diff (EntryKey, SameEntry), Write
//			replayed = st.Generation
//		}
//	}
//
// It does what the omec-project/upf P4Runtime driver does not: the stream is owned here and
// reconnects with backoff instead of exiting; every new primary session bumps
// State.Generation so the caller replays; writes are batched (thousands of updates per
// request) and each update's own error is reported; reads consume every streamed response;
// digest lists are acked after the handler has consumed them; a full table comes back as
// RESOURCE_EXHAUSTED on the update that did not fit (IsResourceExhausted).
//
// github.com/antoninbas/p4runtime-go-client encodes entry values here (addresses, MACs,
// canonical bytestrings), so entries match what other Go controllers send byte for byte. Its
// Client is not used: it exits the process on stream errors, numbers match fields and params by
// position (an omitted don't-care field shifts every later ID) and resolves unknown names to
// ID 0, so stream handling and name resolution live here.
package upfclient
