//go:build !race

package linkem

const raceEnabled = false
