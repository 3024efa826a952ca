package analysispage_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"os"

	"github.com/devprof/devprof/analysis"
	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/analysispage"
	"github.com/devprof/devprof/exporters/perfetto"
)

// report analyzes the real H100 session trace.
func report(t *testing.T) *analysis.Report {
	t.Helper()
	f, err := os.Open("../../testdata/real-gpu/devprof-h100-libwork.pftrace")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := analysis.NewAnalyzer(event.Meta{}, analysis.Options{})
	if err := perfetto.Decode(f, a); err != nil {
		t.Fatal(err)
	}
	return a.Report()
}

// TestPageIsSelfContained: the page of a real trace has its four
// charts inline, fetches nothing (no script, stylesheet, image or font
// from elsewhere: fonts are data URLs), and shows the report's figures.
func TestPageIsSelfContained(t *testing.T) {
	r := report(t)
	hosts := analysis.CompareHosts([]analysis.HostReport{{Host: "a", Report: r}, {Host: "b", Report: r}}, 0)
	var b bytes.Buffer
	if err := analysispage.Write(&b, &analysispage.Page{Title: "t", Hosts: hosts, Trace: analysispage.Trace{Name: "a", Format: "Perfetto", Report: r}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<svg"); n != 4 {
		t.Errorf("%d charts, want 4 (hosts, steps, devices, gaps)", n)
	}
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %s", bad)
		}
	}
	// Every URL is a namespace or a data URL: nothing to fetch.
	for _, m := range regexp.MustCompile(`(?:src|href)\s*[:=]\s*["(]?\s*(?:url\()?["']?([a-z]+:)`).FindAllStringSubmatch(page, -1) {
		if m[1] != "data:" {
			t.Errorf("the page refers to %q", m[0])
		}
	}
	if n := strings.Count(page, "@font-face"); n < 1 || n > 4 {
		t.Errorf("%d @font-face rules: want the charts' fonts embedded once each", n)
	}
	for _, want := range []string{
		"20 steps (step markers), the first 1 apart as warm-up.",
		"<td>418µs</td><td>410µs</td><td>457µs</td>", // wall mean, p50, p90
		"host wait 4.74ms (93.1%)",
		"_Z5saxpyifPKfPf",
		"2 hosts; the median host's step takes 410µs.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestPageEscapes: names from a trace are text, never markup.
func TestPageEscapes(t *testing.T) {
	r := &analysis.Report{WallNS: 10, Kernels: analysis.Kernels{Count: 1, TotalNS: 5,
		Top: []analysis.Kernel{{Name: `<script>alert(1)</script>`, Category: "compute", Count: 1, TotalNS: 5, Occupancy: -1}}}}
	var b bytes.Buffer
	if err := analysispage.Write(&b, &analysispage.Page{Title: `<b>x</b>`, Trace: analysispage.Trace{Name: `"><img src=x>`, Report: r}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script>alert", "<b>x</b>", `"><img`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q unescaped", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(page, "No device work in the trace.") {
		t.Errorf("page:\n%s", page)
	}
}

// TestManySteps: a run of 100,000 steps draws the first maxBars and
// says so, so the page stays small.
func TestManySteps(t *testing.T) {
	st := &analysis.Steps{Source: "step markers"}
	for i := range 100000 {
		st.All = append(st.All, analysis.Step{Number: int64(i), StartNS: int64(i) * 100, WallNS: 90})
	}
	var b bytes.Buffer
	if err := analysispage.Write(&b, &analysispage.Page{Title: "t", Trace: analysispage.Trace{Name: "x", Report: &analysis.Report{Steps: st}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "The chart shows the first 2000 of 100000 steps.") || b.Len() > 4<<20 {
		t.Errorf("page of %d bytes, note missing or too large", b.Len())
	}
}

func TestNoReport(t *testing.T) {
	if err := analysispage.Write(&bytes.Buffer{}, &analysispage.Page{}); err == nil {
		t.Error("a page without a report: no error")
	}
}
