package memplot

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A Timeline is one device's memory over time, by category: at each of
// Times, each series holds Bytes until the next time (a step function, as
// memory changes only at allocations and frees).
type Timeline struct {
	// Device is the CUDA ordinal, which titles the panel "gpu:N", or -1
	// for host memory (pinned and pageable), whose panel is "host".
	Device int
	// Times are in nanoseconds from the start of the trace, in order
	// (equal times are allowed: the last value wins).
	Times []int64
	// Series are stacked in order, the first at the bottom. Each has one
	// value per time.
	Series []Series
}

// A Series is one category's bytes at each time of its Timeline.
type Series struct {
	Name  string
	Bytes []uint64
}

// Sizes of a timeline image: TimelineWidth wide, TimelineHeaderHeight
// plus PanelHeight for each device high.
const (
	TimelineWidth        = 10 * vg.Inch
	TimelineHeaderHeight = 0.5 * vg.Inch
	PanelHeight          = 3 * vg.Inch
)

// HostDevice is the Device of host memory's timeline, as event's memory
// tracks have it.
const HostDevice = -1

// panelName names a timeline's device: "gpu:N", or "host".
func panelName(dev int) string {
	if dev < 0 {
		return "host"
	}
	return "gpu:" + strconv.Itoa(dev)
}

// Validate reports the first thing that makes tl impossible to draw:
// no time points, times out of order, a series without a name, a name
// twice, or a series whose values do not match the times.
func (tl *Timeline) Validate() error {
	if len(tl.Times) == 0 {
		return fmt.Errorf("%s: no time points", panelName(tl.Device))
	}
	for i := 1; i < len(tl.Times); i++ {
		if tl.Times[i] < tl.Times[i-1] {
			return fmt.Errorf("%s: time %d (%d ns) is before time %d (%d ns): want times in order", panelName(tl.Device), i, tl.Times[i], i-1, tl.Times[i-1])
		}
	}
	if len(tl.Series) == 0 {
		return fmt.Errorf("%s: no series", panelName(tl.Device))
	}
	seen := map[string]bool{}
	for _, s := range tl.Series {
		switch {
		case s.Name == "":
			return fmt.Errorf("%s: a series without a name", panelName(tl.Device))
		case seen[s.Name]:
			return fmt.Errorf("%s: series %q twice", panelName(tl.Device), s.Name)
		case len(s.Bytes) != len(tl.Times):
			return fmt.Errorf("%s: series %q has %d values for %d time points", panelName(tl.Device), s.Name, len(s.Bytes), len(tl.Times))
		}
		seen[s.Name] = true
	}
	return nil
}

// WriteTimeline draws timelines (see EncodeTimeline) into path, an SVG or
// a PNG by its extension. The file appears whole or not at all.
func WriteTimeline(path, title string, timelines []Timeline) error {
	return writeFile(path, func(w io.Writer, f Format) error { return EncodeTimeline(w, f, title, timelines) })
}

