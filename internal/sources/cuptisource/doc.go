// Package cuptisource is the machinery of the CUPTI source (package
// sources/cupti holds what users set and read): a session starts it with
// the session's buffer, it collects CUPTI activity records through
// cuptiwrap while the session runs, and at Stop it writes them into the
// buffer as device activity, API calls and the flows between them.
//
// It sits between cuptiwrap and the recorder:
//
//	cuptiwrap (libcupti) → cuptisource → internal/recorder → event model
//
// Only trace starts it (trace/sources.go); Explain and Brief are how the
// session words a failure to start it, in the outputs and on standard
// error.
//
// Records are kept as CUPTI delivers them, 192 bytes each, until Stop: an
// API call, the external correlation naming its span and the kernel it
// launched may arrive in different buffers, in any order. Stop pairs them
// through a correlation table (dense when CUPTI's ids lie close together,
// as they usually do) and writes every record once.
package cuptisource
