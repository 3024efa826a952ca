package memplot

import (
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/devprof/devprof/internal/metatext"
	"github.com/devprof/devprof/membreakdown"
)

// Sizes of a breakdown image: BreakdownWidth × BreakdownHeight for up to
// six bars, BarWidth wider for each bar beyond.
const (
	BreakdownWidth  = 10 * vg.Inch
	BreakdownHeight = 6 * vg.Inch
	BarWidth        = 1 * vg.Inch
)

// WriteBreakdown draws r (see EncodeBreakdown) into path, an SVG or a PNG
// by its extension. The file appears whole or not at all.
func WriteBreakdown(path string, r *membreakdown.Report) error {
	return writeFile(path, func(w io.Writer, f Format) error { return EncodeBreakdown(w, f, r) })
}

// segment is one category's part of a bar.
type segment struct {
	name  string
	bytes float64
}

// bar is one stack: a device's or all devices'.
type bar struct {
	label string
	segs  []segment // bottom to top
	total float64   // bytes
	note  string    // said above the bar (a negative Untrackable)
}

// barsOf builds the stacks: one bar per device, and one for all devices
// when there are several or when Untrackable is known only for all of
// them (an expected sum); nil for the latter when there is none.
func barsOf(r *membreakdown.Report) (devices []bar, all *bar) {
	mk := func(label string, dev int, bytesOf func(*membreakdown.Category) uint64) bar {
		b := bar{label: label}
		for i := range r.Categories {
			if v := bytesOf(&r.Categories[i]); v > 0 {
				b.segs = append(b.segs, segment{r.Categories[i].Name, float64(v)})
				b.total += float64(v)
			}
		}
		if u := r.UntrackableOn(dev); u != nil {
			switch {
			case u.Bytes > 0:
				b.segs = append(b.segs, segment{membreakdown.UntrackableName, float64(u.Bytes)})
				b.total += float64(u.Bytes)
			case u.Bytes < 0:
				b.note = "untrackable −" + metatext.Bytes(uint64(-u.Bytes))
			}
		}
		return b
	}
	for _, d := range r.Devices {
		devices = append(devices, mk("gpu:"+strconv.Itoa(d), d, func(c *membreakdown.Category) uint64 { return c.DeviceBytes(d) }))
	}
	// Another backend's devices (JAX's "cpu:0") after the GPUs; no NVML
	// figure tells their Untrackable.
	const noFigure = math.MinInt
	for _, name := range r.NamedDevices {
		devices = append(devices, mk(name, noFigure, func(c *membreakdown.Category) uint64 { return c.NamedDeviceBytes(name) }))
	}
	onlyTotal := r.UntrackableTotal != nil && len(r.Untrackable) == 0 // an expected sum
	if len(devices) > 1 || onlyTotal {
		label := "all GPUs"
		if len(r.NamedDevices) > 0 {
			label = "all devices"
		}
		b := mk(label, membreakdown.AllDevices, func(c *membreakdown.Category) uint64 { return c.Bytes })
		all = &b
	}
	return devices, all
}

// barsPlotter draws the stacks at x = 0, 1, … (a nominal axis).
type barsPlotter struct {
	bars  []bar
	looks map[string]look
	unit  unit
}

// Bars fill barSlot of their slot, and at most maxBar.
const (
	barSlot = 0.6
	maxBar  = 1.2 * vg.Inch
)

// Plot draws the bars, each with its total (and note) above it.
func (bp *barsPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := textStyle(10)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YBottom
	for i, b := range bp.bars {
		mid := trX(float64(i))
		half := min(trX(float64(i)+barSlot/2)-mid, maxBar/2)
		y := 0.0
		for _, s := range b.segs {
			y0 := trY(y / bp.unit.bytes)
			y += s.bytes
			r := vg.Rectangle{Min: vg.Point{X: mid - half, Y: y0}, Max: vg.Point{X: mid + half, Y: trY(y / bp.unit.bytes)}}
			fillRect(c, r, bp.looks[s.name])
		}
		label := metatext.Bytes(uint64(b.total))
		if b.note != "" {
			label += "\n(" + b.note + ")"
		}
		c.FillText(sty, vg.Point{X: mid, Y: trY(y/bp.unit.bytes) + vg.Points(4)}, label)
	}
}

// DataRange is the bars' extent, with room above the tallest for its
// label.
func (bp *barsPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	top := 0.0
	for _, b := range bp.bars {
		top = math.Max(top, b.total)
	}
	return -0.5, float64(len(bp.bars)) - 0.5, 0, top / bp.unit.bytes * 1.15
}

// barPlot returns a plot of bars, its value axis in the unit their
// tallest stack calls for.
func barPlot(bars []bar, lk map[string]look) *plot.Plot {
	top := 0.0
	for _, b := range bars {
		top = math.Max(top, b.total)
	}
	u := unitFor(top)
	p := newPlot()
	p.Y.Label.Text = "Device memory (" + u.name + ")"
	p.Add(grid())
	labels := make([]string, len(bars))
	for i, b := range bars {
		labels[i] = b.label
	}
	p.NominalX(labels...)
	p.Add(&barsPlotter{bars: bars, looks: lk, unit: u})
	p.Y.Min = 0
	return p
}

