package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/analysispage"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/internal/spanstats"
)

func runAnalyze(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("analyze", stderr)
	top := fs.Int("top", 10, "list the first `N` slowest steps, kernels, idle gaps and launchers")
	asJSON := fs.Bool("json", false, "print the report as one JSON object for scripts (durations in nanoseconds)")
	warmup := fs.Int("warmup", 0, "count the first `N` steps as warm-up, shown apart (0: decide from the step times; -1: none)")
	tiny := fs.Duration("tiny_kernel", 10*time.Microsecond, "a kernel shorter than `D` is tiny (its launch costs about what it runs)")
	kernelWait := fs.Duration("kernel_wait", 30*time.Microsecond, "an idle gap shorter than `D` whose work was already launched is the device's own delay between back-to-back work (HTA's consecutive_kernel_delay)")
	htmlPath := fs.String("html", "", "also write the report as a page that opens offline at `OUT` (.html): step-time chart, each GPU's time by category, the largest idle gaps, hosts side by side")
	host := fs.String("host", "", "with several hosts in the run, print the full report of host `NAME` (default: the slowest)")
	straggler := fs.Float64("straggler", 100*analysis.DefaultStraggler, "with several hosts in the run, a host whose median step exceeds the median host's by more than `PCT` percent is a straggler")
	maxEvents := maxEventsFlag(fs)
	maxGoroutines := maxGoroutinesFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *straggler <= 0:
		fmt.Fprintf(stderr, "devprof analyze: -straggler %v: want a percentage above 0 (10)\n", *straggler)
		return errUsage
	case *top < 1:
		fmt.Fprintf(stderr, "devprof analyze: -top %d: want 1 or more\n", *top)
		return errUsage
	case *warmup < -1:
		fmt.Fprintf(stderr, "devprof analyze: -warmup %d: want -1 (none), 0 (decide) or a number of steps\n", *warmup)
		return errUsage
	case *tiny <= 0:
		fmt.Fprintf(stderr, "devprof analyze: -tiny_kernel %v: want a duration above 0 (10us)\n", *tiny)
		return errUsage
	case *kernelWait <= 0:
		fmt.Fprintf(stderr, "devprof analyze: -kernel_wait %v: want a duration above 0 (30us)\n", *kernelWait)
		return errUsage
	}
	if err := checkMaxEvents("analyze", *maxEvents, stderr); err != nil {
		return err
	}
	if err := checkMaxGoroutines("analyze", *maxGoroutines, stderr); err != nil {
		return err
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	if *htmlPath != "" && !strings.EqualFold(filepath.Ext(*htmlPath), ".html") && !strings.EqualFold(filepath.Ext(*htmlPath), ".htm") {
		fmt.Fprintf(stderr, "devprof analyze: -html %s: want a file ending in .html\n", *htmlPath)
		return errUsage
	}
	opt := analysis.Options{Top: *top, TinyKernel: *tiny, KernelWait: *kernelWait, Warmup: *warmup}
	lim := readLimits{maxEvents: *maxEvents, maxGoroutines: *maxGoroutines}
	run, hosts, err := hostTraces(path)
	if err != nil {
		return err
	}
	if len(hosts) > 1 {
		return analyzeHosts(stdout, stderr, run, hosts, opt, lim, *straggler/100, *host, *asJSON, *htmlPath)
	}
	if *host != "" {
		fmt.Fprintf(stderr, "devprof analyze: -host %s: %s holds one host's trace\n", *host, path)
		return errUsage
	}
	if path, err = inputFile("analyze", path, stderr); err != nil {
		return err
	}
	a, f, err := readAnalysis(path, stderr, lim, opt)
	if err != nil {
		return err
	}
	meta := *a.Meta()
	r, err := a.Finish()
	if err != nil {
		return err
	}
	if *htmlPath != "" {
		p := &analysispage.Page{Title: "devprof analyze: " + filepath.Base(path),
			Trace: analysispage.Trace{Name: path, Format: f.Display, Warnings: warningLines(&meta), Report: r}}
		if err := writeAnalysisPage(*htmlPath, p); err != nil {
			return err
		}
		defer fmt.Fprintf(stderr, "devprof analyze: wrote %s\n", *htmlPath)
	}
	if *asJSON {
		return writeAnalyzeJSON(stdout, path, f, &meta, r)
	}
	return writeAnalyze(stdout, path, f, &meta, r)
}

// writeAnalysisPage writes p to path, whole or not at all.
func writeAnalysisPage(path string, p *analysispage.Page) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := analysispage.Write(f, p); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// analyzeOnTwoCores reports whether readAnalysis runs the Analyzer on a
// goroutine of its own, apart from the reader's: when there is a second
// core for it to run on.
var analyzeOnTwoCores = func() bool { return runtime.GOMAXPROCS(0) > 1 }

