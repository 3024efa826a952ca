package tracediff_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/tracediff"
)

// ops are a training step's phases and their typical lengths (µs).
var ops = []struct {
	name string
	us   float64
}{
	{"data_load", 800}, {"embed", 300}, {"attention", 1200}, {"mlp", 900},
	{"layernorm", 150}, {"loss", 100}, {"backward", 2500}, {"allreduce", 1500},
	{"optimizer", 600}, {"log_metrics", 50},
}

// synthRun writes a run of steps training steps into sink as a reader
// would: per step a train_step span with each op a child span on the
// host thread, each op launching a kernel on a device stream. Every
// duration has run-to-run noise (lognormal, 5 %) and one in fifty an
// outlier (1.5 to 3 times as long: preemption, a cold cache). slow
// multiplies the named ops' durations (their kernels stay as they are).
func synthRun(sink event.Sink, seed uint64, steps int, slow map[string]float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	noisy := func(us float64) int64 {
		d := us * 1000 * math.Exp(0.05*rng.NormFloat64())
		if rng.IntN(50) == 0 {
			d *= 1.5 + 1.5*rng.Float64()
		}
		return int64(d)
	}
	host := sink.Track(event.Track{Kind: event.TrackHostThread, ID: 1, Name: "main"})
	dev := sink.Track(event.Track{Kind: event.TrackDeviceStream, ID: 7, Name: "Stream #7"})
	t, devFree := int64(0), int64(0)
	for range steps {
		step := sink.Span(event.Span{Name: "train_step", Start: t, Track: host, Unfinished: true})
		for _, op := range ops {
			f := 1.0
			if s, ok := slow[op.name]; ok {
				f = s
			}
			d := noisy(op.us * f)
			sink.Span(event.Span{Name: op.name, Start: t, End: t + d, Track: host, Parent: step})
			k := noisy(op.us * 0.6)
			ks := max(devFree, t+5000)
			sink.ActivityOf(event.ActivityKernel, dev, op.name+"_kernel", ks, ks+k, nil)
			devFree = ks + k
			t += d + 1000
		}
		sink.EndSpan(step, t)
		t += 2000
	}
	sink.Meta().Stop.Mono = t
}

func profile(seed uint64, steps int, slow map[string]float64) *tracediff.Profile {
	c := tracediff.NewCollector(event.Meta{}, tracediff.Options{})
	synthRun(c, seed, steps, slow)
	return c.Profile()
}

// TestSelfIsNoChange: a run against itself changes nothing, with p = 1
// everywhere.
func TestSelfIsNoChange(t *testing.T) {
	p := profile(1, 200, nil)
	r := tracediff.Compare(p, p, 0)
	if len(r.Rows) != 2*len(ops)+1 {
		t.Fatalf("%d rows, want %d", len(r.Rows), 2*len(ops)+1)
	}
	for _, row := range r.Rows {
		if row.Verdict != tracediff.NoChange || row.P != 1 || row.Shift != 0 || row.Impact != 0 {
			t.Errorf("%s: %v p=%v shift %v impact %d", row.Name, row.Verdict, row.P, row.Shift, row.Impact)
		}
	}
	if s := r.Slower(0); len(s) != 0 || r.Changed() != 0 {
		t.Errorf("%d slower, %d changed", len(s), r.Changed())
	}
}

