package spanstats

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func rowOf(t *testing.T, tb *Table, name string) Row {
	t.Helper()
	for _, r := range tb.Rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", name, tb.Rows)
	return Row{}
}

func d(n int64) time.Duration { return time.Duration(n * ms) }

func TestComputeNested(t *testing.T) {
	tb := Compute([]Span{
		{Name: "a", Start: 0, Dur: 100 * ms, Track: 1, Parent: -1},
		{Name: "b", Start: 10 * ms, Dur: 30 * ms, Track: 1, Parent: 0},
		{Name: "c", Start: 20 * ms, Dur: 10 * ms, Track: 1, Parent: 1},
		{Name: "b", Start: 50 * ms, Dur: 20 * ms, Track: 1, Parent: 0},
	})
	want := []Row{
		{Name: "a", Count: 1, Total: d(100), Self: d(50), Mean: d(100), Min: d(100), Max: d(100)},
		{Name: "b", Count: 2, Total: d(50), Self: d(40), Mean: d(25), Min: d(20), Max: d(30)},
		{Name: "c", Count: 1, Total: d(10), Self: d(10), Mean: d(10), Min: d(10), Max: d(10)},
	}
	if !reflect.DeepEqual(tb.Rows, want) {
		t.Errorf("rows\n got %+v\nwant %+v", tb.Rows, want)
	}
	if tb.Wall != d(100) || tb.Spans != 4 || tb.Tracks != 1 {
		t.Errorf("wall %v spans %d tracks %d", tb.Wall, tb.Spans, tb.Tracks)
	}
}

// Children on the same track that overlap each other count once; a child
// that outlives its parent counts only inside it.
func TestComputeOverlappingSiblings(t *testing.T) {
	tb := Compute([]Span{
		{Name: "p", Start: 0, Dur: 100 * ms, Track: 1, Parent: -1},
		{Name: "x", Start: 10 * ms, Dur: 40 * ms, Track: 1, Parent: 0}, // 10..50
		{Name: "y", Start: 30 * ms, Dur: 40 * ms, Track: 1, Parent: 0}, // 30..70: union 10..70
		{Name: "z", Start: 65 * ms, Dur: 5 * ms, Track: 1, Parent: 0},  // inside the union
		{Name: "w", Start: 90 * ms, Dur: 40 * ms, Track: 1, Parent: 0}, // 90..130, clipped to 90..100
	})
	if p := rowOf(t, tb, "p"); p.Self != d(30) || p.Total != d(100) {
		t.Errorf("p: %+v, want self 30ms", p)
	}
	if w := rowOf(t, tb, "w"); w.Self != d(40) {
		t.Errorf("w: %+v", w)
	}
	if tb.Wall != d(130) {
		t.Errorf("wall %v", tb.Wall)
	}
}

// Children on other tracks ran concurrently: they do not reduce the
// parent's self time.
func TestComputeCrossTrackChildren(t *testing.T) {
	tb := Compute([]Span{
		{Name: "step", Start: 0, Dur: 100 * ms, Track: 1, Parent: -1},
		{Name: "load", Start: 10 * ms, Dur: 50 * ms, Track: 2, Parent: 0},
		{Name: "compute", Start: 20 * ms, Dur: 30 * ms, Track: 1, Parent: 0},
		{Name: "io", Start: 20 * ms, Dur: 10 * ms, Track: 2, Parent: 1},
	})
	for name, self := range map[string]int64{"step": 70, "load": 40, "compute": 30, "io": 10} {
		if r := rowOf(t, tb, name); r.Self != d(self) {
			t.Errorf("%s: self %v, want %dms", name, r.Self, self)
		}
	}
	if tb.Tracks != 2 || tb.Spans != 4 {
		t.Errorf("tracks %d spans %d", tb.Tracks, tb.Spans)
	}
}

func TestComputeSkipsOpenAndBadParents(t *testing.T) {
	tb := Compute([]Span{
		{Name: "open", Start: 0, Dur: -1, Track: 1, Parent: -1},
		{Name: "child of open", Start: 10, Dur: 10, Track: 1, Parent: 0},
		{Name: "self parent", Start: 20, Dur: 10, Track: 1, Parent: 2},
		{Name: "bad parent", Start: 30, Dur: 10, Track: 1, Parent: 99},
		{Name: "open child", Start: 30, Dur: -1, Track: 1, Parent: 3},
	})
	if len(tb.Rows) != 3 || tb.Spans != 3 || tb.Wall != 30 {
		t.Fatalf("%+v", tb)
	}
	for _, r := range tb.Rows {
		if r.Self != r.Total {
			t.Errorf("%+v", r)
		}
	}
	if e := Compute(nil); len(e.Rows) != 0 || e.Wall != 0 || e.Spans != 0 {
		t.Errorf("empty: %+v", e)
	}
}