// readAnalysis streams the trace at path (a file or a URL) into an
// analysis.Analyzer, showing progress on a terminal; the Analyzer runs
// behind a sinkpipe.Pipe when there are two cores to share.
func readAnalysis(path string, stderr io.Writer, lim readLimits, opt analysis.Options) (*analysis.Analyzer, *formats.Format, error) {
	if runstore.IsURL(path) {
		var f *formats.Format
		a, err := readRemote(path, func(local string) (a *analysis.Analyzer, err error) {
			a, f, err = readAnalysis(local, stderr, lim, opt)
			return a, err
		})
		return a, f, err
	}
	f, err := formats.Detect(path)
	if err != nil {
		return nil, nil, err
	}
	a := analysis.NewAnalyzer(event.Meta{}, opt)
	o := formats.ReadOptions{MaxEvents: lim.maxEvents}
	start := time.Now()
	if isTerminal(stderr) {
		m := &progressMeter{w: stderr, label: "devprof analyze: reading " + path, every: 200 * time.Millisecond}
		defer m.clear()
		o.Progress = m.update
	}
	// The reader and the analysis each take about half the time of
	// reading and analyzing: overlapped, analyze runs at about the
	// reader's rate.
	err = readInto(f, path, a, analyzeOnTwoCores(), lim, o)
	if err != nil {
		a.Reset() // lets go of its temporary file
		return nil, nil, err
	}
	if isTerminal(stderr) {
		took := time.Since(start)
		fmt.Fprintf(stderr, "\r\033[Kdevprof analyze: read %s (%s) in %v, %s/s\n", plural(a.Events(), "event"), f.Display,
			took.Round(time.Millisecond), si(float64(a.Events())/max(took.Seconds(), 1e-9)))
	}
	return a, f, nil
}

// jsonAnalysis is what analyze -json prints: the report, with the file
// it is of and the trace's own warnings.
type jsonAnalysis struct {
	File     string   `json:"file"`
	Format   string   `json:"format"`
	Warnings []string `json:"warnings"`
	*analysis.Report
}

func writeAnalyzeJSON(w io.Writer, path string, f *formats.Format, meta *event.Meta, r *analysis.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonAnalysis{File: path, Format: f.Name, Warnings: warningLines(meta), Report: r})
}

// warningLines are the trace's drops and warnings, as summary shows them.
func warningLines(meta *event.Meta) []string {
	lines := dropLines(meta)
	for _, w := range meta.Warnings {
		lines = append(lines, w.Text)
	}
	if lines == nil {
		lines = []string{}
	}
	return lines
}

// fmtDur writes nanoseconds with three significant digits.
func fmtDur(ns int64) string { return spanstats.FormatDuration(time.Duration(ns)) }

