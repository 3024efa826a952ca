// Package profileserver lets a running Go program be captured remotely, as
// jax.profiler.start_server lets a JAX program be: it serves gRPC
// tensorflow.ProfilerService, the service that jax.collect_profile,
// xprof's CAPTURE PROFILE button and devprof collect call, so a
// long-running service can be traced without a restart and without
// writing anything to its own disk.
//
// Its place in devprof's flow is at the very end, as a server: each
// request runs one session through trace.Capture, and the trace goes back
// to the client instead of into files.
//
//	client's Profile → profileserver → trace.Capture (sources → recorder → event model → exporters/xplane) → XSpace in the answer
//
// # Serving
//
// A program starts the server once and keeps it for its lifetime:
//
//	srv, err := profileserver.StartServer(":9999", profileserver.Options{}) // 127.0.0.1:9999
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer srv.Stop()
//
// and, from a shell on the same machine,
//
//	python -m jax.collect_profile 9999 2000 --log_dir /tmp/prof --no_perfetto_link
//
// records two seconds and writes
// /tmp/prof/plugins/profile/<run>/127.0.0.1_9999.xplane.pb on the client's
// disk, from the XSpace the server answers with. devprof collect does the
// same for several servers at once and merges their traces.
//
// The service's methods:
//
//   - Profile records for the request's duration and answers with the
//     XSpace (as tool data "xplane.pb", or in the answer's xspace when
//     the request sets emit_xspace). Its host and device tracer levels and
//     advanced configuration go through trace.Options and are validated
//     exactly as a local session's: an unknown key or a value out of range
//     is INVALID_ARGUMENT naming it.
//   - Terminate ends the running capture early; its Profile answers with
//     what was recorded. Server.Stop and a client that goes away do too.
//   - GetSnapshot answers at once with the last window of the program's
//     flight recorder (trace.Options.FlightRecorder), which keeps
//     recording.
//   - Monitor answers with text: the running session, the process and Go
//     runtime, and each GPU's memory as NVML reports it.
//
// # Limits
//
// One capture runs at a time, and none while a local session runs: a
// second is FAILED_PRECONDITION saying which runs. A capture records at
// most Options.MaxDuration (MaxDuration, 10 minutes, by default), also
// when the request asks to record until stopped; requests are at most
// MaxRequestBytes, and may start at most MaxStartDelay ahead. Paths in a
// request name the client's disk and are never used. An address without
// a host listens on 127.0.0.1 only; listening on every interface is done
// only when asked, with a warning on Options.Log, since there is no
// authentication or TLS and whoever reaches the port can record the
// process.
//
// # Costs
//
// An idle server costs its listening goroutine and nothing on the span
// path. A capture costs what a session with the request's options does
// (see packages trace and annotate); until its answer is sent, the server
// holds the capture's model and its XSpace in memory, and writes no file.
//
// The user guide is docs/capture.md ("Remote capture").
package profileserver
