package tracediff_test

import (
	"path/filepath"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/tracediff"
)

// fromSnapshot works out what a Collector should keep of a trace from
// its whole model: per name, the count and total of the finished
// instances, the unfinished ones, and self time as the total less the
// time of the finished spans naming an instance as their parent.
func fromSnapshot(s *event.Snapshot) map[string]*tracediff.Durations {
	want := map[string]*tracediff.Durations{}
	get := func(k string) *tracediff.Durations {
		if want[k] == nil {
			want[k] = &tracediff.Durations{}
		}
		return want[k]
	}
	device := map[uint32]bool{}
	for i, tr := range s.Tracks {
		device[uint32(i+1)] = tr.Kind == event.TrackDeviceStream || tr.Kind == event.TrackDevice
	}
	for _, r := range s.Events {
		k, onDevice := s.Name(r), false
		switch r.Kind() {
		case event.KindSpan:
			onDevice = r.OnTrack() && device[r.Lane()]
		case event.KindActivity:
			if a := r.Activity(); a == event.ActivityAlloc || a == event.ActivityFree {
				continue
			}
			onDevice = true
		default:
			continue
		}
		d := get(k)
		d.Device = d.Device || onDevice
		end, finished := s.EndOf(r)
		if !finished {
			d.Unfinished++
			continue
		}
		dur := max(end, r.Start()) - r.Start()
		d.Count++
		d.Total += dur
		d.Self += dur
		if r.Kind() != event.KindSpan || r.Parent() == 0 {
			continue
		}
		if p := s.Lookup(r.Parent()); p != nil && p.Kind() == event.KindSpan {
			get(s.Name(p)).Self -= dur
		}
	}
	return want
}

// TestCollectorMatchesModel streams real traces of each format into a
// Collector and checks every name's count, total, self time and
// unfinished instances against the model the Builder makes of the same
// file.
func TestCollectorMatchesModel(t *testing.T) {
	for _, name := range []string{
		"real-gpu/devprof-h100-libwork.pftrace",
		"real-gpu/devprof-h100-libwork.xplane.pb",
		"real-gpu/jax-h100-train.xplane.pb",
		"real-gpu/kineto-h100-libwork.json.gz",
		"real-gpu/h200/gpucheck.pftrace",
		"real-gpu/h200/window.pftrace",
		"jax-cpu.xplane.pb",
	} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			path := filepath.Join("..", "testdata", name)
			s, f, err := formats.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
			if err := f.StreamFile(path, c, formats.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			p := c.Profile()
			want := fromSnapshot(s)
			if len(p.Names) != len(want) || len(want) == 0 {
				t.Errorf("%d names, the model has %d", len(p.Names), len(want))
			}
			device := 0
			for k, w := range want {
				g := p.Names[k]
				if g == nil {
					t.Errorf("%q missing", k)
					continue
				}
				if g.Count != w.Count || g.Total != w.Total || g.Self != w.Self || g.Unfinished != w.Unfinished || g.Device != w.Device {
					t.Errorf("%q: count %d total %d self %d unfinished %d device %v; the model says %d %d %d %d %v",
						k, g.Count, g.Total, g.Self, g.Unfinished, g.Device, w.Count, w.Total, w.Self, w.Unfinished, w.Device)
				}
				if g.Device {
					device++
				}
				if g.Count > 0 && (int64(len(g.Sample())) != min(g.Count, tracediff.DefaultSampleSize) || g.Sample()[0] != g.Min) {
					t.Errorf("%q: sample of %d (first %d) for %d instances, min %d", k, len(g.Sample()), g.Sample()[0], g.Count, g.Min)
				}
			}
			t.Logf("%d names (%d of device work), %d events", len(want), device, p.Events)
		})
	}
}

