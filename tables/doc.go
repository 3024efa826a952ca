// Package tables is the event model as Parquet tables: spans, instants,
// counters, kernels (device activity), memory (allocations and frees),
// flows, steps and hosts, one Go type per table (Span, Instant, ...),
// for engines that query many traces at once (DuckDB, Spark, Trino,
// BigQuery) rather than viewers that open one.
//
// In devprof's flow it is an exporter of the model that writes tables,
// not a trace format: nothing reads a trace back from them. Export
// streams a trace from its reader into rows as the reader decodes it
// (devprof export); a Writer is an event.Sink that any reader streams
// into in one pass, holding the events on disk until the trace ends; and
// WriteSnapshot writes a session's snapshot. Each writes one Parquet
// file per table under a local directory, in hive partitions:
//
//	<dir>/<table>/run=<run>/host=<host>/<session>.parquet
//
// Every row carries its run, host and session as columns too, times are
// Unix nanoseconds, strings are dictionary-encoded and every file's
// key-value metadata holds the schema version (SchemaVersion). The schema
// is documented column by column in docs/tables.md.
//
// Moving the files to their destination (a directory, a bucket) is the
// caller's: the package writes a complete set of files into a directory
// and says which, so a caller can publish them atomically.
package tables
