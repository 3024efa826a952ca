//go:build race

package cuptiwrap

// raceEnabled: the race detector is on, which changes what some tests may
// expect (sync.Pool drops items on purpose).
const raceEnabled = true
