//go:build cgo

package cuptiwrap

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devprof/devprof/internal/fakecuda"
)

// TestFlushDeliversEverything: with periodic flushing off, Flush alone
// delivers the whole script, synchronously.
func TestFlushDeliversEverything(t *testing.T) {
	lib := useFake(t, "12", 0)
	var log sinkLog
	c, err := Start(Options{Library: lib, FlushPeriod: -1}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	if n := len(log.snapshot()); n != 0 {
		t.Fatalf("%d records before any flush, with periodic flushing off", n)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	want := expectedScript("12", true)
	if d := diffRecords(log.snapshot(), want); d != "" {
		t.Fatalf("after Flush:\n%s", d)
	}
	st := mustStop(t, c)
	if st.Delivered != int64(len(want)) || st.Dropped != 0 {
		t.Errorf("Stats = %+v", st)
	}
	if d := diffRecords(log.snapshot(), want); d != "" {
		t.Errorf("after Stop:\n%s", d)
	}
}

func TestMaxRecords(t *testing.T) {
	lib := useFake(t, "11.8", 3)
	var log sinkLog
	c, err := Start(Options{Library: lib, MaxRecords: 10, FlushPeriod: -1}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStop(t, c)
	want := len(expectedScript("11.8", true))
	if st.Delivered != 10 || len(log.snapshot()) != 10 || st.OverLimit != int64(want-10) ||
		st.CUPTIDropped != 3 || st.Dropped != int64(want-10+3) {
		t.Errorf("Stats = %+v with %d records at the sink; want 10 delivered, %d over the limit, 3 dropped by CUPTI",
			st, len(log.snapshot()), want-10)
	}
}

// TestPoolCap: with one buffer, CUPTI's requests while it is out get
// NULL; those records are CUPTI's drops, and nothing is lost unaccounted.
func TestPoolCap(t *testing.T) {
	lib := useFake(t, "13", 0)
	var log sinkLog
	c, err := Start(Options{Library: lib, MaxBuffers: 1, FlushPeriod: -1}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStop(t, c)
	want := int64(len(expectedScript("13", true)))
	if st.DeclinedBuffers == 0 || st.AllocatedBuffers != 1 {
		t.Errorf("Stats = %+v: want declined requests and one buffer", st)
	}
	if st.Delivered+st.CUPTIDropped != want || st.Delivered != int64(len(log.snapshot())) {
		t.Errorf("Stats = %+v: delivered + dropped should be %d", st, want)
	}
}

// TestMinimalLibrary: a CUPTI without the optional entry points still
// works: a Go ticker replaces cuptiActivityFlushPeriod, and API records are
// named by callback id.
func TestMinimalLibrary(t *testing.T) {
	useFake(t, "11.8", 0)
	lib := fakecuda.BuildVariant(t, fakecuda.Minimal)
	var log sinkLog
	c, err := Start(Options{Library: lib, FlushPeriod: 10 * time.Millisecond}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Library().MissingOptional
	wantMissing := []string{"cuptiActivityFlushPeriod", "cuptiActivityRegisterTimestampCallback", "cuptiGetCallbackName",
		"cuptiEnableCallback", "cuptiGetDeviceId"}
	if strings.Join(got, ",") != strings.Join(wantMissing, ",") {
		t.Errorf("MissingOptional = %v, want %v", got, wantMissing)
	}
	want := expectedScript("11.8", false)
	log.waitFor(t, 5*time.Second, "the Go ticker flush delivered phase A", func(r []Record) bool { return len(r) >= scriptPhaseA })
	mustStop(t, c)
	if d := diffRecords(log.snapshot(), want); d != "" {
		t.Errorf("after Stop:\n%s", d)
	}
}

func TestFailureInjection(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		op       string
		code     int
		name     string
		sentinel error
		text     []string
	}{
		{"not_initialized", "cuptiSubscribe", 15, "CUPTI_ERROR_NOT_INITIALIZED", ErrNoDevice,
			[]string{"no NVIDIA GPU or driver usable (CUPTI_ERROR_NOT_INITIALIZED)", "nvidia-smi"}},
		{"privileges", "cuptiActivityEnable", 35, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", ErrPermission,
			[]string{"Run as root", "options nvidia NVreg_RestrictProfilingToAdminUsers=0", "/etc/modprobe.d/", "reboot"}},
		{"multiple_subscribers", "cuptiSubscribe", 39, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", ErrProfilerConflict,
			[]string{"another profiler", "Nsight"}},
		{"subscribe_limit", "cuptiSubscribe", 12, "CUPTI_ERROR_MAX_LIMIT_REACHED", ErrProfilerConflict,
			[]string{"another profiler"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			lib := useFake(t, "11.8", 0)
			t.Setenv("FAKECUPTI_FAIL", tc.mode)
			c, err := Start(Options{Library: lib}, func([]Record) {})
			if err == nil {
				c.Stop()
				t.Fatal("Start succeeded")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if ce.Op != tc.op || ce.Code != tc.code || ce.Name != tc.name {
				t.Errorf("Error = %+v, want Op %s Code %d Name %s", ce, tc.op, tc.code, tc.name)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.sentinel)
			}
			msg := err.Error()
			for _, s := range tc.text {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message is not one line: %q", msg)
			}

			// The failed Start left nothing behind: no subscription, no
			// active collector.
			t.Setenv("FAKECUPTI_FAIL", "")
			c, err = Start(Options{Library: lib, FlushPeriod: -1}, func([]Record) {})
			if err != nil {
				t.Fatalf("Start after a failed Start: %v", err)
			}
			mustStop(t, c)
		})
	}
}

func TestLibraryNotFound(t *testing.T) {
	t.Run("explicit", func(t *testing.T) {
		_, err := Start(Options{Library: "/nonexistent/libcupti.so.99"}, func([]Record) {})
		var le *LoadError
		if !errors.Is(err, ErrLibraryNotFound) || !errors.As(err, &le) {
			t.Fatalf("err = %v, want a LoadError", err)
		}
		if !le.Explicit || len(le.Tried) != 1 || !strings.Contains(err.Error(), "/nonexistent/libcupti.so.99: ") ||
			!strings.Contains(err.Error(), "No such file") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv(EnvLibrary, "/nonexistent/libcupti-env.so")
		_, err := Start(Options{}, func([]Record) {})
		if !errors.Is(err, ErrLibraryNotFound) || !strings.Contains(err.Error(), "/nonexistent/libcupti-env.so") ||
			!strings.Contains(err.Error(), EnvLibrary) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("search", func(t *testing.T) {
		// The search proper (the sonames resolve on this machine if
		// Debian's libcupti is installed): toolkit directories with a
		// bogus file, a missing directory, a library that is not CUPTI.
		home := t.TempDir()
		lib64 := filepath.Join(home, "extras/CUPTI/lib64")
		if err := os.MkdirAll(lib64, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lib64, "libcupti.so.12"), []byte("not an ELF file"), 0o644); err != nil {
			t.Fatal(err)
		}
		getenv := func(k string) string {
			if k == "CUDA_HOME" {
				return home
			}
			return ""
		}
		places, explicit := searchPlaces("", getenv)
		if explicit {
			t.Fatal("search reported explicit")
		}
		var kept []place
		for _, p := range places {
			if strings.HasPrefix(p.path, home) {
				kept = append(kept, p)
			}
		}
		kept = append([]place{{path: "libcupti.so.99"}}, kept...)
		kept = append(kept, place{path: "libm.so.6"})
		_, err := loadFrom(kept, false)
		var le *LoadError
		if !errors.As(err, &le) || !errors.Is(err, ErrLibraryNotFound) {
			t.Fatalf("err = %v", err)
		}
		msg := err.Error()
		for _, s := range []string{
			"libcupti.so.99: cannot open shared object file",
			filepath.Join(lib64, "libcupti.so.12") + ": ",
			filepath.Join(home, "targets") + "/",
			"no such directory",
			"libm.so.6: not a usable libcupti: lacks cuptiGetVersion",
			"install CUPTI", "DEVPROF_CUPTI_LIB",
		} {
			if !strings.Contains(msg, s) {
				t.Errorf("message lacks %q:\n%s", s, msg)
			}
		}
		if len(le.Tried) != 4 {
			t.Errorf("Tried = %+v", le.Tried)
		}
	})
}

func TestSecondStartAndIdempotentStop(t *testing.T) {
	lib := useFake(t, "11.8", 0)
	var log sinkLog
	c, err := Start(Options{Library: lib, FlushPeriod: -1}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := Start(Options{Library: lib}, func([]Record) {}); !errors.Is(err, ErrAlreadyStarted) || c2 != nil {
		t.Fatalf("second Start: %v, %v", c2, err)
	}
	st1 := mustStop(t, c)
	st2, err := c.Stop()
	if err != nil || st1.Delivered != st2.Delivered || st1.Buffers != st2.Buffers || len(st1.PerKind) != len(st2.PerKind) {
		t.Errorf("second Stop = %+v, %v; first %+v", st2, err, st1)
	}
	if err := c.Flush(); !errors.Is(err, ErrStopped) {
		t.Errorf("Flush after Stop: %v", err)
	}
	if err := c.PushExternalCorrelation(1); !errors.Is(err, ErrStopped) {
		t.Errorf("Push after Stop: %v", err)
	}
	if _, err := c.Timestamp(); err != nil {
		t.Errorf("Timestamp after Stop: %v", err)
	}
	// Once stopped, another may start.
	c, err = Start(Options{Library: lib, FlushPeriod: -1}, func([]Record) {})
	if err != nil {
		t.Fatal(err)
	}
	mustStop(t, c)
}

// TestKernelDisablePolicy: CONCURRENT_KERNEL stays enabled after Stop
// before CUDA 13.0 Update 1 (its disable can deadlock there), and is
// disabled from then on; the other kinds are always disabled.
func TestKernelDisablePolicy(t *testing.T) {
	lib := useFake(t, "13", 0)
	fk, err := fakecuda.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version  string
		kernelOn bool
	}{{"130000", true}, {"130001", false}} {
		t.Setenv("FAKECUPTI_VERSION", tc.version)
		c, err := Start(Options{Library: lib, FlushPeriod: -1}, func([]Record) {})
		if err != nil {
			t.Fatal(err)
		}
		if !fk.Enabled(10) || !fk.Enabled(5) {
			t.Fatal("kinds not enabled while collecting")
		}
		mustStop(t, c)
		if fk.Enabled(10) != tc.kernelOn || fk.Enabled(5) || fk.Enabled(1) {
			t.Errorf("version %s after Stop: CONCURRENT_KERNEL on = %v (want %v), RUNTIME %v, MEMCPY %v",
				tc.version, fk.Enabled(10), tc.kernelOn, fk.Enabled(5), fk.Enabled(1))
		}
	}
}

// TestExternalCorrelation: an id pushed on a thread comes back on an
// external-correlation record carrying the correlation id of the kernel
// that thread launched, and of the API record with that thread's TID.
func TestExternalCorrelation(t *testing.T) {
	lib := useFake(t, "12", 0)
	fk, err := fakecuda.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	var log sinkLog
	c, err := Start(Options{Library: lib, FlushPeriod: -1}, log.sink)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	runtime.LockOSThread()
	tid := uint32(syscall.Gettid())
	if err := c.PushExternalCorrelation(42); err != nil {
		t.Fatal(err)
	}
	corr := fk.Launch("_Z11my_kernelv", 1, 5)
	id, err := c.PopExternalCorrelation()
	if err != nil || id != 42 {
		t.Fatalf("Pop = %d, %v", id, err)
	}
	_, err = c.PopExternalCorrelation()
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != 18 || ce.Name != "CUPTI_ERROR_QUEUE_EMPTY" {
		t.Errorf("Pop on an empty stack: %v", err)
	}
	uncorrelated := fk.Launch("_Z11my_kernelv", 0, 7) // nothing pushed any more
	runtime.UnlockOSThread()

	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	var kernel, api, ext, other int
	for _, r := range log.snapshot() {
		switch {
		case r.Kind == KindKernel && r.Name == "_Z11my_kernelv" && r.CorrelationID == corr:
			kernel++
			if r.DeviceID != 1 || r.StreamID != 5 || r.ContextID != 2 {
				t.Errorf("kernel %+v", r)
			}
		case r.Kind == KindRuntime && r.CorrelationID == corr:
			api++
			if r.ThreadID != tid || r.Name != "cudaLaunchKernel" {
				t.Errorf("API record %+v, want thread %d", r, tid)
			}
		case r.Kind == KindExternalCorrelation && r.CorrelationID == corr:
			ext++
			if r.ExternalID != 42 || r.ExternalKind != 3 {
				t.Errorf("external record %+v, want CUSTOM0 id 42", r)
			}
		case r.CorrelationID == uncorrelated:
			other++
			if r.Kind == KindExternalCorrelation {
				t.Errorf("external record %+v for a launch with nothing pushed", r)
			}
		}
	}
	if kernel != 1 || api != 1 || ext != 1 || other != 2 {
		t.Errorf("kernel %d, API %d, external %d, other %d records; want 1, 1, 1, 2", kernel, api, ext, other)
	}
}

func TestTimestampIsRealtime(t *testing.T) {
	lib := useFake(t, "11.8", 0)
	c, err := Start(Options{Library: lib, FlushPeriod: -1}, func([]Record) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	before := uint64(time.Now().UnixNano())
	ts, err := c.Timestamp()
	after := uint64(time.Now().UnixNano())
	if err != nil || ts < before || ts > after {
		t.Errorf("Timestamp = %d, %v; want within [%d, %d]", ts, err, before, after)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{BufferSize: 1024},
		{BufferSize: MaxBufferSize + 1},
		{MaxBuffers: -1},
		{MaxBuffers: MaxMaxBuffers + 1},
		{MaxRecords: -5},
	} {
		if _, err := Start(o, func([]Record) {}); err == nil || errors.Is(err, ErrLibraryNotFound) {
			t.Errorf("Start(%+v) = %v, want a validation error", o, err)
		}
	}
	if _, err := Start(Options{}, nil); err == nil {
		t.Error("Start with a nil sink succeeded")
	}
	o, err := Options{BufferSize: MinBufferSize + 3, FlushPeriod: time.Microsecond}.withDefaults()
	if err != nil || o.BufferSize%8 != 0 || o.MaxBuffers != DefaultMaxBuffers || o.FlushPeriod != time.Millisecond {
		t.Errorf("withDefaults = %+v, %v", o, err)
	}
}
