package memplot

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/membreakdown"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// twoDevices is a profile of two devices with NVML figures, a buffer in
// two categories and an untagged one (Others).
func twoDevices() *event.DeviceMemory {
	return &event.DeviceMemory{
		Time: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Buffers: []event.Buffer{
			{Bytes: 6 * GiB, Count: 1, Device: 0, Kind: "device", Tags: []string{"weights"}},
			{Bytes: 5 * GiB, Count: 1, Device: 1, Kind: "device", Tags: []string{"weights"}},
			{Bytes: 3 * GiB, Count: 2, Device: 0, Kind: "device", Tags: []string{"adam"}},
			{Bytes: 2 * GiB, Count: 1, Device: 0, Kind: "device", Tags: []string{"grad", "weights"}},
			{Bytes: 400 * MiB, Count: 1, Device: 1, Kind: "device"},
		},
		Devices: []event.DeviceUsage{{Device: 0, Used: 20 * GiB, Process: 19 * GiB}, {Device: 1, Used: 10 * GiB, Process: 7 * GiB}},
	}
}

func report(m *event.DeviceMemory, o membreakdown.Options) *membreakdown.Report {
	return membreakdown.Categorize(m, membreakdown.DefaultDictionary(), o)
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{"a.svg": SVG, "dir.x/B.SVG": SVG, "c.png": PNG, "d.Png": PNG} {
		if f, err := FormatOf(path); f != want || err != nil {
			t.Errorf("FormatOf(%q) = %q, %v; want %q", path, f, err, want)
		}
	}
	for _, path := range []string{"a.jpg", "b.pdf", "c", "d.svg.gz", "png"} {
		if _, err := FormatOf(path); err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), ".svg or a .png") {
			t.Errorf("FormatOf(%q): %v; want an error naming it and the two formats", path, err)
		}
	}
}

// decodePNG reads a PNG file and checks its pixel size.
func decodePNG(t *testing.T, path string, w, h int) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s is %d×%d pixels, want %d×%d", path, b.Dx(), b.Dy(), w, h)
	}
	return img
}

