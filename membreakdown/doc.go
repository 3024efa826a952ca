// Package membreakdown breaks a device-memory profile down by category,
// as MXNet's GPU memory profiler did: each live buffer's tags and span are
// matched against a keyword dictionary (Parameters, Gradients, …), what
// matches nothing is Others, and what the device says is in use beyond
// every tracked buffer is Untrackable (CUDA's context, library workspaces,
// a caching allocator's slack). It answers "where does my GPU memory go?"
// in categories rather than call sites; devprof memory breakdown is its
// command-line form.
//
// It is an analysis after the model in devprof's flow, as devprof
// summary's span statistics are for traces:
//
//	devmem → event.DeviceMemory → membreakdown → CLI tables, CSV, exporters/memplot images
//
// It reads only an event.DeviceMemory — devmem's live table, or a
// session's <host>.memory.pb.gz read back by exporters/pprof — and knows
// no file format but its own keyword files and MXNet's CSV.
//
// # Use
//
// Categorize takes a profile, a Dictionary and Options and returns a
// Report: per category its bytes, buffers, devices and tags, the
// Untrackable figure per device (or against Options.ExpectedSum), the host
// memory left out, and the buffers that matched several categories.
//
//	m, err := pprof.ReadFile("run/host.memory.pb.gz") // package exporters/pprof
//	…
//	r := membreakdown.Categorize(m, membreakdown.DefaultDictionary(), membreakdown.Options{})
//	for _, c := range r.Categories {
//		fmt.Println(c.Name, c.Bytes, c.Buffers)
//	}
//
// DefaultDictionary is MXNet's dictionary adapted to the tags Go programs
// give their buffers; ParseDictionary and ReadDictionary read one of one's
// own from JSON or YAML, with errors that name the line. WriteCSV writes a
// profile as MXNet's two-column CSV, and WriteStorageCSV with the columns
// of MXNet 2's storage profiler, for the scripts that read them; both
// write a line per allocation a group stands for, which CSVRows counts
// beforehand, so that a caller can refuse a tiny profile claiming
// billions.
//
// # Matching
//
// A buffer's Text is its tags joined with ",", then a space and its span
// path when it has one ("weights,fp16 train/load"), so that keywords can
// match tags or span names. A buffer without tags gets MXNet's kind of
// default tag, "unknown:<file>:<line>:<function>" from the innermost frame
// of its stack (the file's base name), so that its rows say where it was
// allocated; "unknown" without a stack. Keywords are case-sensitive
// substrings, default tags included.
//
// Every category with a matching keyword counts the buffer, as MXNet
// counts an allocation once per matching keyword: a buffer tagged
// "weights,grad" is in Parameters and in Gradients, so category totals
// can add up to more than what is live. Each such buffer gets a
// MultiMatch warning. (Unlike MXNet, two keywords of one category count
// the buffer once.) A buffer no keyword matches is in Others.
//
// Only device memory is broken down: buffers with a device ordinal whose
// kind is not host memory (OnDevice). Pinned and pageable host memory is
// left out and only counted (Report.Host), since neither NVML's figures
// nor MXNet's profile include it.
//
// # Untrackable
//
// For each device, Untrackable is what NVML said this process held there
// when the profile was taken (DeviceUsage.Process), or, when the driver
// did not say, what was used there by every process (DeviceUsage.Used,
// which counts other processes' memory too), minus the bytes tracked on
// that device. With Options.ExpectedSum (MXNet's expected_sum, "what
// nvidia-smi reports", here in bytes) it is that sum minus the bytes
// tracked on all devices, and there is no per-device figure. It is
// negative when the tracker saw more than that figure (a stale or wrong
// figure, or another process's memory mistaken for this one's): it is
// reported as it is, never clamped.
//
// # Costs
//
// Categorize makes one pass over the buffers, testing each buffer's Text
// against every keyword (a substring search), and holds the report's
// categories and tags, not a copy of the buffers: ten thousand buffers
// with the default dictionary take a few milliseconds. It reads the
// profile and never changes it.
//
// The user guide is docs/device-memory.md ("Breakdown by category").
package membreakdown
