package chrome

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/devprof/devprof/event"
)

// resetCount is a Builder that counts how often Decode started over in
// it (the streaming path giving way to the batch path).
type resetCount struct {
	*event.Builder
	resets int
}

func (r *resetCount) Reset() {
	r.resets++
	r.Builder.Reset()
}

// readBatch reads data through the batch path alone.
func readBatch(t testing.TB, data []byte) *event.Snapshot {
	t.Helper()
	b := event.NewBuilder(event.Meta{})
	if err := decode(bytes.NewReader(data), b, false); err != nil {
		t.Fatal(err)
	}
	return b.Snapshot()
}

// fullDump shows everything of a snapshot that the two paths must agree
// on: dump's lines; the metadata, processes and tracks field by field;
// and, per track, the order of its records (the order a streaming
// consumer sees them in).
func fullDump(s *event.Snapshot) string {
	var b strings.Builder
	b.WriteString(dump(s))
	fmt.Fprintf(&b, "meta %+v\n", s.Meta)
	for _, p := range s.Processes {
		fmt.Fprintf(&b, "process %+v\n", p)
	}
	for _, tk := range s.Tracks {
		fmt.Fprintf(&b, "track %+v\n", tk)
	}
	perTrack := map[string][]string{}
	var order []string
	for _, r := range s.Events {
		key := fmt.Sprintf("%v lane=%d on_track=%v", r.Kind(), r.Lane(), r.OnTrack())
		if _, ok := perTrack[key]; !ok {
			order = append(order, key)
		}
		line := fmt.Sprintf("%q %d", s.Name(r), r.Start())
		if p := s.Lookup(r.Parent()); p != nil {
			line += fmt.Sprintf(" parent=%q@%d", s.Name(p), p.Start())
		}
		perTrack[key] = append(perTrack[key], line)
	}
	for _, k := range order {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(perTrack[k], ", "))
	}
	return b.String()
}

// checkStream reads data through Decode and through the batch path alone,
// wants the same snapshot from both, and returns how often Decode started
// over.
func checkStream(t *testing.T, name string, data []byte) int {
	t.Helper()
	sink := &resetCount{Builder: event.NewBuilder(event.Meta{})}
	if err := Decode(bytes.NewReader(data), sink); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got, want := fullDump(sink.Snapshot()), fullDump(readBatch(t, data))
	if got != want {
		t.Errorf("%s: Decode and the batch path differ:\n%s\nbatch:\n%s", name, got, want)
	}
	return sink.resets
}

