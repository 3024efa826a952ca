package profileserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/devprof/devprof/profileserver/profilerpb"
	"github.com/devprof/devprof/trace"
)

// Monitor answers with a text report on the process: the session running
// now (a remote capture or a local session) or none, the host and Go
// runtime facts, and each NVIDIA device's memory as NVML reports it now.
// monitoring_level 2 (verbose) adds the advanced configuration keys a
// capture accepts. It records nothing.
func (v *service) Monitor(_ context.Context, req *profilerpb.MonitorRequest) (*profilerpb.MonitorResponse, error) {
	var b strings.Builder
	now := time.Now()
	if req.GetTimestamp() {
		fmt.Fprintf(&b, "time: %s\n", now.Format(time.RFC3339Nano))
	}
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "process: %s (pid %d) on %s, listening on %s\n", filepath.Base(os.Args[0]), os.Getpid(), host, v.s.Addr())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(&b, "go: %s, GOMAXPROCS %d, %d CPUs, %d goroutines, heap %s in use\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.NumGoroutine(), bytesText(ms.HeapInuse))

	v.s.mu.Lock()
	active := v.s.active
	var id string
	var start time.Time
	var length string
	if active != nil {
		id, start, length = active.sessionID, active.start, active.length()
	}
	v.s.mu.Unlock()
	switch st, ok := trace.Running(); {
	case ok && st.Capture:
		fmt.Fprintf(&b, "session: a remote capture (session %q) running since %s (%v of %s), host tracer level %d, device tracer level %d\n",
			id, st.Start.Format(time.TimeOnly), now.Sub(start).Round(time.Millisecond), length, st.HostTracerLevel, st.DeviceTracerLevel)
	case ok:
		fmt.Fprintf(&b, "session: a local session writing to %s running since %s (%v); remote captures wait for it to stop\n",
			st.Logdir, st.Start.Format(time.TimeOnly), now.Sub(st.Start).Round(time.Millisecond))
	case active != nil:
		fmt.Fprintf(&b, "session: a remote capture (session %q) is about to start\n", id)
	default:
		b.WriteString("session: none running; a Profile request starts one\n")
	}

	usage, err := trace.DeviceUsage()
	switch {
	case err != nil:
		fmt.Fprintf(&b, "devices: no NVIDIA device memory figures (%v)\n", firstLine(err.Error()))
	case len(usage) == 0:
		b.WriteString("devices: NVML sees no NVIDIA device\n")
	}
	for _, u := range usage {
		fmt.Fprintf(&b, "device %d: %s of %s used", u.Device, bytesText(u.Used), bytesText(u.Total))
		if u.Process > 0 {
			fmt.Fprintf(&b, ", %s by this process", bytesText(u.Process))
		}
		b.WriteString("\n")
	}
	if req.GetMonitoringLevel() >= 2 {
		b.WriteString("advanced configuration keys a capture accepts:\n")
		for _, k := range trace.ConfigKeys() {
			fmt.Fprintf(&b, "  %s (%s): %s\n", k.Name, k.Kind, k.Doc)
		}
	}
	return &profilerpb.MonitorResponse{Data: b.String()}, nil
}

// bytesText shows a byte count in binary units.
func bytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