// share writes part of whole as a percentage.
func share(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

// writeAnalyze prints the report for a terminal: steps, the temporal
// breakdown per device and stream, idle time by cause with the largest
// gaps, kernels and launches.
func writeAnalyze(w io.Writer, path string, f *formats.Format, meta *event.Meta, r *analysis.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s over %s\n", path, f.Display, plural(r.Events, "event"), fmtDur(r.WallNS))
	for _, line := range warningLines(meta) {
		fmt.Fprintf(&b, "warning: %s\n", line)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	writeSteps(&b, r.Steps, len(r.Devices) > 0)
	writeDevices(&b, r)
	writeIdle(&b, r)
	writeKernels(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSteps prints the step section; a trace without device work has
// no device rows to show.
func writeSteps(b *strings.Builder, st *analysis.Steps, devices bool) {
	fmt.Fprintln(b)
	if st == nil {
		fmt.Fprintln(b, "Steps: none marked (annotate.Step, TSL's step markers, PyTorch's ProfilerStep#N)")
		return
	}
	fmt.Fprintf(b, "Steps (%s): %d", st.Source, len(st.All))
	if st.Warmup > 0 {
		var first []string
		for _, s := range st.All[:st.Warmup] {
			first = append(first, fmt.Sprintf("step %d %s", s.Number, fmtDur(s.WallNS)))
		}
		fmt.Fprintf(b, "; warm-up apart: %s", strings.Join(first, ", "))
	}
	if st.Warmup > 0 {
		fmt.Fprintf(b, "; over the other %d:\n", st.Wall.Count)
	} else {
		fmt.Fprintln(b, ":")
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tmean\tp50\tp90\tp99\tmax\t\n")
	rows := []struct {
		name string
		d    analysis.Distribution
	}{{"wall", st.Wall}, {"host busy", st.HostBusy}, {"device busy", st.DeviceBusy}, {"device idle", st.DeviceIdle}}
	if !devices {
		rows = rows[:2]
	}
	for _, row := range rows {
		d := row.d
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", row.name, fmtDur(d.Mean), fmtDur(d.P50), fmtDur(d.P90), fmtDur(d.P99), fmtDur(d.Max))
	}
	tw.Flush()
	if len(st.Slowest) > 0 {
		var slow []string
		for _, s := range st.Slowest {
			if devices {
				slow = append(slow, fmt.Sprintf("%d (%s, device idle %s)", s.Number, fmtDur(s.WallNS), share(s.DeviceIdleNS, s.WallNS)))
			} else {
				slow = append(slow, fmt.Sprintf("%d (%s)", s.Number, fmtDur(s.WallNS)))
			}
		}
		fmt.Fprintf(b, "slowest steps: %s\n", strings.Join(slow, ", "))
	}
}

func writeDevices(b *strings.Builder, r *analysis.Report) {
	fmt.Fprintln(b)
	if len(r.Devices) == 0 {
		fmt.Fprintln(b, "Devices: no device work in the trace")
		return
	}
	fmt.Fprintln(b, "GPU time, first work to last (on the union of intervals; communication under compute counts as compute):")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\twall\tcompute\t\tcommunication\t\tmemory\t\tidle\t\tcomm hidden\t\n")
	row := func(name string, x analysis.Breakdown) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, fmtDur(x.WallNS),
			fmtDur(x.ComputeNS), share(x.ComputeNS, x.WallNS), fmtDur(x.CommunicationNS), share(x.CommunicationNS, x.WallNS),
			fmtDur(x.MemoryNS), share(x.MemoryNS, x.WallNS), fmtDur(x.IdleNS), share(x.IdleNS, x.WallNS), fmtDur(x.OverlapNS))
	}
	for _, d := range r.Devices {
		name := fmt.Sprintf("device %d", d.Ordinal)
		if d.Name != "" {
			name += " (" + d.Name + ")"
		}
		row(name, d.Breakdown)
		if len(d.Streams) < 2 {
			continue
		}
		for _, s := range d.Streams {
			row("  "+strings.TrimSpace(s.Name), s.Breakdown)
		}
	}
	tw.Flush()
}

func writeIdle(b *strings.Builder, r *analysis.Report) {
	if len(r.Devices) == 0 {
		return
	}
	i := r.Idle
	all := i.HostWaitNS + i.KernelWaitNS + i.SyncNS + i.OtherNS
	fmt.Fprintln(b)
	fmt.Fprintf(b, "Idle time by cause, over every stream (%s in %s): host wait %s (%s), kernel wait %s (%s), sync %s (%s), other %s (%s)\n",
		fmtDur(all), plural(int64(i.Gaps), "gap"), fmtDur(i.HostWaitNS), share(i.HostWaitNS, all), fmtDur(i.KernelWaitNS), share(i.KernelWaitNS, all),
		fmtDur(i.SyncNS), share(i.SyncNS, all), fmtDur(i.OtherNS), share(i.OtherNS, all))
	if len(i.Largest) == 0 {
		return
	}
	fmt.Fprintln(b, "largest gaps:")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  gap\tcause\tat\tstep\tstream\tended by\tlaunched by\thost in\n")
	for _, g := range i.Largest {
		step := "-"
		if g.Step >= 0 {
			step = fmt.Sprint(g.Step)
		}
		fmt.Fprintf(tw, "  %s\t%s\t+%s\t%s\t%d: %s\t%s\t%s\t%s\n", fmtDur(g.DurNS), g.Cause, fmtDur(g.StartNS), step, g.Device,
			strings.TrimSpace(g.Stream), truncName(g.Next, 40), orDash(g.Launch), orDash(truncName(g.HostSpan, 40)))
	}
	tw.Flush()
}

func writeKernels(b *strings.Builder, r *analysis.Report) {
	k := r.Kernels
	if k.Count == 0 {
		return
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "Kernels: %s, %s in all; the top by total time:\n", plural(k.Count, "kernel"), fmtDur(k.TotalNS))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "kernel\tkind\tcount\ttotal\tshare\tmean\tp50\tp99\toccupancy\t\n")
	for _, x := range k.Top {
		occ := "-"
		if x.Occupancy >= 0 {
			occ = fmt.Sprintf("%.1f%%", x.Occupancy)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", truncName(x.Name, 60), x.Category, x.Count, fmtDur(x.TotalNS), share(x.TotalNS, k.TotalNS),
			fmtDur(x.MeanNS), fmtDur(x.P50NS), fmtDur(x.P99NS), occ)
	}
	tw.Flush()
	l := k.Launch
	fmt.Fprintf(b, "Launches: %d of %d kernels under %s (%s of kernel time)", l.Tiny, k.Count, fmtDur(l.TinyNS), share(l.TinyTotalNS, k.TotalNS))
	if l.Linked > 0 {
		d := l.Latency
		fmt.Fprintf(b, "; launch call to kernel start over %d linked: p50 %s, p90 %s, p99 %s, max %s", l.Linked, fmtDur(d.P50), fmtDur(d.P90), fmtDur(d.P99), fmtDur(d.Max))
	}
	fmt.Fprintln(b)
	if len(l.TinyLaunchers) > 0 {
		var who []string
		for _, x := range l.TinyLaunchers {
			who = append(who, fmt.Sprintf("%s %d (%s)", truncName(x.Name, 40), x.Kernels, fmtDur(x.TotalNS)))
		}
		fmt.Fprintf(b, "tiny kernels launched most inside: %s\n", strings.Join(who, ", "))
	}
}
