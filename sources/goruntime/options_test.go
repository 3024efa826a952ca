package goruntime

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, ""},
		{Options{Mode: ModeOn, MaxBytes: 1 << 20, MaxGoroutines: 10}, ""},
		{Options{Mode: 7}, "GoRuntime.Mode 7"},
		{Options{MaxBytes: 1000}, "go_runtime_max_bytes"},
		{Options{MaxGoroutines: -1}, "go_runtime_max_goroutines"},
	} {
		err := c.o.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	for _, m := range []Mode{ModeAuto, ModeOn, ModeOff} {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil || !strings.Contains(err.Error(), "go_runtime") {
		t.Errorf("ParseMode(sometimes): %v", err)
	}
	if (Options{}).Runs(2) || !(Options{}).Runs(3) || !(Options{Mode: ModeOn}).Runs(1) || (Options{Mode: ModeOff}).Runs(3) {
		t.Error("Runs: want auto at level 3 only, on always, off never")
	}
}

// TestParseModeAnyCase: the go_runtime key's values are read in any case,
// as gpu_metrics' are (one Mode, one parse).
func TestParseModeAnyCase(t *testing.T) {
	for in, want := range map[string]Mode{"Auto": ModeAuto, "ON": ModeOn, "off": ModeOff} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
