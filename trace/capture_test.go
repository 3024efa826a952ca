package trace_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/trace"
)

// spanNames lists the names of a snapshot's spans.
func spanNames(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	snap, err := xplane.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the capture's XSpace does not read back: %v", err)
	}
	names := map[string]bool{}
	for i := range snap.Events {
		names[snap.Name(snap.Events[i])] = true
	}
	return names
}

func TestCaptureReturnsXSpaceAndWritesNoFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	done := make(chan *trace.Captured)
	go func() {
		c, err := trace.Capture(context.Background(), 300*time.Millisecond, trace.Options{DeviceTracerLevel: trace.Off, Hostname: "capturehost"})
		if err != nil {
			t.Error(err)
		}
		done <- c
	}()
	// Annotate until the capture is seen running, then once more inside it.
	for {
		if st, ok := trace.Running(); ok {
			if !st.Capture || st.Logdir != "" || st.Host != "capturehost" {
				t.Errorf("Running() = %+v, want a capture without logdir on capturehost", st)
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
	_, sp := annotate.Begin(context.Background(), "inside-capture")
	sp.End()
	c := <-done
	if c == nil {
		t.FailNow()
	}
	if c.Early || c.Host != "capturehost" {
		t.Errorf("Early %v Host %q, want false, capturehost", c.Early, c.Host)
	}
	if !spanNames(t, c.XSpace)["inside-capture"] {
		t.Errorf("the XSpace lacks the span recorded during the capture")
	}
	if _, ok := trace.Running(); ok {
		t.Errorf("a session still runs after Capture returned")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Capture wrote %d files into the working directory", len(ents))
	}
}

func TestCaptureEndsWhenContextIsDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := trace.Capture(ctx, time.Hour, trace.Options{DeviceTracerLevel: trace.Off})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Early || time.Since(start) > 10*time.Second {
		t.Errorf("Early %v after %v, want an early end near 50ms", c.Early, time.Since(start))
	}
}

func TestCaptureValidatesOptionsAndRefusesWhileASessionRuns(t *testing.T) {
	_, err := trace.Capture(context.Background(), time.Millisecond, trace.Options{AdvancedConfig: map[string]any{"no_such_key": 1}})
	if err == nil || !strings.Contains(err.Error(), `"no_such_key"`) {
		t.Errorf("unknown advanced key: err %v, want one naming it", err)
	}
	s := mustStart(t, t.TempDir(), trace.Options{DeviceTracerLevel: trace.Off})
	defer s.Stop()
	_, err = trace.Capture(context.Background(), time.Millisecond, trace.Options{})
	if !errors.Is(err, trace.ErrAlreadyStarted) {
		t.Errorf("capture during a local session: err %v, want ErrAlreadyStarted", err)
	}
}

func TestCaptureDisabled(t *testing.T) {
	t.Setenv("DEVPROF_DISABLE", "1")
	if _, err := trace.Capture(context.Background(), time.Millisecond, trace.Options{}); !errors.Is(err, trace.ErrDisabled) {
		t.Errorf("err %v, want ErrDisabled", err)
	}
}
