package perfetto_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/perfetto"
)

// spanCounter is an event.Sink that counts spans by name and keeps
// nothing else: what it holds does not grow with the trace.
type spanCounter struct {
	meta   event.Meta
	ids    uint64
	tracks uint32
	procs  int
	count  map[string]int
}

func (c *spanCounter) Span(s event.Span) uint64 {
	if c.count == nil {
		c.count = map[string]int{}
	}
	c.count[s.Name]++
	c.ids++
	return c.ids
}
func (c *spanCounter) Track(event.Track) uint32    { c.tracks++; return c.tracks }
func (c *spanCounter) SetTrackName(uint32, string) {}
func (c *spanCounter) Process(event.Process) int   { c.procs++; return c.procs }
func (c *spanCounter) ProcessTrack(int) uint32     { c.tracks++; return c.tracks }
func (c *spanCounter) EndSpan(uint64, int64)       {}
func (c *spanCounter) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	c.ids++
	return c.ids
}
func (c *spanCounter) Instant(string, int64, uint32, uint64, []event.Arg)  {}
func (c *spanCounter) Counter(string, string, int64, float64)              {}
func (c *spanCounter) TrackCounter(uint32, string, string, int64, float64) {}
func (c *spanCounter) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	c.ids++
	return c.ids
}
func (c *spanCounter) Meta() *event.Meta { return &c.meta }
func (c *spanCounter) Reset()            { *c = spanCounter{} }

// Decode streams a trace into a sink of one's own: here one that counts
// spans by name, in memory that does not grow with the trace. (A file,
// an *os.File, is read the same way.)
func ExampleDecode() {
	b := event.NewBuilder(event.Meta{Program: "train", PID: 7})
	for i := range 3 {
		step := b.Span(event.Span{Name: "step", Start: int64(i) * 100, End: int64(i)*100 + 90})
		b.Span(event.Span{Name: "forward", Start: int64(i)*100 + 10, End: int64(i)*100 + 50, Parent: step})
	}
	var file bytes.Buffer
	if err := perfetto.Write(&file, b.Snapshot(), perfetto.WriteOptions{}); err != nil {
		log.Fatal(err)
	}

	var c spanCounter
	if err := perfetto.Decode(bytes.NewReader(file.Bytes()), &c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.count["step"], "steps,", c.count["forward"], "forward passes, in", c.meta.Program)
	// Output: 3 steps, 3 forward passes, in train
}
