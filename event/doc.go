// Package event is devprof's event model: the read-only Go values every
// trace becomes, whoever recorded it.
//
// It is the ground floor of devprof's one-way flow
//
//	sources → recorder → event model → exporters → files and servers
//
// A session's recorder fills a Snapshot when it stops; the readers of the
// exporters packages (Perfetto, XSpace, Chrome JSON; exporters/formats
// picks the right one for a file) build the same Snapshot with a Builder. Exporters and tools only read it.
// So a Go program can load any trace devprof reads and walk it:
//
//	snap, format, err := formats.Read("run.pftrace") // any format devprof reads
//	for _, r := range snap.Events {
//		fmt.Println(snap.Name(r), r.Start, snap.Args(r))
//	}
//
// A Snapshot holds records (spans, instants, counter samples, device
// activity), the tracks device activity sits on, interned strings, and the
// session's metadata with structured warnings and per-source drop counts.
// Snapshot.Layout places the records on properly nested rows, as every
// timeline format needs; Snapshot.MemoryTimelines rebuilds each device's
// memory over time from a memory tracker's allocation and free events
// (event/memory.go), as the exporters and plots show it.
//
// The package imports no other devprof package, and nothing in it can
// start recording: only a trace session does that.
package event
