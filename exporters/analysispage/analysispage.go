// Package analysispage writes what package analysis found as one HTML
// page that opens offline: the step-time chart, each device's time by
// category, the largest idle gaps and, for a run of several hosts, their
// step times side by side are drawn as inline SVG (gonum/plot), beside
// tables of the figures. Nothing is fetched from a network: no script, no
// font, no stylesheet outside the file.
//
// In devprof's flow it is an exporter after the analysis: it reads an
// analysis.Report (and analysis.Hosts), never a trace, and `devprof
// analyze -html OUT` calls it.
package analysispage

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/devprof/devprof/analysis"
)

// Trace is one trace's analysis as the page shows it.
type Trace struct {
	// Name is the trace's file (or host), Format its format's display
	// name.
	Name, Format string
	// Warnings are the trace's own warnings and drops, one line each.
	Warnings []string
	Report   *analysis.Report
}

// Page is what a page shows: a title, the across-hosts comparison when
// there are several hosts, and one trace's full analysis.
type Page struct {
	Title string
	Hosts *analysis.Hosts // nil for one trace
	Trace Trace
}

// Colours of the categories and causes, the same in every chart.
var (
	computeColor = color.RGBA{0x2e, 0x7d, 0x32, 0xff}
	commColor    = color.RGBA{0x6a, 0x1b, 0x9a, 0xff}
	memoryColor  = color.RGBA{0x15, 0x65, 0xc0, 0xff}
	idleColor    = color.RGBA{0xbd, 0xbd, 0xbd, 0xff}
	hostColor    = color.RGBA{0xef, 0x6c, 0x00, 0xff}
	warmupColor  = color.RGBA{0x90, 0xa4, 0xae, 0xff}
	slowColor    = color.RGBA{0xc6, 0x28, 0x28, 0xff}
	causeColors  = map[string]color.RGBA{
		analysis.CauseHostWait:   hostColor,
		analysis.CauseKernelWait: color.RGBA{0xf9, 0xa8, 0x25, 0xff},
		analysis.CauseSync:       commColor,
		analysis.CauseOther:      idleColor,
	}
)

// maxBars bounds the bars of one chart: past it the step chart shows the
// first maxBars steps and says so (a chart of 100,000 bars is unreadable
// and makes a page of megabytes).
const maxBars = 2000

