// Package profilerpb is the generated Go code of devprof's own subset of
// TSL's profiler service (package tensorflow: ProfilerService, with
// ProfileRequest, ProfileOptions, ProfileResponse and the Terminate and
// Monitor messages), with the real names and field numbers so that
// jax.collect_profile and xprof's capture talk to a devprof server.
// Package profileserver serves it. The .proto files beside this one are
// the source; generate.sh regenerates the code.
package profilerpb
