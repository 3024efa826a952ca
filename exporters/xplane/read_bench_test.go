package xplane_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/internal/heappeak"
)

// trainingSnapshot is a training loop of n events as a devprof session
// records one: steps on four threads, each step a span holding spans with
// an argument, each of which holds a leaf span (the shape of
// /work/notes/gen_main.go's session, spread over threads).
func trainingSnapshot(n int) *event.Snapshot {
	b := event.NewBuilder(event.Meta{Program: "train", Host: "bench"})
	names := []string{"forward", "backward", "optimizer", "matmul", "relu", "loss", "load", "sync"}
	var tracks [4]uint32
	var clock [4]int64
	for i := range tracks {
		tracks[i] = b.Track(event.Track{Kind: event.TrackHostThread, ID: int64(100 + i), Name: fmt.Sprintf("worker %d", i)})
	}
	args := []event.Arg{{Key: "i", Kind: event.ArgInt}}
	for made, step := 0, int64(0); made < n; step++ {
		th := int(step) % len(tracks)
		t := clock[th]
		stepStart := t
		// 1 step span + up to 49 pairs: 99 events a step.
		kids := min(49, (n-made-1)/2)
		stepEnd := stepStart + int64(kids)*1000 + 500
		id := b.Span(event.Span{Name: "train", Start: stepStart, End: stepEnd, Track: tracks[th], Step: true, StepNum: step})
		made++
		for j := range kids {
			s := stepStart + int64(j)*1000 + 100
			args[0].Num = uint64(j)
			c := b.Span(event.Span{Name: names[j%8], Start: s, End: s + 800, Parent: id, Track: tracks[th], Args: args})
			b.Span(event.Span{Name: names[(j+3)%8], Start: s + 100, End: s + 300, Parent: c, Track: tracks[th]})
			made += 2
		}
		clock[th] = stepEnd + 1000
	}
	return b.Snapshot()
}

var benchFiles sync.Map // events -> path of an XSpace of that many events

// benchXSpace returns the path of an XSpace of n events, written once per
// test binary into a directory that outlives the benchmark's runs.
func benchXSpace(b *testing.B, n int) string {
	b.Helper()
	if p, ok := benchFiles.Load(n); ok {
		return p.(string)
	}
	dir, err := os.MkdirTemp("", "xplane-bench")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("bench%d.xplane.pb", n))
	var buf bytes.Buffer
	if err := xplane.Write(&buf, trainingSnapshot(n)); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	benchFiles.Store(n, path)
	return path
}

// BenchmarkReadXSpace reads a training loop's XSpace of 1 M and 10 M
// events from its file: into a Builder (ReadFile, what devprof convert
// does) and into a sink that keeps nothing (what bounds devprof summary:
// its peak must not grow with the file). Run with -cpu 1 for one core;
// events/s is the target's figure, peak-heap-MiB the heap's live objects
// at their highest during the runs.
func BenchmarkReadXSpace(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("events=%dM", n/1_000_000), func(b *testing.B) {
			path := benchXSpace(b, n)
			b.Run("builder", func(b *testing.B) {
				benchRead(b, n, func() error {
					s, err := xplane.ReadFile(path)
					if err == nil && len(s.Events) != n {
						err = fmt.Errorf("read %d events, want %d", len(s.Events), n)
					}
					return err
				})
			})
			b.Run("discard", func(b *testing.B) {
				benchRead(b, n, func() error {
					f, err := os.Open(path)
					if err != nil {
						return err
					}
					defer f.Close()
					var sink countingSink
					if err := xplane.Decode(f, &sink); err != nil {
						return err
					}
					if sink.events != n {
						return fmt.Errorf("decoded %d events, want %d", sink.events, n)
					}
					return nil
				})
			})
		})
	}
}

func benchRead(b *testing.B, n int, read func() error) {
	runtime.GC()
	b.ReportAllocs()
	stop := heappeak.Start()
	cpu0 := cpuTime()
	for b.Loop() {
		if err := read(); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0
	peak := heappeak.MiB(stop())
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// On a machine shared with other work, wall time counts the waits;
	// the process's CPU time (the collector's included) does not.
	b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(peak, "peak-heap-MiB")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingSink is an event.Sink that keeps nothing but a count of the
// events written into it: what a consumer that aggregates as it goes
// costs the reader alone.
type countingSink struct {
	meta            event.Meta
	tracks, procs   int
	ids             uint64
	events          int
	spans, unended  int
	ended, counters int
}

func (c *countingSink) Track(event.Track) uint32    { c.tracks++; return uint32(c.tracks) }
func (c *countingSink) SetTrackName(uint32, string) {}
func (c *countingSink) Process(event.Process) int   { c.procs++; return c.procs }
func (c *countingSink) ProcessTrack(int) uint32     { c.tracks++; return uint32(c.tracks) }
func (c *countingSink) EndSpan(uint64, int64)       { c.ended++ }
func (c *countingSink) Meta() *event.Meta           { return &c.meta }
func (c *countingSink) Reset()                      { *c = countingSink{} }
func (c *countingSink) Counter(string, string, int64, float64) {
	c.events++
	c.counters++
}

func (c *countingSink) TrackCounter(uint32, string, string, int64, float64) {
	c.events++
	c.counters++
}

func (c *countingSink) Span(s event.Span) uint64 {
	c.events++
	c.spans++
	if s.Unfinished {
		c.unended++
	}
	return c.id()
}

func (c *countingSink) TrackSlice(uint32, string, int64, int64, []event.Arg) uint64 {
	c.events++
	return c.id()
}

func (c *countingSink) Instant(string, int64, uint32, uint64, []event.Arg) { c.events++ }

func (c *countingSink) ActivityOf(event.ActivityKind, uint32, string, int64, int64, []event.Arg) uint64 {
	c.events++
	return c.id()
}

func (c *countingSink) id() uint64 { c.ids++; return c.ids }