func TestSort(t *testing.T) {
	tb := Compute([]Span{
		{Name: "b", Start: 0, Dur: 10, Track: 1, Parent: -1},
		{Name: "b", Start: 0, Dur: 10, Track: 1, Parent: -1},
		{Name: "a", Start: 0, Dur: 30, Track: 1, Parent: -1},
		{Name: "c", Start: 0, Dur: 20, Track: 1, Parent: -1},
		{Name: "c", Start: 0, Dur: 10, Track: 1, Parent: 3},
	})
	names := func() string {
		var s []string
		for _, r := range tb.Rows {
			s = append(s, r.Name)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct{ by, want string }{
		{"", "a,c,b"}, // total: 30, 30, 20; ties by name
		{"total", "a,c,b"},
		{"self", "a,b,c"}, // 30, 20, 20
		{"count", "b,c,a"},
		{"mean", "a,c,b"}, // 30, 15, 10
		{"name", "a,b,c"},
	} {
		if err := tb.Sort(tc.by); err != nil || names() != tc.want {
			t.Errorf("Sort(%q): %s, %v; want %s", tc.by, names(), err, tc.want)
		}
	}
	err := tb.Sort("wall")
	if err == nil || err.Error() != `unknown sort key "wall" (choose total, self, count, mean, name)` {
		t.Errorf("Sort(wall): %v", err)
	}
}

func TestWrite(t *testing.T) {
	long := strings.Repeat("x", 60)
	tb := Compute([]Span{
		{Name: "step", Start: 0, Dur: 2 * int64(time.Second), Track: 1, Parent: -1},
		{Name: "forward", Start: 0, Dur: 12_345_678, Track: 1, Parent: 0},
		{Name: "forward", Start: 20 * ms, Dur: 850, Track: 1, Parent: 0},
		{Name: long, Start: 0, Dur: 1500, Track: 2, Parent: -1},
	})
	var b bytes.Buffer
	if err := tb.Write(&b, 0); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"Name                                              Count   Total    Self    Mean     Min     Max  % wall\n" +
		"step                                                  1   2.00s   1.99s   2.00s   2.00s   2.00s  100.0%\n" +
		"forward                                               2  12.3ms  12.3ms  6.17ms   850ns  12.3ms    0.6%\n" +
		strings.Repeat("x", 47) + "…      1  1.50µs  1.50µs  1.50µs  1.50µs  1.50µs    0.0%\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	tb.Write(&b, 1)
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "step ") {
		t.Errorf("top 1:\n%s", b.String())
	}
	b.Reset()
	Compute(nil).Write(&b, 5)
	if b.String() != "Name  Count  Total  Self  Mean  Min  Max  % wall\n(no spans)\n" {
		t.Errorf("empty table:\n%q", b.String())
	}
	if err := tb.Write(failWriter{}, 0); err == nil {
		t.Error("write error not returned")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0ns"}, {999, "999ns"}, {1000, "1.00µs"}, {1234, "1.23µs"}, {9994, "9.99µs"}, {9996, "10.0µs"},
		{12_345, "12.3µs"}, {99_960, "100µs"}, {999_400, "999µs"}, {999_600, "1.00ms"}, {12_300_000, "12.3ms"},
		{250 * time.Millisecond, "250ms"}, {1234 * time.Millisecond, "1.23s"}, {999 * time.Second, "999s"},
		{3600 * time.Second, "3600s"}, {-1500, "-1.50µs"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestSumMergeEqualsOneSum checks that sums merged together give the
// table one sum of all the spans gives, as summary's per-track sums rely
// on.
func TestSumMergeEqualsOneSum(t *testing.T) {
	type span struct {
		name             string
		start, dur, self int64
	}
	spans := []span{{"a", 10, 5, 3}, {"b", 0, 100, 90}, {"a", 200, 1, 1}, {"c", 50, 0, 0}, {"b", -20, 7, 7}}
	var whole Sum
	parts := make([]Sum, 3)
	for i, s := range spans {
		whole.Add(s.name, s.start, s.dur, s.self)
		parts[i%3].Add(s.name, s.start, s.dur, s.self)
	}
	var merged Sum
	for i := range parts {
		merged.Merge(&parts[i])
	}
	var empty Sum
	merged.Merge(&empty)
	a, b := whole.Table(2), merged.Table(2)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("merged %+v, want %+v", b, a)
	}
	if a.Spans != 5 || a.Wall != 221 || len(a.Rows) != 3 || a.Rows[0].Name != "b" || a.Rows[0].Self != 97 || a.Rows[0].Min != 7 {
		t.Errorf("table %+v", a)
	}
}