// TestInjectedSlowdownFirst: two runs of the same work with their own
// noise, one op 20 % slower in the new one: that op is the first row,
// slower by about 20 % with an interval that holds it, and the only row
// past a 10 % threshold; train_step, slower by as much time, comes after
// it since its own (self) time did not change.
func TestInjectedSlowdownFirst(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		r := tracediff.Compare(profile(seed, 200, nil), profile(seed+100, 200, map[string]float64{"attention": 1.2}), 0)
		first := r.Rows[0]
		if first.Name != "attention" || first.Kind != tracediff.KindSpan || first.Verdict != tracediff.Slower {
			t.Fatalf("seed %d: first row %v %q %v, want the span attention, slower", seed, first.Kind, first.Name, first.Verdict)
		}
		if first.Change < 0.15 || first.Change > 0.25 || first.ChangeLow > 0.2 || first.ChangeHigh < 0.2 {
			t.Errorf("seed %d: change %.3f [%.3f, %.3f], want about 0.2 inside its interval", seed, first.Change, first.ChangeLow, first.ChangeHigh)
		}
		if first.P > 1e-6 {
			t.Errorf("seed %d: p = %g for a 20 %% shift over 200 instances", seed, first.P)
		}
		if s := r.Slower(0.10); len(s) != 1 || s[0].Name != "attention" {
			t.Errorf("seed %d: %d rows slower past 10 %%, want attention alone", seed, len(s))
		}
		for _, row := range r.Rows[1:] {
			if row.Verdict == tracediff.Slower && row.Change > 0.05 {
				t.Errorf("seed %d: %s slower by %.3f", seed, row.Name, row.Change)
			}
		}
	}
}

// TestFasterIsNotARegression: an op 20 % faster is reported faster and
// fails no threshold.
func TestFasterIsNotARegression(t *testing.T) {
	r := tracediff.Compare(profile(1, 200, nil), profile(2, 200, map[string]float64{"backward": 0.8}), 0)
	first := r.Rows[0]
	if first.Name != "backward" || first.Verdict != tracediff.Faster || first.Change > -0.15 || first.Impact >= 0 {
		t.Fatalf("first row %q %v change %.3f impact %d, want backward, faster by about 20 %%", first.Name, first.Verdict, first.Change, first.Impact)
	}
	if s := r.Slower(0.05); len(s) != 0 {
		t.Errorf("%d rows slower past 5 %% (first %q)", len(s), s[0].Name)
	}
}

// TestSameWorkNoRegression: two runs of the same work, each with its
// own noise, fail no 5 % threshold.
func TestSameWorkNoRegression(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		r := tracediff.Compare(profile(seed, 200, nil), profile(seed+100, 200, nil), 0)
		if s := r.Slower(0.05); len(s) != 0 {
			t.Errorf("seed %d: %s slower by %.3f", seed, s[0].Name, s[0].Change)
		}
	}
}

// TestTinySamplesNeverSignificant: with four steps a side even a
// doubling, every new instance longer than every old one, is not
// called (the exact p of four against four apart is 2/70 < 0.05).
func TestTinySamplesNeverSignificant(t *testing.T) {
	r := tracediff.Compare(profile(1, 4, nil), profile(2, 4, map[string]float64{"attention": 2}), 0)
	for _, row := range r.Rows {
		if row.Verdict != tracediff.TooFew {
			t.Errorf("%s: %v with 4 instances a side", row.Name, row.Verdict)
		}
		if row.Name == "attention" && row.Change < 0.5 {
			t.Errorf("attention: change %.3f, want the doubling estimated though not tested", row.Change)
		}
	}
	if len(r.Slower(0)) != 0 {
		t.Error("a threshold fails on 4 instances a side")
	}
}

// TestAddedAndRemoved: a name only in one run is added or removed,
// with the other run's figures empty, and fails no threshold.
func TestAddedAndRemoved(t *testing.T) {
	base, new := profile(1, 50, nil), profile(1, 50, nil)
	new.Names["warmup"] = new.Names["loss"]
	delete(new.Names, "loss")
	r := tracediff.Compare(base, new, 0)
	got := map[string]tracediff.Verdict{}
	for _, row := range r.Rows[:2] {
		got[row.Name] = row.Verdict
	}
	if got["warmup"] != tracediff.Added || got["loss"] != tracediff.Removed {
		t.Errorf("first rows %v, want warmup added and loss removed", got)
	}
	if len(r.Slower(0)) != 0 {
		t.Error("an added name fails a threshold")
	}
}
