package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/analysispage"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/internal/runstore"
)

// hostTraces returns the newest run's traces, one per host, when path is
// a run or log directory (or a bucket URL of one); nil for a file. Run
// names are their start times (TensorBoard orders them so), so the
// newest run is the one whose name sorts last.
func hostTraces(path string) (run string, hosts []exportInput, err error) {
	if !runstore.IsURL(path) {
		st, err := os.Stat(path)
		if err != nil || !st.IsDir() {
			return "", nil, nil // a file: the readers explain a missing one
		}
	}
	inputs, err := exportInputs(path)
	if err != nil {
		if runstore.IsURL(path) {
			return "", nil, nil // as one trace: inputFile explains
		}
		return "", nil, err
	}
	for _, in := range inputs {
		if in.run > run {
			run = in.run
		}
	}
	for _, in := range inputs {
		if in.run == run {
			hosts = append(hosts, in)
		}
	}
	return run, hosts, nil
}

// hostAnalysis is one host's trace and what its analysis found.
type hostAnalysis struct {
	Host     string           `json:"host"`
	File     string           `json:"file"`
	Format   string           `json:"format"`
	Warnings []string         `json:"warnings"`
	Report   *analysis.Report `json:"report"`

	display string
	meta    event.Meta
}

// analyzeHosts analyzes each host's trace of a run in turn, compares
// their steps, and prints the comparison with one host's full report:
// the one -host names, else the slowest. With two cores, a host's
// analysis is finished (Analyzer.Finish: its sorts and the read-back of
// what it spilled, a good part of its time) while the next host's trace
// is read: two analyses are held at a time, each within its memory
// budget, instead of one.
func analyzeHosts(stdout, stderr io.Writer, run string, inputs []exportInput, opt analysis.Options, lim readLimits, straggler float64, pick string, asJSON bool, htmlPath string) error {
	var hs []hostAnalysis
	var reports []analysis.HostReport
	// done takes a host whose Finish was started, waits for it, and adds
	// its report.
	done := func(h *hostFinish) error {
		<-h.done
		if h.err != nil {
			return fmt.Errorf("%s: %w", runstore.Display(h.in.loc), h.err)
		}
		name := h.in.session
		if h.meta.Host != "" {
			name = h.meta.Host
		}
		var offset int64
		if h.meta.Start.Wall != 0 {
			offset = h.meta.Start.Wall - h.meta.Start.Mono
		}
		hs = append(hs, hostAnalysis{Host: name, File: h.in.loc, Format: h.f.Name, display: h.f.Display, Warnings: warningLines(&h.meta), Report: h.r, meta: h.meta})
		reports = append(reports, analysis.HostReport{Host: name, Report: h.r, WallOffsetNS: offset})
		return nil
	}
	var finishing *hostFinish
	for _, in := range inputs {
		a, f, err := readAnalysis(in.loc, stderr, lim, opt)
		if finishing != nil {
			// The previous host comes first, as it would have without
			// the overlap: its error wins over this host's.
			ferr := done(finishing)
			finishing = nil
			if ferr != nil {
				if err == nil {
					a.Reset() // lets go of its temporary file
				}
				return ferr
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", runstore.Display(in.loc), err)
		}
		h := &hostFinish{in: in, f: f, meta: *a.Meta(), done: make(chan struct{})}
		if analyzeOnTwoCores() {
			h.start(a, true)
			finishing = h
			continue
		}
		h.start(a, false)
		if err := done(h); err != nil {
			return err
		}
	}
	if finishing != nil {
		if err := done(finishing); err != nil {
			return err
		}
	}
	cmp := analysis.CompareHosts(reports, straggler)
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Host < hs[j].Host })
	chosen := -1
	if pick != "" {
		for i := range hs {
			if hs[i].Host == pick {
				chosen = i
			}
		}
		if chosen < 0 {
			var names []string
			for _, h := range hs {
				names = append(names, h.Host)
			}
			return fmt.Errorf("-host %s: run %s has no such host (it has %s)", pick, run, strings.Join(names, ", "))
		}
	}
	if chosen < 0 {
		chosen = slowestHost(cmp, hs)
	}
	if htmlPath != "" {
		h := hs[chosen]
		p := &analysispage.Page{Title: "devprof analyze: run " + run, Hosts: cmp,
			Trace: analysispage.Trace{Name: h.Host, Format: h.display, Warnings: h.Warnings, Report: h.Report}}
		if err := writeAnalysisPage(htmlPath, p); err != nil {
			return err
		}
		defer fmt.Fprintf(stderr, "devprof analyze: wrote %s\n", htmlPath)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Run     string          `json:"run"`
			Hosts   *analysis.Hosts `json:"hosts"`
			Reports []hostAnalysis  `json:"reports"`
		}{run, cmp, hs})
	}
	var b strings.Builder
	writeHosts(&b, run, cmp)
	why := "the slowest"
	if pick != "" {
		why = "-host"
	}
	fmt.Fprintf(&b, "\nHost %s (%s; -host NAME for another):\n", hs[chosen].Host, why)
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	h := hs[chosen]
	return writeAnalyze(stdout, runstore.Display(h.File), &formats.Format{Display: h.display}, &h.meta, h.Report)
}