// EncodeTimeline draws each device's memory over time as stacked step
// areas, one panel per timeline in the order given, and writes the
// image in format f. The panels share their time axis (seconds from the
// trace's start), and the GPUs' panels their value axis's unit and range,
// so that devices compare at a glance; host memory's panel (HostDevice:
// pinned and pageable memory, titled "host") has a value axis of its
// own, since its few MiB of staging buffers beside GPUs' GiB would be a
// flat line, and host and device memory are not one budget. Each series
// keeps its last value to the end of the axis. Categories take their colours in order of first appearance
// (Others grey, Untrackable light with a dashed edge), listed in one legend at the right, top
// of the stack first. title heads the image (none when empty). The image
// is TimelineWidth wide (960 pixels in PNG) and TimelineHeaderHeight +
// PanelHeight × len(timelines) high. Timelines that do not Validate, two
// of one device, or none, are an error.
func EncodeTimeline(w io.Writer, f Format, title string, timelines []Timeline) error {
	if len(timelines) == 0 {
		return errors.New("memplot: no timelines to plot")
	}
	devs := map[int]bool{}
	tmin, tmax := math.Inf(1), math.Inf(-1)
	top := map[bool]float64{} // the largest total, of the GPUs and of the host
	var names []string
	for i := range timelines {
		tl := &timelines[i]
		if err := tl.Validate(); err != nil {
			return fmt.Errorf("memplot: %w", err)
		}
		dev := max(tl.Device, HostDevice)
		if devs[dev] {
			return fmt.Errorf("memplot: two timelines of %s", panelName(dev))
		}
		devs[dev] = true
		tmin = math.Min(tmin, seconds(tl.Times[0]))
		tmax = math.Max(tmax, seconds(tl.Times[len(tl.Times)-1]))
		for k := range tl.Times {
			sum := 0.0
			for _, s := range tl.Series {
				sum += float64(s.Bytes[k])
			}
			top[tl.Device < 0] = math.Max(top[tl.Device < 0], sum)
		}
		for _, s := range tl.Series {
			names = append(names, s.Name)
		}
	}
	if tmax <= tmin {
		tmax = tmin + 1e-3 // one moment: a sliver, not an empty axis
	}
	units := map[bool]unit{false: unitFor(top[false]), true: unitFor(top[true])}
	lk := looks(names, false)
	var legendNames []string // top of the stack first: the last series seen first
	seen := map[string]bool{}
	for i := len(names) - 1; i >= 0; i-- {
		if !seen[names[i]] {
			seen[names[i]] = true
			legendNames = append(legendNames, names[i])
		}
	}

	plots := make([][]*plot.Plot, len(timelines))
	for i := range timelines {
		tl := &timelines[i]
		host := tl.Device < 0
		u := units[host]
		p := newPlot()
		p.Title.Text = panelName(tl.Device)
		p.Title.TextStyle.Font.Size = 12
		p.Title.Padding = vg.Points(4)
		p.X.Label.Text = "time (s)"
		p.Y.Label.Text = map[bool]string{false: "Device memory", true: "Host memory"}[host] + " (" + u.name + ")"
		p.X.Tick.Marker = plot.TickerFunc(niceTicks)
		p.Add(grid())
		p.Add(&stepAreas{tl: tl, looks: lk, unit: u, end: tmax})
		p.X.Min, p.X.Max = tmin, tmax
		p.Y.Min, p.Y.Max = 0, math.Max(top[host]/u.bytes*1.05, 1e-9)
		plots[i] = []*plot.Plot{p}
	}
	height := TimelineHeaderHeight + PanelHeight*vg.Length(len(timelines))
	return render(w, f, TimelineWidth, height, func(c draw.Canvas) {
		leg := legendOf(legendNames, lk, nil)
		lw := legendWidth(leg, c)
		header := TimelineHeaderHeight
		if title != "" {
			sty := textStyle(14)
			sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
			c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X - lw) / 2, Y: c.Max.Y - header/2}, title)
		}
		area := draw.Crop(c, 0, -lw, 0, -header)
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Points(8), PadY: vg.Points(12), PadTop: vg.Points(2), PadBottom: vg.Points(4), PadLeft: vg.Points(4)}
		canvases := plot.Align(plots, tiles, area)
		for i := range plots {
			plots[i][0].Draw(canvases[i][0])
		}
		drawLegend(c, leg, lw, header+titleHeight(plots[0][0]))
	})
}

// seconds converts nanoseconds to seconds.
func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// stepAreas draws a timeline's series as stacked step areas.
type stepAreas struct {
	tl    *Timeline
	looks map[string]look
	unit  unit
	end   float64 // seconds: where the last values end
}

// Plot fills each series between the sum of those below it and that sum
// plus its own, then draws its top edge.
func (sa *stepAreas) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	tl := sa.tl
	n := len(tl.Times)
	lower := make([]float64, n)
	upper := make([]float64, n)
	// xs are the step's corners: each time, and the end.
	xs := make([]vg.Length, n+1)
	for k, t := range tl.Times {
		xs[k] = trX(seconds(t))
	}
	xs[n] = trX(sa.end)
	steps := func(vals []float64) []vg.Point {
		pts := make([]vg.Point, 0, 2*n)
		for k := range n {
			y := trY(vals[k] / sa.unit.bytes)
			pts = append(pts, vg.Point{X: xs[k], Y: y}, vg.Point{X: xs[k+1], Y: y})
		}
		return pts
	}
	for _, s := range tl.Series {
		for k := range n {
			upper[k] = lower[k] + float64(s.Bytes[k])
		}
		top := steps(upper)
		poly := append([]vg.Point{}, top...)
		bottom := steps(lower)
		for k := len(bottom) - 1; k >= 0; k-- {
			poly = append(poly, bottom[k])
		}
		l := sa.looks[s.Name]
		c.FillPolygon(l.fill, c.ClipPolygonXY(poly))
		c.StrokeLines(edgeStyle(l), c.ClipLinesXY(top)...)
		copy(lower, upper)
	}
}

// DataRange is the timeline's extent.
func (sa *stepAreas) DataRange() (xmin, xmax, ymin, ymax float64) {
	top := 0.0
	for k := range sa.tl.Times {
		sum := 0.0
		for _, s := range sa.tl.Series {
			sum += float64(s.Bytes[k])
		}
		top = math.Max(top, sum)
	}
	return seconds(sa.tl.Times[0]), sa.end, 0, top / sa.unit.bytes
}
