//go:build !race

package cuptiwrap

// raceEnabled: the race detector is off.
const raceEnabled = false
