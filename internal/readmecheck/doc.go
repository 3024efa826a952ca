// Package readmecheck holds the test that builds every complete Go program
// in the repository's README.md and docs/ against this checkout, so that the
// examples a newcomer pastes compile. It has no code of its own: the check
// lives in a package of its own so that it runs with go test ./... and
// imports nothing else of devprof.
package readmecheck