// svgText checks that an SVG file is well-formed XML of the given size in
// points and returns its text, every <text> element's content joined by
// newlines.
func svgText(t *testing.T, path string, wPt, hPt string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	inText := false
	sized := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			inText = e.Name.Local == "text"
			if e.Name.Local == "svg" {
				var w, h string
				for _, a := range e.Attr {
					switch a.Name.Local {
					case "width":
						w = a.Value
					case "height":
						h = a.Value
					}
				}
				sized = w == wPt && h == hPt
				if !sized {
					t.Errorf("%s: svg %s × %s, want %s × %s", path, w, h, wPt, hPt)
				}
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if !sized {
		t.Errorf("%s: no svg element", path)
	}
	return strings.Join(texts, "\n")
}

// TestBreakdownFiles: the breakdown renders as a PNG of the documented
// size and as a well-formed SVG holding the title, the axis label in the
// unit the data calls for, the bars' labels, every category drawn and
// the footnote about buffers counted twice.
func TestBreakdownFiles(t *testing.T) {
	dir := t.TempDir()
	r := report(twoDevices(), membreakdown.Options{})
	pngPath, svgPath := filepath.Join(dir, "b.png"), filepath.Join(dir, "b.SVG")
	for _, p := range []string{pngPath, svgPath} {
		if err := WriteBreakdown(p, r); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(p); err != nil || st.Size() < 1000 {
			t.Fatalf("%s: %v", p, err)
		}
	}
	decodePNG(t, pngPath, 10*DPI, 6*DPI)
	text := svgText(t, svgPath, "720pt", "432pt")
	want := []string{"Device memory by category at " + r.Time.Format("2006-01-02 15:04:05 MST"), "Device memory (GiB)", "gpu:0", "gpu:1", "all GPUs",
		"Untrackable (NVML, this process − tracked)", "The bars count 2.0 GiB more than once"}
	for _, c := range r.Categories {
		want = append(want, c.Name)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the SVG's text lacks %q:\n%s", w, text)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in the directory, want the two images (no temporary files left)", len(entries))
	}
}

// TestBreakdownUnitsAndNotes: the value axis is in the largest unit the
// tallest bar reaches one of; an expected sum draws a bar for all
// devices even with one; a negative Untrackable is said above its bar,
// not drawn; names that are XML markup stay text.
func TestBreakdownUnitsAndNotes(t *testing.T) {
	dir := t.TempDir()
	small := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 60 * MiB, Count: 1, Device: 0, Tags: []string{"weights"}},
		{Bytes: 5 * MiB, Count: 1, Device: 0, Tags: []string{"<b>&x"}},
	}}
	d := membreakdown.Dictionary{{Category: "A & <B>", Keywords: []string{"weights"}}}
	r := membreakdown.Categorize(small, d, membreakdown.Options{ExpectedSum: 200 * MiB})
	path := filepath.Join(dir, "s.svg")
	if err := WriteBreakdown(path, r); err != nil {
		t.Fatal(err)
	}
	text := svgText(t, path, "720pt", "432pt")
	for _, w := range []string{"Device memory (MiB)", "at an unknown time", "gpu:0", "all GPUs", "200.0 MiB", "A & <B>", "Untrackable (expected sum − tracked)"} {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q:\n%s", w, text)
		}
	}
	small.Devices = []event.DeviceUsage{{Device: 0, Used: 50 * MiB}}
	r = membreakdown.Categorize(small, d, membreakdown.Options{})
	if err := WriteBreakdown(path, r); err != nil {
		t.Fatal(err)
	}
	text = svgText(t, path, "720pt", "432pt")
	if !strings.Contains(text, "(untrackable −15.0 MiB)") || strings.Contains(text, "Untrackable") || strings.Contains(text, "all GPUs") || strings.Contains(text, "more than once") {
		t.Errorf("negative Untrackable on one device:\n%s", text)
	}
	tiny := &event.DeviceMemory{Buffers: []event.Buffer{{Bytes: 300 * KiB, Count: 1, Device: 3}}}
	if err := WriteBreakdown(path, report(tiny, membreakdown.Options{})); err != nil {
		t.Fatal(err)
	}
	if text := svgText(t, path, "720pt", "432pt"); !strings.Contains(text, "Device memory (KiB)") || !strings.Contains(text, "gpu:3") ||
		!strings.Contains(text, "Untrackable is unknown: the profile carries no NVML figures") {
		t.Errorf("300 KiB:\n%s", text)
	}
}

// TestBreakdownWidens: past six bars the image is BarWidth wider a bar.
func TestBreakdownWidens(t *testing.T) {
	m := &event.DeviceMemory{}
	for dev := range 8 {
		m.Buffers = append(m.Buffers, event.Buffer{Bytes: GiB, Count: 1, Device: dev, Tags: []string{"weights"}})
	}
	path := filepath.Join(t.TempDir(), "w.png")
	if err := WriteBreakdown(path, report(m, membreakdown.Options{})); err != nil {
		t.Fatal(err)
	}
	decodePNG(t, path, (10+3)*DPI, 6*DPI) // 8 devices and all: 9 bars
}

// column finds a pixel column of img holding both colours and returns
// the rows each is found at.
func column(img image.Image, a, b color.RGBA) (rowsA, rowsB []int, ok bool) {
	bd := img.Bounds()
	for x := bd.Min.X; x < bd.Max.X; x++ {
		rowsA, rowsB = nil, nil
		for y := bd.Min.Y; y < bd.Max.Y; y++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			switch c {
			case a:
				rowsA = append(rowsA, y)
			case b:
				rowsB = append(rowsB, y)
			}
		}
		if len(rowsA) > 3 && len(rowsB) > 3 {
			return rowsA, rowsB, true
		}
	}
	return nil, nil, false
}

// below checks that in some column of img colour lower is drawn only
// under colour upper.
func below(t *testing.T, img image.Image, lower, upper color.RGBA, what string) {
	t.Helper()
	lo, up, ok := column(img, lower, upper)
	if !ok {
		t.Errorf("%s: no column with both colours", what)
		return
	}
	if lo[0] <= up[len(up)-1] { // rows grow downwards
		t.Errorf("%s: lower colour from row %d, upper down to row %d", what, lo[0], up[len(up)-1])
	}
}

