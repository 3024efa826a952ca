// Package xplanepb holds the Go types generated from devprof's own subset
// of the XSpace schema (xplane.proto): the format of TensorBoard profile
// files. The xplane exporter writes the wire format directly; these types
// serve its reader and the tests that cross-check the two.
package xplanepb
