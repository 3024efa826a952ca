// Package xplane writes and reads TensorBoard profiles: XSpace protobufs,
// stored as <logdir>/plugins/profile/<run>/<host>.xplane.pb, which
// TensorBoard's profile plugin and xprof open (trace viewer, overview
// page, kernel and memory tools), and which JAX, TensorFlow and
// PyTorch/XLA write.
//
// Its place in devprof's flow is at the end, as an exporter, and at the
// start of a second flow, as a reader:
//
//	sources → recorder → event model → exporters (xplane.Write) → <host>.xplane.pb
//	any .xplane.pb → xplane.Decode → event.Sink (the model, or devprof summary's totals)
//
// A session writes <host>.xplane.pb unless trace.Options.NoXPlane; a
// remote capture (package profileserver) sends the same bytes to its
// client; devprof convert reads and writes it through the format table,
// package exporters/formats. This package alone owns xprof's vocabulary
// (its plane and line names, stat names such as tf_op and
// kernel_details): sources write neutral fields into the model.
//
// # Writing
//
// Write encodes a snapshot, from a session or from any reader, to an
// io.Writer:
//
//	f, err := os.Create(filepath.Join(runDir, host+".xplane.pb"))
//	…
//	err = xplane.Write(f, snap)
//
// What Write produces follows what xprof expects (TSL's XPlane schema,
// and xprof 2.24's converters, which the conformance suite runs):
//
//   - a /host:CPU plane with one line per row of the host layout; event and
//     stat metadata interned per plane; span arguments as stats with their
//     own value kinds (int64, uint64, double; strings interned via
//     ref_value); events in each line sorted by start, enclosing first;
//   - steps as root events (_r = 1 and an int64 step_num), so xprof's
//     overview page shows step time;
//   - counters as zero-length events on a line named _counters_, one
//     "value" stat each, which the trace viewer shows as counter tracks;
//   - a Task Environment plane with profile_start_time/profile_stop_time,
//     XSpace.hostnames, and dropped-event counts in XSpace.warnings;
//   - line timestamps relative to the profile start (xprof computes
//     timestamp_ns*1000+offset_ps in int64, so epoch nanoseconds overflow);
//   - never a group_id stat: xprof must do its own grouping (memory events
//     are tied to their steps with context stats instead; see memory.go);
//   - a memory tracker's allocations and frees (TrackMemory) as the
//     MemoryAllocation and MemoryDeallocation events of xprof's
//     memory_profile tool, one /host:CPU line per memory track (memory.go);
//   - each of the snapshot's other processes (event.Process) as a
//     "/host:CPU [<pid>]" plane (JAX's name for a subprocess's planes,
//     which xprof's trace viewer shows as a process of its own), with
//     process_id, process_name, labels and sort index as plane stats and
//     its host threads as lines (tids as line ids);
//   - device activity (KindActivity on device-stream tracks) on
//     /device:GPU:<n> planes (id = ordinal) with Stream #<id>(<kinds>)
//     lines; a flow id shared by a device event and a host span becomes a
//     uint64 correlation_id on both;
//   - a flow between host events only (no device activity carries its id)
//     as xprof's "flow" stat on each end (flows.go), which its trace viewer
//     draws as an arrow and its analyses do not count as a launch.
//
// # Reading
//
// Read turns an XSpace written by devprof, JAX, TensorFlow or PyTorch/XLA
// back into an event.Snapshot, so any exporter can convert it; ReadFile
// and ReadNamed also take the host from the file name when the XSpace
// names none, as xprof does. Decode and DecodeNamed stream it into an
// event.Sink instead (Read is Decode into an event.Builder). Host lines
// become host-thread tracks of nested spans, device planes device-stream
// tracks of activity, _counters_ lines counter samples, stats arguments,
// step markers steps, and correlation_id and flow stats flows; lines
// xprof derives from others (Steps, XLA Ops) are skipped.
//
// # Costs
//
// Write encodes about 7.5 M events a second on one core
// (BenchmarkXPlaneEncode, package bench). Decode of a regular file (an
// *os.File) reads it where it lies, a window at a time, in two passes
// (an XSpace keeps each plane's metadata after its lines), and holds one
// line's events at a time, not the file: on one core it reads about 3 M
// events a second into the model and 4 M into a sink that keeps nothing,
// whose peak heap stays at a few MiB whatever the file's size
// (BenchmarkReadXSpace). Any other io.Reader, and a gzip-compressed file,
// is read into memory first (about 17 bytes an event). A line out of time
// order, and a track made of several lines, is gathered and sorted before
// it goes to the sink.
//
// The user guides are docs/outputs.md (opening the files in TensorBoard
// and xprof) and docs/reading-traces.md (reading any trace in Go);
// docs/performance.md has the figures.
package xplane