// EncodeBreakdown draws r as stacked bars and writes the image in format
// f. The left panel has a bar per device (the GPUs, then the devices of
// another backend by name, Report.NamedDevices): its categories' bytes
// there, its Untrackable on top. When there are several devices, or when
// Untrackable is known only for all of them (an expected sum), a right
// panel with an axis of its own (so that eight devices' total does not
// flatten each device's bar) has the bar of all devices. Each bar has its
// total above it; a negative Untrackable is not drawn, and the bar says
// it under its total. The title says when the profile was taken;
// footnotes say how much the bars count more than once when buffers
// matched several categories, and that Untrackable is unknown when no
// figure was known. The image is BreakdownWidth ×
// BreakdownHeight (960 × 576 pixels in PNG), BarWidth wider a bar beyond
// six. A report with nothing to draw (no device memory, no Untrackable)
// is an error.
func EncodeBreakdown(w io.Writer, f Format, r *membreakdown.Report) error {
	devBars, allBar := barsOf(r)
	all := devBars
	if allBar != nil {
		all = append(all[:len(all):len(all)], *allBar)
	}
	top := 0.0
	for _, b := range all {
		top = math.Max(top, b.total)
	}
	if top == 0 {
		return errors.New("memplot: nothing to plot: the profile holds no device memory")
	}

	// Names in stacking order, bottom first: the report's categories,
	// then Untrackable; the legend lists them top first.
	drawn := map[string]bool{}
	for _, b := range all {
		for _, s := range b.segs {
			drawn[s.name] = true
		}
	}
	var stack []string
	for _, c := range r.Categories {
		if drawn[c.Name] {
			stack = append(stack, c.Name)
		}
	}
	if drawn[membreakdown.UntrackableName] {
		stack = append(stack, membreakdown.UntrackableName)
	}
	lk := looks(stack, true)
	legendNames := make([]string, len(stack))
	for i, n := range stack {
		legendNames[len(stack)-1-i] = n
	}

	var panels []*plot.Plot
	if len(devBars) > 0 {
		panels = append(panels, barPlot(devBars, lk))
	}
	if allBar != nil {
		panels = append(panels, barPlot([]bar{*allBar}, lk))
	}
	title := "Device memory by category at " + when(r)
	var notes []string
	if extra := doubleCounted(r); extra > 0 {
		notes = append(notes, "The bars count "+metatext.Bytes(extra)+" more than once: buffers that matched several categories are in each.")
	}
	if r.UntrackableTotal == nil && len(r.Untrackable) == 0 {
		notes = append(notes, "Untrackable is unknown: the profile carries no NVML figures (an expected sum gives one).")
	}
	footer := strings.Join(notes, "\n")
	width := BreakdownWidth + BarWidth*vg.Length(max(len(all)-6, 0))
	return render(w, f, width, BreakdownHeight, func(c draw.Canvas) {
		leg := legendOf(legendNames, lk, map[string]string{membreakdown.UntrackableName: untrackableNote(r)})
		lw := legendWidth(leg, c)
		area := draw.Crop(c, 0, -lw, 0, -topMargin)
		sty := textStyle(14)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: (area.Min.X + area.Max.X) / 2, Y: area.Max.Y}, title)
		head := sty.Height(title) + vg.Points(8)
		area = draw.Crop(area, 0, 0, 0, -head)
		if footer != "" {
			fs := textStyle(10)
			fs.XAlign, fs.YAlign = draw.XLeft, draw.YBottom
			c.FillText(fs, vg.Point{X: area.Min.X + margin, Y: area.Min.Y + vg.Points(4)}, footer)
			area = draw.Crop(area, 0, 0, fs.Height(footer)+vg.Points(10), 0)
		}
		if len(panels) == 2 && len(devBars) > 0 {
			// The total's panel is one device bar's slot plus its own
			// value axis wide.
			const axis = 0.7 * vg.Inch
			wide := area.Max.X - area.Min.X
			slot := (wide - 2*axis) / vg.Length(len(devBars)+1)
			right := min(max(slot+axis, 1.8*vg.Inch), wide/2)
			panels[0].Draw(draw.Crop(area, 0, -right, 0, 0))
			panels[1].Draw(draw.Crop(area, wide-right+vg.Points(12), 0, 0, 0))
		} else {
			panels[0].Draw(area)
		}
		drawLegend(c, leg, lw, topMargin+head)
	})
}

// untrackableNote says in the legend what Untrackable was computed from.
func untrackableNote(r *membreakdown.Report) string {
	u := r.UntrackableTotal
	if u == nil && len(r.Untrackable) > 0 {
		u = &r.Untrackable[0]
	}
	if u == nil {
		return ""
	}
	switch u.From {
	case membreakdown.FromExpectedSum:
		return " (expected sum − tracked)"
	case membreakdown.FromNVMLProcess:
		return " (NVML, this process − tracked)"
	case membreakdown.FromNVMLUsed:
		return " (NVML, all processes − tracked)"
	}
	return " (NVML − tracked)"
}

// when is the report's time for a title.
func when(r *membreakdown.Report) string {
	if r.Time.IsZero() {
		return "an unknown time"
	}
	return r.Time.Format("2006-01-02 15:04:05 MST")
}

// doubleCounted is the bytes the bars count more than once: each
// multi-matched buffer once per category beyond the first.
func doubleCounted(r *membreakdown.Report) uint64 {
	var n uint64
	for _, m := range r.MultiMatches {
		n += m.Bytes * uint64(len(m.Categories)-1)
	}
	return n
}

// titleHeight is the height a plot's title takes above its data area.
func titleHeight(p *plot.Plot) vg.Length {
	if p.Title.Text == "" {
		return 0
	}
	return p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding
}