// hostFinish is one host's analysis being finished.
type hostFinish struct {
	in   exportInput
	f    *formats.Format
	meta event.Meta
	done chan struct{} // closed once r and err are set
	r    *analysis.Report
	err  error
}

// start finishes a's analysis, on a goroutine of its own when
// overlapped.
func (h *hostFinish) start(a *analysis.Analyzer, overlapped bool) {
	finish := func() {
		defer close(h.done)
		h.r, h.err = a.Finish()
	}
	if overlapped {
		go finish()
		return
	}
	finish()
}

// slowestHost is the index in hs of the host with the slowest median
// step (the first host when none has steps).
func slowestHost(cmp *analysis.Hosts, hs []hostAnalysis) int {
	best, worst := "", int64(-1)
	for _, h := range cmp.Hosts {
		if h.Steps > 0 && h.Wall.P50 > worst {
			best, worst = h.Host, h.Wall.P50
		}
	}
	for i, h := range hs {
		if h.Host == best {
			return i
		}
	}
	return 0
}

// writeHosts prints the across-hosts section: each host's steps side by
// side, the stragglers, and the skew of the step starts.
func writeHosts(b *strings.Builder, run string, cmp *analysis.Hosts) {
	fmt.Fprintf(b, "Run %s: %d hosts", run, len(cmp.Hosts))
	if cmp.MedianStepNS > 0 {
		fmt.Fprintf(b, ", median host's step %s", fmtDur(cmp.MedianStepNS))
	}
	switch {
	case cmp.MedianStepNS == 0:
		fmt.Fprintln(b, "; no host marks steps (annotate.Step, TSL's step markers, PyTorch's ProfilerStep#N)")
	case len(cmp.Stragglers) == 0:
		fmt.Fprintf(b, "; no straggler (none more than %.0f%% slower)\n", 100*cmp.Threshold)
	default:
		var slow []string
		for _, name := range cmp.Stragglers {
			for _, h := range cmp.Hosts {
				if h.Host == name {
					slow = append(slow, fmt.Sprintf("%s (%+.1f%%)", name, 100*h.Excess))
				}
			}
		}
		fmt.Fprintf(b, "; stragglers (more than %.0f%% slower): %s\n", 100*cmp.Threshold, strings.Join(slow, ", "))
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "host\tsteps\tp50\tp90\tmax\tvs median\tslowest step\tlate (p50)\t\n")
	for _, h := range cmp.Hosts {
		if h.Steps == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\t-\t-\t\n", h.Host)
			continue
		}
		mark := fmt.Sprintf("%+.1f%%", 100*h.Excess)
		if h.Straggler {
			mark += " *"
		}
		slowest, late := "-", "-"
		if h.Slowest != nil {
			slowest = fmt.Sprintf("%d (%s)", h.Slowest.Number, fmtDur(h.Slowest.WallNS))
		}
		if h.LateNS >= 0 {
			late = fmtDur(h.LateNS)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", h.Host, h.Steps, fmtDur(h.Wall.P50), fmtDur(h.Wall.P90), fmtDur(h.Wall.Max), mark, slowest, late)
	}
	tw.Flush()
	if sk := cmp.Skew; sk != nil {
		fmt.Fprintf(b, "step starts across hosts (wall clock, %s in common): spread p50 %s, p90 %s, max %s (step %d: %s first, %s last)\n",
			plural(int64(sk.Steps), "step"), fmtDur(sk.Spread.P50), fmtDur(sk.Spread.P90), fmtDur(sk.Spread.Max), sk.Worst, sk.WorstFirst, sk.WorstLast)
	} else if cmp.MedianStepNS > 0 {
		fmt.Fprintln(b, "step starts across hosts: not compared (fewer than two hosts with a wall clock and step numbers in common)")
	}
}
