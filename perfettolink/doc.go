// Package perfettolink opens a trace file in ui.perfetto.dev with one
// link: it serves the file once over plain HTTP on 127.0.0.1:9001, prints
// a https://ui.perfetto.dev/#!/?url=… link (and an ssh port-forwarding hint
// for remote machines), and stops as soon as the UI has fetched the file,
// as jax.profiler's create_perfetto_link and Perfetto's
// tools/open_trace_in_ui do. The file never leaves the machine but for the
// browser that opens the link.
//
// Its place in devprof's flow is after the exporters, as a server:
//
//	sources → recorder → event model → exporters/perfetto → <host>.pftrace → perfettolink → ui.perfetto.dev
//
// A session uses it when trace.Options.PerfettoLink is set (Stop then
// waits for the link to be opened, as JAX's create_perfetto_link does),
// and devprof serve and devprof collect serve their traces through it.
//
// # Serving
//
// Serve is the blocking form, for the end of a program:
//
//	if err := perfettolink.Serve(ctx, "/tmp/prof/plugins/profile/run1/host.pftrace", perfettolink.Options{}); err != nil {
//		log.Fatal(err) // the port is busy, the file unreadable, ctx done, or Options.Timeout passed
//	}
//
// Start serves in the background and returns a Server to wait on (Done,
// Wait) or stop (Close); Link builds the link alone, for a file served
// some other way. Options change the address (tests, other UIs), the UI's
// origin, where the link is printed and how long to wait.
//
// # Costs and limits
//
// The server holds no copy of the file: it checks that the path is a
// readable, non-empty regular file before it binds, and streams the file
// from disk to the one GET that fetches it. It serves one file, once: a
// second trace needs a second server, after the first has stopped (the
// port is one). Only a loopback address is accepted unless
// Options.AllowNonLoopback says otherwise.
//
// # Why 127.0.0.1:9001
//
// The UI's Content-Security-Policy allows plain-http
// fetches only from exactly http://127.0.0.1:9001 (not localhost, not another
// port). The server therefore:
//   - sends Access-Control-Allow-Origin (the UI's origin) and
//     Cache-Control: no-cache on every response;
//   - answers CORS preflight OPTIONS requests with 204, including
//     Access-Control-Allow-Private-Network for Chrome's local network access;
//   - answers every POST with 404, so the UI's POST /status probe does not
//     mistake it for a trace_processor RPC server;
//   - serves GET /<escaped file name> and nothing else (no listing, no other
//     files, no path traversal);
//   - rejects requests whose Host header is not an IP literal or localhost
//     while bound to loopback, so a DNS-rebinding page cannot take the one
//     fetch.
//
// The user guide is docs/outputs.md ("Perfetto").
package perfettolink
