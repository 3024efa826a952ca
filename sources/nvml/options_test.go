package nvml

import (
	"strings"
	"testing"
	"time"
)

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Period: time.Millisecond}, "GPUMetrics.Period (advanced key gpu_metrics_period_ms) 1ms out of range"},
		{Options{Period: time.Hour}, "out of range"},
		{Options{Mode: 7}, "GPUMetrics.Mode 7"},
	} {
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if err := (Options{Period: 50 * time.Millisecond, Mode: ModeOn}).Validate(); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		m        Mode
		tracer   bool
		wantRuns bool
	}{{ModeAuto, true, true}, {ModeAuto, false, false}, {ModeOn, false, true}, {ModeOff, true, false}} {
		if got := (Options{Mode: c.m}).Runs(c.tracer); got != c.wantRuns {
			t.Errorf("%v with device tracer %v: runs %v", c.m, c.tracer, got)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Error("ParseMode accepted sometimes")
	}
}

// TestParseModeAnyCase: the gpu_metrics key's values are read in any
// case, as go_runtime's are (one Mode, one parse).
func TestParseModeAnyCase(t *testing.T) {
	for in, want := range map[string]Mode{"auto": ModeAuto, "On": ModeOn, "OFF": ModeOff} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil || err.Error() != `GPUMetrics.Mode (advanced key gpu_metrics) "sometimes": want auto, on or off` {
		t.Errorf("ParseMode(sometimes): %v", err)
	}
}
