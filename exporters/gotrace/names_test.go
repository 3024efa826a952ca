package gotrace_test

import (
	"bytes"
	"regexp"
	rtrace "runtime/trace"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/devprof/devprof/exporters/gotrace"
	igotrace "github.com/devprof/devprof/internal/gotrace"
)

// namedWorker is the start function of the goroutines TestRunNames
// starts: a function of its own, so that the trace names them by it.
func namedWorker(wg *sync.WaitGroup, ch chan int) {
	defer wg.Done()
	for v := range ch {
		_ = v * v
	}
}

// TestRunNames: a goroutine's executions on the Ps' tracks are named by
// its start function alone (many goroutines, one name), with the
// goroutine in ArgGoroutine, while the goroutine's own track keeps its
// "G<id> <function>" name; each run's name is the function its
// goroutine's track names (or RunUnnamed, for a goroutine running before
// its stack was seen).
func TestRunNames(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	const workers = 40
	var wg sync.WaitGroup
	for range 4 {
		ch := make(chan int)
		for range workers / 4 {
			wg.Add(1)
			go namedWorker(&wg, ch)
		}
		for i := range 200 {
			ch <- i
		}
		close(ch)
	}
	wg.Wait()
	rtrace.Stop()

	s, err := gotrace.Read(bytes.NewReader(buf.Bytes()), gotrace.Options{MaxGoroutines: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const fn = "github.com/devprof/devprof/exporters/gotrace_test.namedWorker"
	trackRe := regexp.MustCompile(`^G([0-9]+)(?: (.+))?$`)
	funcOf := map[uint64]string{} // goroutine -> its track's start function
	for _, tr := range s.Tracks {
		if m := trackRe.FindStringSubmatch(tr.Name); m != nil {
			id, _ := strconv.ParseUint(m[1], 10, 64)
			funcOf[id] = m[2]
		}
	}
	runs := map[string]int{} // runs by name
	ran := map[uint64]bool{} // goroutines of fn seen running on a P
	for _, r := range s.Events {
		tr, ok := s.TrackOf(r)
		if !ok || !strings.HasPrefix(tr.Name, igotrace.ProcPrefix) {
			continue
		}
		name := s.Name(r)
		runs[name]++
		args := s.Args(r)
		if len(args) != 1 || args[0].Key != igotrace.ArgGoroutine {
			t.Fatalf("run %q on %s: args %v, want the goroutine alone", name, tr.Name, args)
		}
		g := args[0].Num
		f, ok := funcOf[g]
		if !ok {
			t.Fatalf("run %q on %s: goroutine %d has no track", name, tr.Name, g)
		}
		if name != f && name != igotrace.RunUnnamed {
			t.Errorf("run of G%d on %s named %q, want its start function %q (or %q)", g, tr.Name, name, f, igotrace.RunUnnamed)
		}
		if name == fn {
			ran[g] = true
		}
	}
	if len(ran) != workers {
		t.Errorf("%d goroutines of %s ran on a P in the trace, want %d", len(ran), fn, workers)
	}
	// One name for every worker's runs: the names are as many as the
	// start functions, not the goroutines.
	if runs[fn] < workers || len(runs) >= len(funcOf) {
		t.Errorf("%d runs named %q; %d run names for %d goroutines: %v", runs[fn], fn, len(runs), len(funcOf), runs)
	}
}
