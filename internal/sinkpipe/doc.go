// Package sinkpipe runs an event.Sink on a goroutine of its own, so that
// a reader decoding a trace and the sink consuming it use two cores.
//
// In devprof's flow it sits between a reader (exporters/*.Decode,
// internal/gotrace) and a sink that does real work per event
// (analysis.Analyzer for devprof analyze): the reader writes into a
// Pipe as into any sink; the Pipe queues each call, its arguments
// copied, in batches of a few thousand, and applies them in order on
// the consumer's goroutine. The queue holds a few batches at most, so a
// reader that outruns its sink waits for it instead of growing memory.
//
// IDs go back to the reader at once: the Pipe hands out IDs of its own,
// in sequence, and translates them on the consumer's side into the
// IDs the sink gave, so any Sink works behind it, not only one whose IDs
// are predictable. The metadata the reader fills in is the Pipe's until
// Close hands it to the sink, but for the clock anchor, host, program
// and pid, which each batch carries as the reader had them when it was
// handed over: a sink that writes rows as events come (tables.Export)
// needs them as soon as the reader knows them.
package sinkpipe
