// This file lets the package declare functions without a body (adopt in
// snapshot.go), which go:linkname binds to the event model's.
