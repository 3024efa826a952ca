package pftest

// Tracks of ForeignForms.
const (
	ForeignProc    = 100 // process 10 "app"
	ForeignThread  = 101 // thread 11 of process 10
	ForeignQueue   = 102 // custom track under the process
	ForeignUnnamed = 103 // custom root track without a name
	ForeignCPU     = 104 // counter under the thread
	ForeignMem     = 105 // incremental counter under the process
)

// ForeignForms is a trace in the forms other writers than devprof emit,
// one event per rule of trace_processor's import (the comments say what
// each becomes): legacy phases and scopes, async ids, slices on process
// and custom tracks, both flow forms, thread and process counters, and
// three events a reader drops and counts. The perfetto package's
// TestReadForeignForms writes out what the rules make of it.
func ForeignForms() []byte {
	t := &Trace{}
	at := func(ts uint64, f ...Field) { t.Packet(append([]Field{TS(ts), Seq(1)}, f...)...) }
	legacy := func(track uint64, name string, f ...Field) Field {
		return Event(Unspecified, track, name, Legacy(f...))
	}
	t.Packet(Seq(1), Cleared(),
		Track(ForeignProc, 0, "", Process(10, "app")),
		Track(ForeignThread, ForeignProc, "", Thread(10, 11, "main")),
		Track(ForeignQueue, ForeignProc, "queue"),
		Track(ForeignUnnamed, 0, ""),
		Track(ForeignCPU, ForeignThread, "cpu", Counter(0, false)),
		Track(ForeignMem, ForeignProc, "mem", Counter(1024, true)))
	// Legacy phases on the thread: B/E, X with duration_us (nested by
	// their spans), instants of thread, global and process scope.
	at(1000, legacy(ForeignThread, "outer", Phase('B')))
	at(2000, legacy(ForeignThread, "work", Phase('X'), DurationUS(2), BindID(7), FlowDirection(FlowOut)))
	at(2000, legacy(ForeignThread, "inner", Phase('X'), DurationUS(1)))
	at(2500, legacy(ForeignThread, "mark-t", Phase('I'), InstantScope(ScopeThread)))
	at(2600, legacy(ForeignThread, "mark-g", Phase('i'), InstantScope(ScopeGlobal)))
	at(2700, legacy(ForeignThread, "mark-p", Phase('I'), InstantScope(ScopeProcess)))
	at(9000, legacy(ForeignThread, "", Phase('E')))
	// Async events: a local id is the process's, a global one the trace's.
	at(5000, Event(Unspecified, ForeignThread, "req", Category("net"), Legacy(Phase('b'), LocalID(5))))
	at(6000, Event(Unspecified, ForeignThread, "step", Category("net"), Legacy(Phase('n'), LocalID(5))))
	at(7000, Event(Unspecified, ForeignThread, "req", Category("net"), Legacy(Phase('e'), LocalID(5))))
	at(5000, Event(Unspecified, ForeignThread, "gx", Category("net"), Legacy(Phase('b'), GlobalID(5))))
	at(8000, Event(Unspecified, ForeignThread, "gx", Category("net"), Legacy(Phase('e'), GlobalID(5))))
	// Slices on a process track and on custom tracks; flows v1 (bind_id
	// in) and v2 (flow_ids, terminating_flow_ids, and the varint _old
	// forms, which the fixed64 ones override).
	at(3000, Event(Begin, ForeignProc, "p-slice"))
	at(3500, Event(End, ForeignProc, ""))
	at(3000, Event(Begin, ForeignQueue, "q", Legacy(BindID(7), FlowDirection(FlowIn))))
	at(3200, Event(End, ForeignQueue, ""))
	at(4000, Event(Begin, ForeignUnnamed, "first-name", FlowID(9), FlowIDOld(99)))
	at(4100, Event(End, ForeignUnnamed, ""))
	at(4200, Event(Instant, ForeignQueue, "qi", TerminatingFlowID(9)))
	at(4300, Event(Instant, ForeignQueue, "old-a", FlowIDOld(11)))
	at(4400, Event(Instant, ForeignUnnamed, "old-b", TerminatingFlowIDOld(11)))
	at(4500, Event(Instant, ForeignQueue, "lone", FlowID(13))) // a flow with one end
	// Counters on thread and process tracks: int and double; incremental
	// and scaled by unit_multiplier.
	at(1000, Event(CounterType, ForeignCPU, "", CounterValue(5)))
	at(2000, Event(CounterType, ForeignCPU, "", DoubleCounterValue(2.5)))
	at(1000, Event(CounterType, ForeignMem, "", CounterValue(3)))
	at(2000, Event(CounterType, ForeignMem, "", CounterValue(4)))
	// Dropped and counted: a legacy counter phase, a bind_id without a
	// direction (its event stays), a packet whose timestamp overflows.
	at(9500, legacy(ForeignThread, "legacy-counter", Phase('C')))
	at(9600, Event(Instant, ForeignThread, "no-direction", Legacy(BindID(21))))
	at(1<<63+5, Event(Instant, ForeignThread, "overflow"))
	return t.Bytes()
}