// TestBreakdownStacking: in a bar the largest category is at the bottom
// (the palette's first colour), Others above the categories and
// Untrackable on top.
func TestBreakdownStacking(t *testing.T) {
	m := &event.DeviceMemory{
		Buffers: []event.Buffer{
			{Bytes: 8 * GiB, Count: 1, Device: 0, Tags: []string{"weights"}},
			{Bytes: 2 * GiB, Count: 1, Device: 0, Tags: []string{"grad"}},
			{Bytes: 1 * GiB, Count: 1, Device: 0},
		},
		Devices: []event.DeviceUsage{{Device: 0, Used: 16 * GiB}},
	}
	path := filepath.Join(t.TempDir(), "s.png")
	if err := WriteBreakdown(path, report(m, membreakdown.Options{})); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, path, 10*DPI, 6*DPI)
	below(t, img, colorOf("Parameters"), colorOf("Gradients"), "Parameters (8 GiB) under Gradients (2 GiB)")
	below(t, img, colorOf("Gradients"), othersColor, "Gradients under Others")
	below(t, img, othersColor, untrackableColor, "Others under Untrackable")
}

func TestBreakdownRefusals(t *testing.T) {
	dir := t.TempDir()
	host := &event.DeviceMemory{Buffers: []event.Buffer{{Bytes: MiB, Count: 1, Device: -1, Kind: "pinned"}}}
	path := filepath.Join(dir, "none.png")
	if err := WriteBreakdown(path, report(host, membreakdown.Options{})); err == nil || !strings.Contains(err.Error(), "no device memory") || !strings.Contains(err.Error(), path) {
		t.Errorf("host memory only: %v", err)
	}
	bad := filepath.Join(dir, "b.jpg")
	if err := WriteBreakdown(bad, report(twoDevices(), membreakdown.Options{})); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf(".jpg: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refusal left %d files", len(entries))
	}
	if err := EncodeBreakdown(io.Discard, "gif", report(twoDevices(), membreakdown.Options{})); err == nil || !strings.Contains(err.Error(), `"gif"`) {
		t.Errorf("format gif: %v", err)
	}
}

// steps is a timeline of one device: Parameters from the start,
// Activations rising then freed, Untrackable throughout.
func steps(dev int, scale uint64) Timeline {
	return Timeline{
		Device: dev,
		Times:  []int64{0, 1e9, 2e9, 3e9, 3e9, 4e9},
		Series: []Series{
			{Name: "Parameters", Bytes: []uint64{0, 4 * scale, 4 * scale, 4 * scale, 4 * scale, 4 * scale}},
			{Name: "Activations", Bytes: []uint64{0, 0, 2 * scale, 3 * scale, 1 * scale, 0}},
			{Name: membreakdown.Others, Bytes: []uint64{0, scale / 2, scale / 2, scale / 2, scale / 2, scale / 2}},
			{Name: membreakdown.UntrackableName, Bytes: []uint64{scale, scale, scale, scale, scale, scale}},
		},
	}
}

// TestTimelineFiles: timelines render as a PNG of the documented size
// and an SVG holding the title, a panel per device, the axes' labels and
// every series' name; areas stack in order (the first at the bottom).
func TestTimelineFiles(t *testing.T) {
	dir := t.TempDir()
	tls := []Timeline{steps(0, GiB), steps(2, GiB/2)}
	pngPath, svgPath := filepath.Join(dir, "t.png"), filepath.Join(dir, "t.svg")
	for _, p := range []string{pngPath, svgPath} {
		if err := WriteTimeline(p, "run 7: memory over time", tls); err != nil {
			t.Fatal(err)
		}
	}
	decodePNG(t, pngPath, 10*DPI, int((0.5+2*3)*DPI))
	text := svgText(t, svgPath, "720pt", "468pt")
	for _, w := range []string{"run 7: memory over time", "gpu:0", "gpu:2", "time (s)", "Device memory (GiB)", "Parameters", "Activations", "Others", "Untrackable"} {
		if !strings.Contains(text, w) {
			t.Errorf("the SVG's text lacks %q:\n%s", w, text)
		}
	}
	small := []Timeline{steps(1, MiB)}
	if err := WriteTimeline(svgPath, "", small); err != nil {
		t.Fatal(err)
	}
	if err := WriteTimeline(pngPath, "", small); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, pngPath, 10*DPI, int((0.5+3)*DPI))
	below(t, img, colorOf("Parameters"), colorOf("Activations"), "Parameters under Activations")
	below(t, img, colorOf("Activations"), othersColor, "Activations under Others")
	if text := svgText(t, svgPath, "720pt", "252pt"); !strings.Contains(text, "Device memory (MiB)") {
		t.Errorf("MiB timeline:\n%s", text)
	}
}