// TestCollectorSelfTime checks self time on a stream written by hand:
// a child whose end comes before its parent's, one whose end comes
// after, a span that never ends, and device activity.
func TestCollectorSelfTime(t *testing.T) {
	c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
	tr := c.Track(event.Track{Kind: event.TrackHostThread, ID: 1})
	dev := c.Track(event.Track{Kind: event.TrackDeviceStream, ID: 7})
	step := c.Span(event.Span{Name: "step", Start: 0, Track: tr, Unfinished: true})
	fwd := c.Span(event.Span{Name: "fwd", Start: 10, End: 40, Track: tr, Parent: step})
	c.Span(event.Span{Name: "matmul", Start: 15, End: 25, Track: tr, Parent: fwd})
	bwd := c.Span(event.Span{Name: "bwd", Start: 50, Track: tr, Parent: step, Unfinished: true})
	c.Span(event.Span{Name: "matmul", Start: 55, End: 75, Track: tr, Parent: bwd})
	c.EndSpan(bwd, 90)
	c.EndSpan(step, 100)
	c.Span(event.Span{Name: "step", Start: 100, Track: tr, Unfinished: true}) // never ends
	c.ActivityOf(event.ActivityKernel, dev, "gemm", 12, 20, nil)
	c.ActivityOf(event.ActivityAlloc, dev, "alloc", 12, 12, nil)
	p := c.Profile()
	for _, w := range []struct {
		device                    bool
		name                      string
		count, total, self, unfin int64
	}{
		{false, "step", 1, 100, 100 - 30 - 40, 1},
		{false, "fwd", 1, 30, 20, 0},
		{false, "bwd", 1, 40, 20, 0},
		{false, "matmul", 2, 30, 30, 0},
		{true, "gemm", 1, 8, 8, 0},
	} {
		g := p.Names[w.name]
		if g == nil {
			t.Errorf("%s missing", w.name)
			continue
		}
		if g.Count != w.count || g.Total != w.total || g.Self != w.self || g.Unfinished != w.unfin || g.Device != w.device {
			t.Errorf("%s: count %d total %d self %d unfinished %d, want %d %d %d %d", w.name, g.Count, g.Total, g.Self, g.Unfinished, w.count, w.total, w.self, w.unfin)
		}
	}
	if len(p.Names) != 5 {
		t.Errorf("%d names, want 5 (an allocation has no duration to compare)", len(p.Names))
	}
}

// TestReservoirBounded checks that past the sample size a name keeps
// that many durations, its count and total stay exact, and the sample
// is spread over the whole run rather than its start.
func TestReservoirBounded(t *testing.T) {
	c := tracediff.NewCollector(event.Meta{}, tracediff.Options{SampleSize: 500})
	tr := c.Track(event.Track{Kind: event.TrackHostThread, ID: 1})
	const n = 100_000
	for i := range int64(n) {
		c.Span(event.Span{Name: "op", Start: 10 * i, End: 10*i + i%1000, Track: tr})
	}
	d := c.Profile().Names["op"]
	if d.Count != n || d.Total != 100*(999*1000/2) || len(d.Sample()) != 500 || !d.Sampled() {
		t.Fatalf("count %d total %d sample %d sampled %v", d.Count, d.Total, len(d.Sample()), d.Sampled())
	}
	// Durations are i%1000: uniform on 0..999, median 499.5; a sample of
	// 500 puts its median within 60 of it (5 standard errors).
	if med := d.Quantile(0.5); med < 440 || med > 560 {
		t.Errorf("sample median %v, want about 499.5", med)
	}
	if d.Min != 0 || d.Max != 999 {
		t.Errorf("min %d max %d, want 0 and 999 over every instance", d.Min, d.Max)
	}
}

// TestResetStartsOver checks that Reset forgets everything, as a reader
// that reads the file again expects.
func TestResetStartsOver(t *testing.T) {
	c := tracediff.NewCollector(event.Meta{Host: "h"}, tracediff.Options{})
	c.Meta().Warnings = append(c.Meta().Warnings, event.Warning{Text: "x"})
	c.Span(event.Span{Name: "a", End: 5, Track: c.Track(event.Track{Kind: event.TrackHostThread})})
	c.Reset()
	c.Span(event.Span{Name: "b", End: 7, Track: c.Track(event.Track{Kind: event.TrackHostThread})})
	p := c.Profile()
	if len(p.Names) != 1 || p.Names["b"] == nil || p.Meta.Host != "h" || len(p.Meta.Warnings) != 0 || p.Events != 1 {
		t.Errorf("after Reset: %d names, meta %+v, %d events", len(p.Names), p.Meta, p.Events)
	}
}