// Write writes p as one HTML page to w.
func Write(w io.Writer, p *Page) error {
	if p == nil || p.Trace.Report == nil {
		return fmt.Errorf("analysispage: no report to write")
	}
	r := p.Trace.Report
	v := view{Page: p, R: r}
	var err error
	if p.Hosts != nil && len(p.Hosts.Hosts) > 0 {
		if v.HostsSVG, err = hostsChart(p.Hosts, &v.Fonts); err != nil {
			return err
		}
	}
	if r.Steps != nil && len(r.Steps.All) > 0 {
		if v.StepsSVG, v.StepsNote, err = stepsChart(r.Steps, len(r.Devices) > 0, &v.Fonts); err != nil {
			return err
		}
	}
	if len(r.Devices) > 0 {
		if v.DevicesSVG, err = devicesChart(r.Devices, &v.Fonts); err != nil {
			return err
		}
	}
	if len(r.Idle.Largest) > 0 {
		if v.GapsSVG, err = gapsChart(r.Idle.Largest, &v.Fonts); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := page.Execute(&b, &v); err != nil {
		return fmt.Errorf("analysispage: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// view is what the template reads.
type view struct {
	*Page
	R                                       *analysis.Report
	HostsSVG, StepsSVG, DevicesSVG, GapsSVG template.HTML
	StepsNote                               string
	Fonts                                   fontFaces
}

// svgOf renders p at w × h as inline SVG, without the XML prolog an
// SVG file has. The fonts gonum measured its text with are embedded (a
// browser's own fonts are wider or narrower, and labels would run into
// the bars); each distinct @font-face goes into fonts once, for the
// page's stylesheet, instead of into every chart.
func svgOf(p *plot.Plot, w, h vg.Length, fonts *fontFaces) (template.HTML, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("analysispage: %w", err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	s = fonts.take(s)
	// The SVG is gonum's own output from numbers and names it was given
	// as text (vgsvg escapes text), so it is safe to place as markup.
	return template.HTML(s), nil // #nosec G203 -- vgsvg's output, text escaped
}

// fontFaces collects the @font-face rules of the charts, each once.
type fontFaces struct {
	rules []string
	seen  map[string]bool
}

// take removes the @font-face rules from svg's stylesheet, keeping the
// ones not seen before.
func (f *fontFaces) take(svg string) string {
	const open = "@font-face{"
	for {
		i := strings.Index(svg, open)
		if i < 0 {
			return svg
		}
		j := strings.Index(svg[i:], "}")
		if j < 0 {
			return svg
		}
		rule := svg[i : i+j+1]
		if f.seen == nil {
			f.seen = map[string]bool{}
		}
		if !f.seen[rule] {
			f.seen[rule] = true
			f.rules = append(f.rules, rule)
		}
		svg = svg[:i] + svg[i+j+1:]
	}
}

// CSS returns the rules for the page's stylesheet.
func (f *fontFaces) CSS() template.CSS {
	return template.CSS(strings.Join(f.rules, "\n")) // #nosec G203 -- gonum's own @font-face rules
}

func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	return p
}

// ms converts nanoseconds to milliseconds, the charts' unit.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

// barChart makes one series of bars, width w each.
func barChart(vals plotter.Values, w vg.Length, c color.RGBA) (*plotter.BarChart, error) {
	bc, err := plotter.NewBarChart(vals, w)
	if err != nil {
		return nil, fmt.Errorf("analysispage: %w", err)
	}
	bc.Color = c
	bc.LineStyle.Width = 0
	return bc, nil
}

// stepsChart draws each step's wall time: device busy and idle stacked
// when the trace has device work, host time otherwise; warm-up steps in
// grey.
func stepsChart(st *analysis.Steps, devices bool, fonts *fontFaces) (template.HTML, string, error) {
	all := st.All
	note := ""
	if len(all) > maxBars {
		note = fmt.Sprintf("The chart shows the first %d of %d steps.", maxBars, len(all))
		all = all[:maxBars]
	}
	n := len(all)
	barW := vg.Length(max(1, min(24, 900/n))) * vg.Millimeter / 4
	busy, idle, warm := make(plotter.Values, n), make(plotter.Values, n), make(plotter.Values, n)
	labels := make([]string, n)
	every := max(1, n/20) // about 20 labels on the axis
	for i, s := range all {
		if i < st.Warmup {
			warm[i] = ms(s.WallNS)
		} else if devices {
			busy[i] = ms(s.DeviceBusyNS)
			idle[i] = ms(s.WallNS - s.DeviceBusyNS)
		} else {
			busy[i] = ms(s.WallNS)
		}
		if i%every == 0 {
			labels[i] = fmt.Sprint(s.Number)
		}
	}
	p := newPlot("Step time", "step", "ms")
	b1, err := barChart(busy, barW, computeColor)
	if err != nil {
		return "", "", err
	}
	p.Add(b1)
	if devices {
		b2, err := barChart(idle, barW, idleColor)
		if err != nil {
			return "", "", err
		}
		b2.StackOn(b1)
		p.Add(b2)
		p.Legend.Add("device busy", b1)
		p.Legend.Add("device idle", b2)
	} else {
		p.Legend.Add("step", b1)
	}
	if st.Warmup > 0 {
		b3, err := barChart(warm, barW, warmupColor)
		if err != nil {
			return "", "", err
		}
		p.Add(b3)
		p.Legend.Add("warm-up", b3)
	}
	p.NominalX(labels...)
	svg, err := svgOf(p, 24*vg.Centimeter, 9*vg.Centimeter, fonts)
	return svg, note, err
}

// devicesChart draws each device's (and, with several, each stream's, fonts)
// time as stacked horizontal bars in percent of its wall time.
func devicesChart(devs []analysis.Device, fonts *fontFaces) (template.HTML, error) {
	var rows []analysis.Breakdown
	var names []string
	for _, d := range devs {
		name := fmt.Sprintf("device %d", d.Ordinal)
		rows, names = append(rows, d.Breakdown), append(names, name)
		if len(d.Streams) > 1 {
			for _, s := range d.Streams {
				rows, names = append(rows, s.Breakdown), append(names, "  "+strings.TrimSpace(s.Name))
			}
		}
	}
	if len(rows) > maxBars {
		rows, names = rows[:maxBars], names[:maxBars]
	}
	// The first row at the top: a horizontal chart draws index 0 lowest.
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
		names[i], names[j] = names[j], names[i]
	}
	series := []struct {
		name string
		c    color.RGBA
		of   func(analysis.Breakdown) int64
	}{
		{"compute", computeColor, func(b analysis.Breakdown) int64 { return b.ComputeNS }},
		{"communication", commColor, func(b analysis.Breakdown) int64 { return b.CommunicationNS }},
		{"memory", memoryColor, func(b analysis.Breakdown) int64 { return b.MemoryNS }},
		{"idle", idleColor, func(b analysis.Breakdown) int64 { return b.IdleNS }},
	}
	p := newPlot("GPU time by category (share of first work to last)", "%", "")
	var below *plotter.BarChart
	for _, s := range series {
		vals := make(plotter.Values, len(rows))
		for i, r := range rows {
			if r.WallNS > 0 {
				vals[i] = 100 * float64(s.of(r)) / float64(r.WallNS)
			}
		}
		bc, err := barChart(vals, 5*vg.Millimeter, s.c)
		if err != nil {
			return "", err
		}
		bc.Horizontal = true
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
	}
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, 100
	h := vg.Length(3+len(rows)) * 7 * vg.Millimeter
	return svgOf(p, 24*vg.Centimeter, max(h, 6*vg.Centimeter), fonts)
}

// gapsChart draws the largest idle gaps, longest at the top, coloured by
// cause.
func gapsChart(gaps []analysis.Gap, fonts *fontFaces) (template.HTML, error) {
	n := len(gaps)
	names := make([]string, n)
	byCause := map[string]plotter.Values{}
	order := []string{analysis.CauseHostWait, analysis.CauseKernelWait, analysis.CauseSync, analysis.CauseOther}
	for _, c := range order {
		byCause[c] = make(plotter.Values, n)
	}
	for i, g := range gaps {
		j := n - 1 - i // longest (first) at the top
		names[j] = "at +" + dur(g.StartNS)
		if g.Step >= 0 {
			names[j] = fmt.Sprintf("step %d, +%s", g.Step, dur(g.StartNS))
		}
		vals, ok := byCause[g.Cause]
		if !ok {
			vals = byCause[analysis.CauseOther]
		}
		vals[j] = ms(g.DurNS)
	}
	p := newPlot("Largest idle gaps", "ms", "")
	for _, c := range order {
		has := false
		for _, v := range byCause[c] {
			has = has || v > 0
		}
		if !has {
			continue
		}
		bc, err := barChart(byCause[c], 5*vg.Millimeter, causeColors[c])
		if err != nil {
			return "", err
		}
		bc.Horizontal = true
		p.Add(bc)
	}
	p.NominalY(names...)
	p.X.Min = 0
	h := vg.Length(3+n) * 7 * vg.Millimeter
	return svgOf(p, 24*vg.Centimeter, max(h, 6*vg.Centimeter), fonts)
}

// hostsChart draws each host's median step, stragglers in red.
func hostsChart(hs *analysis.Hosts, fonts *fontFaces) (template.HTML, error) {
	rows := hs.Hosts
	if len(rows) > maxBars {
		rows = rows[:maxBars]
	}
	n := len(rows)
	ok, slow := make(plotter.Values, n), make(plotter.Values, n)
	names := make([]string, n)
	for i, h := range rows {
		j := n - 1 - i
		names[j] = h.Host
		if h.Straggler {
			slow[j] = ms(h.Wall.P50)
		} else {
			ok[j] = ms(h.Wall.P50)
		}
	}
	p := newPlot("Median step time per host", "ms", "")
	p.Legend.Top = false // the first hosts are at the top
	b1, err := barChart(ok, 5*vg.Millimeter, computeColor)
	if err != nil {
		return "", err
	}
	b1.Horizontal = true
	p.Add(b1)
	p.Legend.Add("host", b1)
	if len(hs.Stragglers) > 0 {
		b2, err := barChart(slow, 5*vg.Millimeter, slowColor)
		if err != nil {
			return "", err
		}
		b2.Horizontal = true
		p.Add(b2)
		p.Legend.Add("straggler", b2)
	}
	p.NominalY(names...)
	p.X.Min = 0
	h := vg.Length(3+n) * 7 * vg.Millimeter
	return svgOf(p, 24*vg.Centimeter, max(h, 6*vg.Centimeter), fonts)
}
