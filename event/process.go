package event

// Process is one process of a trace besides the program that recorded it
// (which Meta describes: PID, Program). Traces other tools wrote hold
// several: a browser and its renderers, a PyTorch process and one process
// per GPU, string "pids" such as Kineto's "Spans". Tracks name the process
// they belong to (Track.Process); a reader keeps each as the file said it,
// so that a conversion writes the same processes back.
type Process struct {
	// PID is the process id. A file's string pid gets a number past every
	// numeric pid of that file, in order of first use, and Label keeps the
	// string; 0 is a real pid (some traces use it), not "absent".
	PID int64
	// Label is the pid as the file wrote it when it was not a number
	// ("Spans", ""), so that a writer of the same format can write it
	// again; "" for numeric pids. IsLabel says which.
	Label   string
	IsLabel bool
	// Name is the process's name (Chrome's process_name metadata,
	// Perfetto's ProcessDescriptor.process_name); "" if none.
	Name string
	// Labels are extra labels of the process (Chrome's process_labels).
	Labels []string
	// SortIndex orders processes in viewers that honour it (Chrome's
	// process_sort_index), when Sorted.
	SortIndex int64
	Sorted    bool
}

// ProcessOf returns the process a track belongs to: Processes[t.Process-1],
// or, for Process 0, the recording program as Meta describes it.
func (s *Snapshot) ProcessOf(t Track) Process {
	if t.Process > 0 && t.Process <= len(s.Processes) {
		return s.Processes[t.Process-1]
	}
	return Process{PID: int64(s.Meta.PID), Name: s.Meta.Program}
}

// Process registers a process and returns its number for Track.Process
// (non-zero).
func (b *Builder) Process(p Process) int {
	b.procs = append(b.procs, p)
	return len(b.procs)
}

// ProcessTrack returns the TrackProcess track of a process (0: the
// recording program; n: a number from Builder.Process), registering it on
// first use: the track that process-scoped counters (TrackCounter) and
// instants on no thread (Instant) of that process go on.
func (b *Builder) ProcessTrack(process int) uint32 {
	if id, ok := b.procTracks[process]; ok {
		return id
	}
	if b.procTracks == nil {
		b.procTracks = map[int]uint32{}
	}
	id := b.Track(Track{Kind: TrackProcess, Process: process})
	b.procTracks[process] = id
	return id
}

// Owner returns where on the host a counter sample or an instant belongs:
// its process (0 for the recording program, n for Processes[n-1]) and
// its thread (the id of its TrackHostThread track, 0 when it belongs to
// the process itself: a sample or instant on no track, or on a
// TrackProcess track). ok is false for records of devices (device
// counters, activity, memory events) and spans.
func (s *Snapshot) Owner(r *Record) (process int, thread uint32, ok bool) {
	if r.kind != KindCounter && r.kind != KindInstant {
		return 0, 0, false
	}
	t, on := s.TrackOf(r)
	switch {
	case !on:
		return 0, 0, true
	case t.Kind == TrackProcess:
		return t.Process, 0, true
	case t.Kind == TrackHostThread:
		return t.Process, r.lane, true
	}
	return 0, 0, false
}
