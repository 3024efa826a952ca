//go:build race

package pprof

// raceEnabled says the race detector is on: it makes the 1 M-buffer
// round trip (no goroutines) ~20 times slower.
const raceEnabled = true
