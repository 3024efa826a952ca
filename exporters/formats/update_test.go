package formats

import "flag"

// This package has no golden files, but it sits under ./exporters/..., so
// it accepts the flag that regenerates the writers' goldens and does
// nothing with it: go test ./exporters/... -update must run everywhere.
var _ = flag.Bool("update", false, "no golden files in this package; accepted for go test ./exporters/... -update")
