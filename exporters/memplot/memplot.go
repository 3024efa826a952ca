package memplot

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/membreakdown"
)

// A Format is an image format memplot writes.
type Format string

// The formats, named by their file extensions.
const (
	SVG Format = "svg"
	PNG Format = "png"
)

// DPI is the resolution of PNG images: an image W inches wide is W×DPI
// pixels wide.
const DPI = 96

// FormatOf returns the format a file's extension names (.svg or .png, in
// any case), or an error naming the file for any other.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return SVG, nil
	case ".png":
		return PNG, nil
	}
	return "", fmt.Errorf("%s: cannot tell the image format: name a .svg or a .png file", path)
}

// newCanvas returns a canvas of the format, w×h.
func newCanvas(f Format, w, h vg.Length) (vg.CanvasWriterTo, error) {
	switch f {
	case SVG:
		return vgsvg.New(w, h), nil
	case PNG:
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))}, nil
	}
	return nil, fmt.Errorf("memplot: unknown format %q: want %q or %q", f, SVG, PNG)
}

// render draws with draw on a w×h canvas of format f and writes it to w.
func render(out io.Writer, f Format, w, h vg.Length, drawFn func(draw.Canvas)) error {
	c, err := newCanvas(f, w, h)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	dc.SetColor(color.White) // the legend's side too: SVG is transparent where nothing is drawn
	dc.Fill(dc.Rectangle.Path())
	drawFn(dc)
	if f != SVG {
		_, err = c.WriteTo(out)
		return err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	// The text was laid out with Liberation Sans's metrics; a viewer
	// without it should use a font of the same metrics (Arial, Helvetica:
	// Liberation Sans was made to match them) rather than its default,
	// which would overflow the legend.
	_, err = out.Write(bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFonts)))
	return err
}

// svgFonts is the font family of SVG text.
const svgFonts = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// writeFile writes an image to path atomically, in the format its
// extension names.
func writeFile(path string, encode func(io.Writer, Format) error) error {
	f, err := FormatOf(path)
	if err != nil {
		return err
	}
	// Draw before creating the file, so that a refusal leaves nothing.
	var buf bytes.Buffer
	if err := encode(&buf, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer out.Abort()
	if _, err := out.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.Commit()
}

// Units of the value axis.
type unit struct {
	name  string
	bytes float64
}

var units = []unit{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// unitFor returns the largest unit of which max bytes make at least one.
func unitFor(max float64) unit {
	for _, u := range units {
		if max >= u.bytes {
			return u
		}
	}
	return units[len(units)-1]
}

// niceTicks marks about six round values (1, 2, 2.5 or 5 times a power
// of ten apart) between min and max, with minor ticks between them.
func niceTicks(min, max float64) []plot.Tick {
	span := max - min
	if !(span > 0) || math.IsInf(span, 0) {
		return []plot.Tick{{Value: min, Label: formatTick(min)}}
	}
	raw := span / 6
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow * 10
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	// Labels keep the step's decimals, no more: 3×0.05 is 0.15000000000000002
	// in float64.
	dec := int(-math.Floor(math.Log10(step))) + 1
	if dec < 0 {
		dec = 0
	}
	var ticks []plot.Tick
	for i := math.Ceil(min / step); i*step <= max+step*1e-9; i++ {
		v := i * step
		ticks = append(ticks, plot.Tick{Value: v, Label: formatTick(roundTo(v, dec))})
		if half := v + step/2; half <= max {
			ticks = append(ticks, plot.Tick{Value: half})
		}
	}
	return ticks
}

// roundTo rounds v to dec decimals.
func roundTo(v float64, dec int) float64 {
	p := math.Pow(10, float64(dec))
	return math.Round(v*p) / p
}

// formatTick writes a tick's value without trailing zeros.
func formatTick(v float64) string {
	if math.Abs(v) < 1e-12 {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// grid draws horizontal lines at the value axis's major ticks.
func grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = nil
	g.Horizontal.Color = rgb(0xdddddd)
	g.Horizontal.Width = vg.Points(0.5)
	return g
}

// sans is the typeface of every text.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
}

// newPlot returns a plot with every text in sans.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(sans, 14)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 12)
		a.Tick.Label.Font = font.From(sans, 11)
	}
	p.Y.Tick.Marker = plot.TickerFunc(niceTicks)
	return p
}

// palette colours categories in order; Others and Untrackable have their
// own. Tableau's ten less its grey, then lighter tones of the same.
var palette = []color.RGBA{
	rgb(0x4e79a7), rgb(0xf28e2b), rgb(0xe15759), rgb(0x76b7b2), rgb(0x59a14f),
	rgb(0xedc948), rgb(0xb07aa1), rgb(0xff9da7), rgb(0x9c755f),
	rgb(0xa0cbe8), rgb(0xffbe7d), rgb(0xff9d9a), rgb(0x86bcb6), rgb(0x8cd17d),
	rgb(0xf1ce63), rgb(0xd4a6c8), rgb(0xfabfd2), rgb(0xd7b5a6),
}