func TestTimelineRefusals(t *testing.T) {
	good := steps(0, MiB)
	for _, c := range []struct {
		tls  []Timeline
		want string
	}{
		{nil, "no timelines"},
		{[]Timeline{{Device: 1}}, "gpu:1: no time points"},
		{[]Timeline{{Device: 0, Times: []int64{5, 3}, Series: []Series{{"A", []uint64{1, 2}}}}}, "time 1 (3 ns) is before time 0 (5 ns)"},
		{[]Timeline{{Device: 0, Times: []int64{5}}}, "no series"},
		{[]Timeline{{Device: 0, Times: []int64{5}, Series: []Series{{"", []uint64{1}}}}}, "a series without a name"},
		{[]Timeline{{Device: 0, Times: []int64{5}, Series: []Series{{"A", []uint64{1}}, {"A", []uint64{1}}}}}, `series "A" twice`},
		{[]Timeline{{Device: 0, Times: []int64{5, 6}, Series: []Series{{"A", []uint64{1}}}}}, `series "A" has 1 values for 2 time points`},
		{[]Timeline{good, good}, "two timelines of gpu:0"},
	} {
		err := EncodeTimeline(io.Discard, PNG, "", c.tls)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.tls, err, c.want)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "t.tiff")
	if err := WriteTimeline(path, "", []Timeline{good}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf(".tiff: %v", err)
	}
	// One moment is drawn, not refused.
	one := Timeline{Device: 0, Times: []int64{7}, Series: []Series{{"A", []uint64{MiB}}}}
	if err := WriteTimeline(filepath.Join(dir, "one.png"), "", []Timeline{one}); err != nil {
		t.Errorf("one moment: %v", err)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		min, max float64
		labels   []string
	}{
		{0, 41.3, []string{"0", "10", "20", "30", "40"}},
		{0, 230, []string{"0", "50", "100", "150", "200"}},
		{0, 3, []string{"0", "0.5", "1", "1.5", "2", "2.5", "3"}},
		{0, 0.012, []string{"0", "0.002", "0.004", "0.006", "0.008", "0.01", "0.012"}},
		{0.01, 0.19, []string{"0.05", "0.1", "0.15"}}, // 3×0.05 is 0.15000000000000002 in float64
	} {
		var got []string
		for _, tk := range niceTicks(c.min, c.max) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.labels, " ") {
			t.Errorf("niceTicks(%v, %v) labels %q, want %q", c.min, c.max, got, c.labels)
		}
	}
}

// TestColorsStable: a category has one colour whatever else is drawn, so
// the breakdown and the timeline agree.
func TestColorsStable(t *testing.T) {
	a := looks([]string{"Parameters", "Activations", "KV cache"}, true)
	b := looks([]string{"KV cache", "Workspace", "Activations"}, false)
	for _, n := range []string{"Activations", "KV cache"} {
		if a[n].fill != b[n].fill {
			t.Errorf("%s is %v in one plot, %v in another", n, a[n].fill, b[n].fill)
		}
	}
	if a["Parameters"].fill == a["Activations"].fill {
		t.Error("two default categories share a colour")
	}
}

