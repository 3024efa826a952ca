//go:build !race

package pprof

// raceEnabled says the race detector is on.
const raceEnabled = false