// TestStreamMatchesBatch: whichever path Decode takes, a file reads as the
// batch path reads it; devprof's own files take the streaming path, and
// the files it cannot stream exactly are read again.
func TestStreamMatchesBatch(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{1, 250, 5000} {
		for _, gzipped := range []bool{false, true} {
			path, _ := sessionTrace(t, dir, n, gzipped)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if resets := checkStream(t, path, data); resets != 0 {
				t.Errorf("%s: a session's trace was read again (%d)", path, resets)
			}
		}
	}
	// A session with instants on threads, counters, a flow and a span
	// left open.
	checkStream(t, "devprofSession", encode(t, devprofSession(t)))
	for _, c := range readCases {
		checkStream(t, c.name, []byte(c.in))
	}
	for _, path := range []string{realKineto, realJAX} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if resets := checkStream(t, path, data); resets != 1 {
			t.Errorf("%s: read again %d times, want once", path, resets)
		}
	}
	// Files shaped as devprof writes them, but for one thing the
	// streaming path cannot do exactly: each is read again.
	const head = `{"traceEvents":[{"ph":"M","name":"thread_name","pid":5,"tid":1,"args":{"name":"main"}},` +
		`{"ph":"M","name":"thread_name","pid":5,"tid":2,"args":{"name":"second"}},`
	const tail = `],"otherData":{"host":"h","pid":5,"program":"p","start_unix_ns":1700000000000000000}}`
	for _, c := range []struct{ name, events string }{
		{"child before parent", `{"ph":"X","pid":5,"tid":1,"ts":1,"dur":1,"name":"child"},{"ph":"X","pid":5,"tid":1,"ts":1,"dur":5,"name":"parent"}`},
		{"earlier start later", `{"ph":"X","pid":5,"tid":1,"ts":3,"dur":1,"name":"b"},{"ph":"X","pid":5,"tid":1,"ts":2,"dur":5,"name":"a"}`},
		{"negative time", `{"ph":"X","pid":5,"tid":1,"ts":-3,"dur":1,"name":"a"}`},
		{"track order", `{"ph":"X","pid":5,"tid":2,"ts":1,"dur":1,"name":"a"},{"ph":"X","pid":5,"tid":1,"ts":2,"dur":1,"name":"b"}`},
		{"late sort index", `{"ph":"X","pid":5,"tid":1,"ts":1,"dur":1,"name":"a"},{"ph":"M","name":"thread_sort_index","pid":5,"tid":1,"args":{"sort_index":-1}}`},
		{"string tid", `{"ph":"X","pid":5,"tid":"worker","ts":1,"dur":1,"name":"a"}`},
		{"string pid", `{"ph":"X","pid":"proc","tid":1,"ts":1,"dur":1,"name":"a"}`},
		{"thread instant", `{"ph":"X","pid":5,"tid":1,"ts":1,"dur":5,"name":"a"},{"ph":"i","s":"t","pid":5,"tid":1,"ts":2,"name":"in"}`},
		{"instants out of order", `{"ph":"i","s":"p","pid":5,"ts":2,"name":"b"},{"ph":"i","s":"p","pid":5,"ts":1,"name":"a"}`},
		{"counters out of order", `{"ph":"C","pid":5,"ts":2,"name":"c","args":{"value":1}},{"ph":"C","pid":5,"ts":1,"name":"c","args":{"value":2}}`},
		{"begin and end", `{"ph":"B","pid":5,"tid":1,"ts":1,"name":"a"},{"ph":"E","pid":5,"tid":1,"ts":2}`},
		{"flow v2", `{"ph":"X","pid":5,"tid":1,"ts":1,"dur":1,"name":"a","bind_id":7,"flow_out":true},{"ph":"X","pid":5,"tid":2,"ts":3,"dur":1,"name":"b","bind_id":7,"flow_in":true}`},
		{"flow v1", `{"ph":"X","pid":5,"tid":1,"ts":1,"dur":1,"name":"a"},{"ph":"s","pid":5,"tid":1,"ts":1,"id":1,"name":"f"}`},
		{"async", `{"ph":"b","pid":5,"tid":1,"ts":1,"id":1,"cat":"c","name":"a"},{"ph":"e","pid":5,"tid":1,"ts":2,"id":1,"cat":"c","name":"a"}`},
	} {
		if resets := checkStream(t, c.name, []byte(head+c.events+tail)); resets != 1 {
			t.Errorf("%s: read again %d times, want once", c.name, resets)
		}
	}
	// What the streaming path does take: a later thread name renames the
	// track, process-scoped instants and counters of the program, markers,
	// unsupported phases and events without a time.
	for _, c := range []struct{ name, events string }{
		{"late thread name", `{"ph":"X","pid":5,"tid":1,"ts":1,"dur":1,"name":"a"},{"ph":"M","name":"thread_name","pid":5,"tid":1,"args":{"name":"renamed"}}`},
		{"nesting", `{"ph":"X","pid":5,"tid":1,"ts":1,"dur":9,"name":"p","args":{"step_num":2,"k":"v"}},{"ph":"X","pid":5,"tid":1,"ts":1,"dur":3,"name":"c"},` +
			`{"ph":"X","pid":5,"tid":1,"ts":2,"dur":1,"name":"g","args":{"unfinished":true}},{"ph":"X","pid":5,"tid":1,"ts":5,"dur":9,"name":"overlap"},{"ph":"X","pid":5,"tid":2,"ts":0,"dur":1,"name":"other"}`},
		{"instants and counters", `{"ph":"i","s":"p","pid":5,"ts":1,"name":"a","args":{"x":1}},{"ph":"i","s":"g","pid":5,"ts":1,"name":"b"},` +
			`{"ph":"C","pid":5,"ts":2,"name":"c","args":{"value":1}},{"ph":"C","pid":5,"ts":3,"name":"m","args":{"a":1,"b":"NaN","s":"x"}},{"ph":"C","pid":5,"ts":3,"name":"none","args":{"s":"x"}},` +
			`{"ph":"C","pid":5,"ts":4,"name":"u","id":3,"args":{"bytes":7}}`},
		{"others", `{"ph":"P","pid":5,"tid":1,"ts":1},{"ph":"X","pid":5,"tid":1,"name":"no time"},{}`},
	} {
		if resets := checkStream(t, c.name, []byte(head+c.events+tail)); resets != 0 {
			t.Errorf("%s: read again %d times, want none", c.name, resets)
		}
	}
}