// TestTimelineHostPanel: host memory's timeline beside a GPU's is titled
// "host" (not "gpu:-1"), labelled host memory, and drawn on a value axis
// of its own: its 4 MiB fill the panel as the GPU's 4 GiB fill theirs,
// where on the GPU's axis they were a line a pixel high.
func TestTimelineHostPanel(t *testing.T) {
	dir := t.TempDir()
	tls := []Timeline{steps(0, GiB), steps(HostDevice, MiB)}
	pngPath, svgPath := filepath.Join(dir, "t.png"), filepath.Join(dir, "t.svg")
	for _, p := range []string{pngPath, svgPath} {
		if err := WriteTimeline(p, "", tls); err != nil {
			t.Fatal(err)
		}
	}
	text := svgText(t, svgPath, "720pt", "468pt")
	for _, w := range []string{"gpu:0", "host", "Device memory (GiB)", "Host memory (MiB)"} {
		if !strings.Contains(text, w) {
			t.Errorf("the SVG's text lacks %q:\n%s", w, text)
		}
	}
	for _, w := range []string{"gpu:-1", "Device memory (MiB)", "Host memory (GiB)"} {
		if strings.Contains(text, w) {
			t.Errorf("the SVG's text has %q:\n%s", w, text)
		}
	}
	img := decodePNG(t, pngPath, 10*DPI, int((0.5+2*3)*DPI))
	// Rows of Parameters' colour in each panel: the same series at the
	// same share of each axis, so (nearly) the same height.
	params := colorOf("Parameters")
	half := img.Bounds().Min.Y + int((0.5+3)*DPI)
	rows := [2]int{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); uint8(r>>8) == params.R && uint8(g>>8) == params.G && uint8(b>>8) == params.B {
				rows[min(y/half, 1)]++
				break
			}
		}
	}
	if rows[0] < 50 || rows[1] < rows[0]*9/10 || rows[1] > rows[0]*11/10 {
		t.Errorf("Parameters %d rows high on gpu:0, %d on the host: want the host's as high, on an axis of its own", rows[0], rows[1])
	}
	if err := EncodeTimeline(io.Discard, PNG, "", []Timeline{steps(HostDevice, MiB), steps(-2, MiB)}); err == nil || !strings.Contains(err.Error(), "two timelines of host") {
		t.Errorf("two host timelines: %v", err)
	}
}

// TestBreakdownNamedDevices: another backend's device (JAX's CPU
// backend, "cpu:0") has a bar of its own, alone (where the plot once
// refused a profile with no GPU memory) or after the GPUs', whose total
// is then all devices'.
func TestBreakdownNamedDevices(t *testing.T) {
	dir := t.TempDir()
	only := &event.DeviceMemory{Buffers: []event.Buffer{
		{Bytes: 4 * MiB, Count: 2, Device: -1, DeviceName: "cpu:0", Tags: []string{"weights"}},
		{Bytes: 1 * MiB, Count: 1, Device: -1, Kind: "pinned"},
	}}
	p := filepath.Join(dir, "only.svg")
	if err := WriteBreakdown(p, report(only, membreakdown.Options{})); err != nil {
		t.Fatal(err)
	}
	text := svgText(t, p, "720pt", "432pt")
	for _, w := range []string{"cpu:0", "8.0 MiB", "Parameters"} {
		if !strings.Contains(text, w) {
			t.Errorf("one named device: the SVG lacks %q:\n%s", w, text)
		}
	}
	both := &event.DeviceMemory{Buffers: append(only.Buffers, event.Buffer{Bytes: 2 * GiB, Count: 1, Device: 0, Tags: []string{"weights"}})}
	p = filepath.Join(dir, "both.svg")
	if err := WriteBreakdown(p, report(both, membreakdown.Options{})); err != nil {
		t.Fatal(err)
	}
	text = svgText(t, p, "720pt", "432pt")
	for _, w := range []string{"gpu:0", "cpu:0", "all devices", "2.0 GiB", "8.0 MiB"} {
		if !strings.Contains(text, w) {
			t.Errorf("a GPU and a named device: the SVG lacks %q:\n%s", w, text)
		}
	}
	if strings.Index(text, "gpu:0") > strings.Index(text, "cpu:0") {
		t.Errorf("cpu:0 before gpu:0:\n%s", text)
	}
}
