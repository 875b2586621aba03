//go:build race

package linkem

// raceEnabled: the race detector slows the bridge several times; timed tests send slower.
const raceEnabled = true
