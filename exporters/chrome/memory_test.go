package chrome

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/devprof/devprof/internal/eventtest"
)

// Memory events are instants on a thread of their device's process, the
// address in hex; the device's memory is an "in use" counter and a "by
// tags" counter with one value per tag set, which the viewer stacks.
func TestMemoryEvents(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePlain(&buf, eventtest.GoldenSnapshot()); err != nil {
		t.Fatal(err)
	}
	var file struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Name string         `json:"name"`
			Pid  int            `json:"pid"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	procs, threads := map[int]string{}, map[[2]int]string{}
	for _, e := range file.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			procs[e.Pid] = e.Args["name"].(string)
		case e.Ph == "M" && e.Name == "thread_name":
			threads[[2]int{e.Pid, e.Tid}] = e.Args["name"].(string)
		}
	}
	instants := map[string]int{}
	counters := map[string][]any{}
	for _, e := range file.TraceEvents {
		switch e.Ph {
		case "i":
			th := threads[[2]int{e.Pid, e.Tid}]
			if !strings.Contains(th, "memory") {
				continue
			}
			instants[procs[e.Pid]+"/"+th+" "+e.Name]++
			if a, _ := e.Args["address"].(string); !strings.HasPrefix(a, "0x") {
				t.Errorf("%s: address %v, want hex", e.Name, e.Args["address"])
			}
		case "C":
			if strings.Contains(e.Name, "memory (devmem)") {
				v := e.Args["bytes"]
				if strings.HasSuffix(e.Name, "by tags") {
					v = e.Args["activations"]
				}
				counters[procs[e.Pid]+"/"+e.Name] = append(counters[procs[e.Pid]+"/"+e.Name], v)
			}
		}
	}
	gpu := "GPU 0 (NVIDIA H100 80GB HBM3)"
	if want := map[string]int{gpu + "/GPU 0 memory (devmem) alloc": 3, gpu + "/GPU 0 memory (devmem) free": 2, "golden.test/host memory (devmem) alloc": 1}; !reflect.DeepEqual(instants, want) {
		t.Errorf("memory instants %v, want %v", instants, want)
	}
	const MiB = 1 << 20
	want := map[string][]any{
		gpu + "/GPU 0 memory (devmem) in use":      {64.0 * MiB, 68.0 * MiB, 64.0 * MiB, 68.0 * MiB, 64.0 * MiB},
		gpu + "/GPU 0 memory (devmem) by tags":     {0.0, 4.0 * MiB, 0.0, 4.0 * MiB, 0.0},
		"golden.test/host memory (devmem) in use":  {1.0 * MiB},
		"golden.test/host memory (devmem) by tags": {nil},
	}
	if !reflect.DeepEqual(counters, want) {
		t.Errorf("memory counters\n got %v\nwant %v", counters, want)
	}
}
