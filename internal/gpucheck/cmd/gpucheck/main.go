//go:build cgo

// Command gpucheck drives scripts/gpucheck/workload.cu (built by nvcc into a
// shared library) under a devprof session and checks the trace against
// what it launched (package gpucheck). scripts/gpu-check builds and runs
// it; it needs an NVIDIA GPU.
package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef int (*workload_fn)(int, long long, long long);
typedef int (*alloc_free_fn)(long long);
typedef int (*launch_loop_fn)(int);

static void *open_workload(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void *find(void *h, const char *name) { return dlsym(h, name); }
static int call(void *f, int n, long long spin, long long bytes) { return ((workload_fn)f)(n, spin, bytes); }
static int call_alloc_free(void *f, long long bytes) { return ((alloc_free_fn)f)(bytes); }
static int call_launch_loop(void *f, int launches) { return ((launch_loop_fn)f)(launches); }
static const char *last_error(void) { const char *e = dlerror(); return e ? e : "unknown error"; }
*/
import "C"

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/devmem"
	"github.com/devprof/devprof/internal/gpucheck"
	"github.com/devprof/devprof/internal/gpucheck/cudabind"
	"github.com/devprof/devprof/sources/nvml"
	"github.com/devprof/devprof/trace"
)

func main() {
	workload := flag.String("workload", "", "the workload library nvcc built from scripts/gpucheck/workload.cu")
	logdir := flag.String("logdir", "", "where the session writes its run")
	steps := flag.Int("steps", 20, "workload iterations, one training step each")
	spin := flag.Duration("spin", time.Millisecond, "how long each spin kernel busy-waits")
	bytes := flag.Int64("bytes", 1<<20, "bytes of each copy")
	overhead := flag.Int("overhead", 0, "after the checks, this many paired rounds timing a launch-bound loop without and with a session (0: none)")
	overheadSteps := flag.Int("overhead-steps", 2000, "steps of the launch-bound loop a round times")
	launches := flag.Int("launches", 46, "kernel launches in one launch-bound step (one synchronize follows)")
	window := flag.String("window", "", "after the checks, run phases of known load (idle, holding -hold bytes, spinning, copying) under NVML sampling every 100 ms and write the run and phases.json into this directory, to compare with nvidia-smi sampled beside it")
	hold := flag.Int64("hold", 16<<30, "bytes of device memory -window holds")
	copyBytes := flag.Int64("copy-bytes", 256<<20, "bytes of each copy of -window's copy loop")
	leak := flag.String("leak", "", "after the checks, allocate through a cgo binding from three call sites, one leaking, and write device-memory profiles before and after (base.memory.pb.gz, after.memory.pb.gz) and the run into this directory")
	flag.Parse()
	if *workload == "" || *logdir == "" {
		fmt.Fprintln(os.Stderr, "gpucheck: -workload and -logdir are required (scripts/gpu-check sets them)")
		os.Exit(2)
	}
	// Each part runs whatever an earlier one found, so that one run on a
	// lent GPU shows everything; the exit status says whether any failed.
	failed := false
	if err := run(*workload, *logdir, *steps, *spin, *bytes); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		failed = true
	}
	if *window != "" || *leak != "" {
		lib, err := cudabind.Open(*workload)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gpucheck:", err)
			os.Exit(1)
		}
		if *window != "" {
			if err := nvmlWindow(lib, *window, *hold, *copyBytes); err != nil {
				fmt.Fprintln(os.Stderr, "gpucheck: window:", err)
				failed = true
			}
		}
		if *leak != "" {
			if err := leakRun(lib, *leak); err != nil {
				fmt.Fprintln(os.Stderr, "gpucheck: leak:", err)
				failed = true
			}
		}
	}
	if *overhead > 0 {
		if err := measureOverhead(*workload, *overhead, *overheadSteps, *launches); err != nil {
			fmt.Fprintln(os.Stderr, "gpucheck: overhead:", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

const n = 1 << 20 // saxpy elements: grid 4096 of 256 threads

func run(path, logdir string, steps int, spin time.Duration, bytes int64) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.open_workload(cpath)
	if h == nil {
		return fmt.Errorf("loading %s: %s", path, C.GoString(C.last_error()))
	}
	name := C.CString("devprof_workload")
	defer C.free(unsafe.Pointer(name))
	f := C.find(h, name)
	if f == nil {
		return fmt.Errorf("%s has no devprof_workload", path)
	}
	afName := C.CString("devprof_alloc_free")
	defer C.free(unsafe.Pointer(afName))
	af := C.find(h, afName)
	if af == nil {
		return fmt.Errorf("%s has no devprof_alloc_free (rebuild it from scripts/gpucheck/workload.cu)", path)
	}
	// Device-memory tracking must see CUDA's allocations with this
	// goroutine's stack: ModeOn fails the run when it cannot hook them.
	s, err := trace.StartSession(logdir, trace.Options{DeviceMemory: &devmem.Options{CUDA: devmem.ModeOn}})
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	for i := range steps {
		ctx, st := annotate.Step(context.Background(), "train", int64(i))
		_, dev := annotate.Device(ctx, "workload")
		rc := C.call(f, n, C.longlong(spin.Nanoseconds()), C.longlong(bytes))
		dev.End()
		st.End()
		if rc != 0 {
			s.Stop()
			return fmt.Errorf("step %d: CUDA error %d", i, int(rc))
		}
	}
	const pairs = 5
	for range pairs {
		if rc := C.call_alloc_free(af, C.longlong(bytes)); rc != 0 {
			s.Stop()
			return fmt.Errorf("devprof_alloc_free: CUDA error %d", int(rc))
		}
	}
	runtime.UnlockOSThread()
	mem, err := devmem.Snapshot()
	if err != nil {
		s.Stop()
		return err
	}
	if err := s.Stop(); err != nil {
		return err
	}
	out, snap := s.Outputs(), s.Snapshot()
	for _, w := range snap.Meta.Warnings {
		fmt.Printf("warning: [%s/%s] %s\n", w.Source, w.Code, w.Text)
	}
	w := gpucheck.Workload{
		Kernels: []gpucheck.Kernel{
			{Name: "saxpy(", Count: steps, Grid: "4096,1,1", Block: "256,1,1"},
			// The GPU's clock ticks in ~32 ns steps on recent parts; CUPTI's
			// timestamps measured 0.8-0.9 us over the spin on an H100.
			{Name: "spin(", Count: steps, Grid: "1,1,1", Block: "1,1,1", SpinNs: spin.Nanoseconds(), SlackNs: 20_000},
		},
		Copies: []gpucheck.Copy{
			{Kind: "HtoD", Bytes: uint64(bytes), Count: steps},
			{Kind: "DtoH", Bytes: uint64(bytes), Count: steps},
		},
	}
	problems := gpucheck.Check(snap, w)
	// What the workload holds: x and y (n floats each), the copy's device
	// buffer and its pinned host buffer, all allocated from run's cgo call.
	held := []gpucheck.Alloc{
		{API: "cudaMalloc", Kind: "device", Bytes: n * 4, Count: 2, Caller: "main.run"},
		{API: "cudaMalloc", Kind: "device", Bytes: uint64(bytes), Count: 1, Caller: "main.run"},
		{API: "cudaMallocHost", Kind: "pinned", Bytes: uint64(bytes), Count: 1, Caller: "main.run"},
	}
	if bytes == n*4 {
		held = []gpucheck.Alloc{held[0], held[2]}
		held[0].Count = 3
	}
	problems = append(problems, gpucheck.CheckMemory(mem, held, pairs)...)
	var heldBytes uint64
	for _, h := range held {
		if h.Kind == "device" {
			heldBytes += h.Bytes * uint64(h.Count)
		}
	}
	problems = append(problems, gpucheck.CheckMetrics(snap, 0, heldBytes, gpucheck.MetricNames{
		MemTotal: nvml.CounterMemTotal, MemUsed: nvml.CounterMemUsed, Util: nvml.CounterUtil,
		Power: nvml.CounterPower, SMClock: nvml.CounterSMClock, Temp: nvml.CounterTemp})...)
	if m, ok := gpucheck.MetricsOf(snap, 0); ok {
		fmt.Printf("gpucheck: NVML: %s (%s, %s), %d SMs, cc %d.%d, %.1f GiB, %.0f GB/s\n", m.Device.DeviceName, m.Device.UUID, m.Device.PCIBusID,
			m.Device.Caps.Cores, m.Device.Caps.ComputeCapMajor, m.Device.Caps.ComputeCapMinor, float64(m.Device.Caps.MemoryBytes)/(1<<30), float64(m.Device.Caps.MemoryBandwidth)/1e9)
		for _, name := range slices.Sorted(maps.Keys(m.Series)) {
			vs := m.Series[name]
			fmt.Printf("gpucheck: NVML %-30s %3d samples, min %g max %g\n", name, len(vs), slices.Min(vs), slices.Max(vs))
		}
	}
	for _, b := range mem.Buffers {
		fmt.Printf("gpucheck: live %s %d bytes %s on gpu %d, allocated at %s\n", b.API, b.Bytes, b.Kind, b.Device, b.Site())
	}
	fmt.Printf("gpucheck: device-memory profile in %s\n", out.Memory)
	fmt.Printf("gpucheck: %d steps recorded into %s and %s\n", steps, out.Perfetto, out.XPlane)
	for _, p := range problems {
		fmt.Println("FAIL:", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s)", len(problems))
	}
	fmt.Println("gpucheck: counts, launch shapes, copy sizes, spin durations, launch causality and live device memory with Go stacks all match")
	return nil
}

// lookup returns the address of symbol name in the library at path.
func lookup(path, name string) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.open_workload(cpath)
	if h == nil {
		return nil, fmt.Errorf("loading %s: %s", path, C.GoString(C.last_error()))
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	f := C.find(h, cname)
	if f == nil {
		return nil, fmt.Errorf("%s has no %s (rebuild it from scripts/gpucheck/workload.cu)", path, name)
	}
	return f, nil
}

// launchLoop runs one launch-bound step of the workload at f.
func launchLoop(f unsafe.Pointer, launches int) int {
	return int(C.call_launch_loop(f, C.int(launches)))
}