var (
	othersColor      = rgb(0x9d9d9d)
	untrackableColor = rgb(0xf2f2f2)
	hatchColor       = rgb(0x6e6e6e)
	edgeColor        = rgb(0x3c3c3c)
)

func rgb(v uint32) color.RGBA {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// look is how one category is filled.
type look struct {
	fill   color.Color
	hatch  bool // diagonal lines over the fill
	dashed bool // a dashed outline
}

// looks assigns each name its look: reserved names theirs; the default
// dictionary's categories the first colours of the palette, in its order,
// and any other name one of the rest picked by the name itself — so a
// category has the same colour in every plot, whatever else is drawn
// beside it. Untrackable is hatched in bars; areas, which cannot be
// hatched cheaply, give it a dashed edge instead (hatch false).
func looks(names []string, hatch bool) map[string]look {
	out := map[string]look{}
	for _, n := range names {
		switch n {
		case membreakdown.Others:
			out[n] = look{fill: othersColor}
		case membreakdown.UntrackableName:
			out[n] = look{fill: untrackableColor, hatch: hatch, dashed: !hatch}
		default:
			out[n] = look{fill: colorOf(n)}
		}
	}
	return out
}

// colorOf is a category's palette colour (see looks).
func colorOf(name string) color.RGBA {
	fixed := membreakdown.DefaultDictionary()
	for i, r := range fixed {
		if r.Category == name && i < len(palette) {
			return palette[i]
		}
	}
	rest := palette[min(len(fixed), len(palette)-1):]
	h := fnv.New32a()
	h.Write([]byte(name))
	return rest[h.Sum32()%uint32(len(rest))]
}

// fillRect fills a rectangle with a look and outlines it.
func fillRect(c draw.Canvas, r vg.Rectangle, l look) {
	c.SetColor(l.fill)
	c.Fill(r.Path())
	if l.hatch {
		hatch(c, r)
	}
	c.SetLineStyle(edgeStyle(l))
	c.Stroke(r.Path())
}

// edgeStyle is the line around (or on top of) a look's fill.
func edgeStyle(l look) draw.LineStyle {
	sty := draw.LineStyle{Color: edgeColor, Width: vg.Points(0.6)}
	if l.dashed {
		sty.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
	}
	return sty
}

// hatch draws 45° lines across a rectangle, clipped to it.
func hatch(c draw.Canvas, r vg.Rectangle) {
	const step = 5 // points between lines, along x
	w, h := float64(r.Max.X-r.Min.X), float64(r.Max.Y-r.Min.Y)
	if w <= 0 || h <= 0 {
		return
	}
	sty := draw.LineStyle{Color: hatchColor, Width: vg.Points(0.7)}
	// A line x = k + (y − minY), for k from −h to w.
	for k := -h + math.Mod(h, step); k < w; k += step {
		y0 := math.Max(0, -k)  // where it enters: the left edge or the bottom
		y1 := math.Min(h, w-k) // where it leaves: the top or the right edge
		if y1 <= y0 {
			continue
		}
		c.StrokeLine2(sty, r.Min.X+vg.Length(k+y0), r.Min.Y+vg.Length(y0), r.Min.X+vg.Length(k+y1), r.Min.Y+vg.Length(y1))
	}
}

// swatch is a legend thumbnail in a look.
type swatch struct{ l look }

// Thumbnail draws the swatch in the legend's box.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	pad := (r.Max.Y - r.Min.Y) * 0.1
	r.Min.Y += pad
	r.Max.Y -= pad
	fillRect(*c, r, s.l)
}

// legendOf returns a legend of names (listed first to last, top to
// bottom) in their looks.
func legendOf(names []string, lk map[string]look, notes map[string]string) plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = textStyle(11)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(16)
	l.Padding = vg.Points(4)
	for _, n := range names {
		l.Add(n+notes[n], swatch{lk[n]})
	}
	return l
}

// legendWidth is the width the legend takes at the right of an image,
// margins included.
func legendWidth(l plot.Legend, c draw.Canvas) vg.Length {
	r := l.Rectangle(c)
	return r.Max.X - r.Min.X + 2*margin
}

// margin is the space around the legend; topMargin that above a title.
const (
	margin    = vg.Length(12)
	topMargin = vg.Length(6)
)

// drawLegend draws l in the right part of c, w wide, level with the top
// of the data area (below the title of height top).
func drawLegend(c draw.Canvas, l plot.Legend, w, top vg.Length) {
	lc := draw.Crop(c, c.Max.X-c.Min.X-w+margin, -margin, 0, -top)
	l.Draw(lc)
}
