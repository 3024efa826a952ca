package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/memplot"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/membreakdown"
)

// topTags is how many tags a category lists (MXNet's pprint_top_entries
// printed 20); -json has them all.
const topTags = 20

func runBreakdown(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("memory breakdown", stderr)
	kwPath := fs.String("keywords", "", "categorize with the keyword dictionary in `FILE`: JSON ({\"Parameters\": [\"weights\", \"param\"], …}) or YAML, categories in the file's order (default: Parameters, Gradients, Optimizer state, Activations, Workspace, Data)")
	csvPath := fs.String("csv", "", "also write MXNet's CSV to `OUT`: tag,size_in_MiB, one line per allocation, no header (-csv_columns 5: MXNet 2's storage profiler's columns)")
	csvColumns := fs.Int("csv_columns", 2, "the CSV's columns (`N`): 2, MXNet's GPU memory profiler's tag,size_in_MiB; or 5, MXNet 2's storage profiler's \"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\" with a header and nvml_amend rows")
	plotPath := fs.String("plot", "", "also draw the breakdown as stacked bars per device into `OUT`, an .svg or a .png")
	expected := fs.String("expected_sum", "", "compute Untrackable as `BYTES` (nvidia-smi's figure: 1610612736, 1536MiB, 1.5GiB) minus what is tracked, instead of the NVML figures the profile carries")
	asJSON := fs.Bool("json", false, "print the breakdown as one JSON object (every tag of every category) for scripts")
	maxRows := maxRowsFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *csvColumns != 2 && *csvColumns != 5 {
		fmt.Fprintf(stderr, "devprof memory breakdown: -csv_columns %d: want 2 (tag,size_in_MiB) or 5 (MXNet 2's storage profiler)\n", *csvColumns)
		return errUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "devprof memory breakdown: want exactly one INPUT (a memory profile, or a run or log directory), got %d arguments\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	var o membreakdown.Options
	if *expected != "" {
		n, err := parseBytes(*expected)
		if err != nil {
			fmt.Fprintf(stderr, "devprof memory breakdown: -expected_sum %s: %v\n", *expected, err)
			return errUsage
		}
		o.ExpectedSum = n
	}
	if *plotPath != "" {
		if _, err := memplot.FormatOf(*plotPath); err != nil {
			fmt.Fprintf(stderr, "devprof memory breakdown: -plot %v\n", err)
			return errUsage
		}
	}
	dict, dictName := membreakdown.DefaultDictionary(), "the default dictionary"
	if *kwPath != "" {
		d, err := membreakdown.ReadDictionary(*kwPath)
		if err != nil {
			return err
		}
		dict, dictName = d, *kwPath
	}
	path, err := memoryInput("memory breakdown", fs.Arg(0), stderr)
	if err != nil {
		return err
	}
	m, err := readMemory(path)
	if err != nil {
		return err
	}
	r := membreakdown.Categorize(m, dict, o)
	// Every budget before any output: a refusal writes nothing at all.
	b := rowBudget{max: *maxRows, entries: len(m.Buffers) + keywordsOf(dict)}
	if *csvPath != "" {
		// The CSV's lines do not depend on the dictionary.
		b := rowBudget{max: *maxRows, entries: len(m.Buffers)}
		if err := b.check("-csv "+*csvPath, "lines (one per allocation the profile stands for)", membreakdown.CSVRows(m)); err != nil {
			return err
		}
	}
	if err := b.check(map[bool]string{false: "the breakdown", true: "-json"}[*asJSON], "tag rows", breakdownRows(r, *asJSON)); err != nil {
		return err
	}
	defer removeTemporariesOnSignal()()
	// Files first: a failure prints nothing on stdout.
	if *csvPath != "" {
		if err := writeCSV(*csvPath, m, r, *csvColumns); err != nil {
			return err
		}
	}
	if *plotPath != "" {
		if err := memplot.WriteBreakdown(*plotPath, r); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeBreakdownJSON(stdout, path, dictName, dict, m, r, *csvPath, *plotPath)
	}
	writeBreakdown(stdout, path, dictName, dict, m, r)
	if *csvPath != "" {
		fmt.Fprintf(stdout, "\nCSV (%s): %s\n", map[int]string{2: "MXNet's layout", 5: "MXNet 2's storage profiler's columns"}[*csvColumns], *csvPath)
	}
	if *plotPath != "" {
		fmt.Fprintf(stdout, "plot: %s\n", *plotPath)
	}
	return nil
}

// writeCSV writes m's MXNet CSV to path, whole or not at all: with
// columns 2 the two-column form, with 5 MXNet 2's storage profiler's
// columns (its nvml_amend rows from r).
func writeCSV(path string, m *event.DeviceMemory, r *membreakdown.Report, columns int) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if columns == 5 {
		err = membreakdown.WriteStorageCSV(f, m, r)
	} else {
		err = membreakdown.WriteCSV(f, m)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// keywordsOf counts a dictionary's keywords: entries of the input, as
// the profile's are, since each category may list every tag.
func keywordsOf(d membreakdown.Dictionary) int {
	n := 0
	for _, r := range d {
		n += 1 + len(r.Keywords)
	}
	return n
}

// breakdownRows is how many tag rows writeBreakdown (asJSON:
// writeBreakdownJSON) prints: each category's tags (the top topTags in
// the table) and the buffers counted in several.
func breakdownRows(r *membreakdown.Report, asJSON bool) uint64 {
	n := uint64(len(r.MultiMatches))
	for _, c := range r.Categories {
		if asJSON {
			n += uint64(len(c.Tags))
		} else {
			n += uint64(min(len(c.Tags), topTags))
		}
	}
	return n
}

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)$`)

// sizeUnits are the units parseBytes reads, by lower-case name.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// parseBytes reads a byte count: a whole number of bytes, or a number with
// a binary (KiB, MiB, GiB, TiB) or decimal (kB, MB, GB, TB) unit, in any
// case. A bare K, M, G or T is refused as ambiguous.
func parseBytes(s string) (uint64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, errors.New("want a size such as 1610612736, 1536MiB or 1.5GiB")
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		switch strings.ToLower(m[2]) {
		case "k", "m", "g", "t":
			return 0, fmt.Errorf("%q is ambiguous: say %siB (binary) or %sB (decimal)", m[2], strings.ToUpper(m[2]), strings.ToUpper(m[2]))
		}
		return 0, fmt.Errorf("unknown unit %q: want B, KiB, MiB, GiB, TiB, kB, MB, GB or TB", m[2])
	}
	if unit == 1 && strings.Contains(m[1], ".") {
		return 0, errors.New("a fraction of a byte: give a whole number of bytes, or a unit")
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	if unit == 1 {
		n, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil || n > math.MaxInt64 {
			return 0, errors.New("too large")
		}
		if n == 0 {
			return 0, errors.New("want more than 0 bytes")
		}
		return n, nil
	}
	b := math.Round(v * unit)
	switch {
	case b >= math.MaxInt64:
		return 0, errors.New("too large")
	case b < 1:
		return 0, errors.New("want more than 0 bytes")
	}
	return uint64(b), nil
}

// deviceName names a device in tables: "gpu:N", or "all" for the total.
func deviceName(d int) string {
	if d == membreakdown.AllDevices {
		return "all"
	}
	return pprof.DeviceLabel(d)
}

// fromWords says where an Untrackable's figure came from, for people.
func fromWords(f membreakdown.UntrackedFrom) string {
	switch f {
	case membreakdown.FromNVMLProcess:
		return "NVML at capture, this process"
	case membreakdown.FromNVMLUsed:
		return "NVML at capture, all processes"
	case membreakdown.FromNVML:
		return "NVML at capture"
	case membreakdown.FromExpectedSum:
		return "-expected_sum"
	}
	return string(f)
}

// deviceList formats a category's bytes per device: "gpu:0 8.0 GiB,
// gpu:1 5.0 GiB".
func deviceList(ds []membreakdown.DeviceBytes) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		label := pprof.DeviceLabel(d.Device)
		if d.Name != "" {
			label = d.Name
		}
		parts[i] = label + " " + size(d.Bytes, false)
	}
	return strings.Join(parts, ", ")
}

// writeBreakdown prints the breakdown as MXNet's pprint_top_entries did:
// each category with its total and its top tags, then Others, then
// Untrackable, then the buffers counted in several categories.
func writeBreakdown(w io.Writer, path, dictName string, dict membreakdown.Dictionary, m *event.DeviceMemory, r *membreakdown.Report) {
	var devs []string
	for _, d := range r.Devices {
		devs = append(devs, pprof.DeviceLabel(d))
	}
	devs = append(devs, r.NamedDevices...)
	fmt.Fprintf(w, "%s: device memory at %s: %s tracked in %s", path, when(m.Time), size(r.Tracked, false), plural(int64(r.Buffers), "buffer"))
	if len(devs) > 0 {
		fmt.Fprintf(w, " on %s", strings.Join(devs, ", "))
	}
	fmt.Fprintln(w)
	if r.Host.Buffers > 0 {
		fmt.Fprintf(w, "host memory (pinned, pageable) left out: %s in %s\n", size(r.Host.Bytes, false), plural(int64(r.Host.Buffers), "buffer"))
	}
	for _, x := range m.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x.Text)
	}
	if c := countsLine(m.Counts); c != "" {
		fmt.Fprintln(w, c)
	}
	names := make([]string, len(dict))
	for i, rule := range dict {
		names[i] = rule.Category
	}
	fmt.Fprintf(w, "categories (%s): %s\n", dictName, strings.Join(names, ", "))

	if len(r.Categories) == 0 {
		fmt.Fprintln(w, "\n(no device memory)")
	}
	for _, c := range r.Categories {
		fmt.Fprintf(w, "\n%s: %s in %s (%s)\n", c.Name, size(c.Bytes, false), plural(int64(c.Buffers), "buffer"), deviceList(c.Devices))
		shown := c.Tags[:min(len(c.Tags), topTags)]
		rows := make([][]string, len(shown))
		for i, t := range shown {
			rows[i] = []string{"  " + size(t.Bytes, false), strconv.Itoa(t.Buffers), t.Tag}
		}
		table(w, []string{"  SIZE", "BUFFERS", "TAG"}, rows, make([][]string, len(rows)), map[int]bool{0: true, 1: true})
		if rest := c.Tags[len(shown):]; len(rest) > 0 {
			var b uint64
			for _, t := range rest {
				b += t.Bytes
			}
			fmt.Fprintf(w, "  … %d more tags (%s); -json lists all\n", len(rest), size(b, false))
		}
	}

	fmt.Fprintln(w)
	writeUntrackable(w, r)
	if len(r.MultiMatches) > 0 {
		fmt.Fprintln(w)
	}
	for _, mm := range r.MultiMatches {
		fmt.Fprintf(w, "warning: %q (%s, %s) matched %s: counted in each\n", mm.Text, plural(int64(mm.Buffers), "buffer"), size(mm.Bytes, false), andList(mm.Categories))
	}
}

// writeUntrackable prints Untrackable per device and in total, with
// where each figure came from.
func writeUntrackable(w io.Writer, r *membreakdown.Report) {
	if len(r.Untrackable) == 0 && r.UntrackableTotal == nil {
		fmt.Fprintln(w, "Untrackable: unknown: the profile carries no NVML figures for its devices; -expected_sum BYTES gives one")
		return
	}
	fmt.Fprintln(w, "Untrackable (in use on the device, but in no tracked buffer):")
	var rows [][]string
	line := func(u *membreakdown.Untrackable) {
		row := []string{"  " + deviceName(u.Device), signedSize(u.Bytes, false), "= " + size(u.Expected, false) + " (" + fromWords(u.From) + ") − " + size(u.Tracked, false) + " tracked"}
		if u.Bytes < 0 {
			row[2] += "; negative: more tracked than the figure says"
		}
		rows = append(rows, row)
	}
	if r.UntrackableTotal == nil || r.UntrackableTotal.From != membreakdown.FromExpectedSum {
		for _, d := range r.Devices {
			if u := r.UntrackableOn(d); u != nil {
				line(u)
			} else {
				rows = append(rows, []string{"  " + deviceName(d), "unknown", "(no NVML figure for it in the profile)"})
			}
		}
	}
	if u := r.UntrackableTotal; u != nil {
		line(u)
	} else {
		rows = append(rows, []string{"  all", "unknown", "(some device has no figure; -expected_sum BYTES gives one)"})
	}
	for _, row := range alignRows(rows, map[int]bool{1: true}) {
		fmt.Fprintln(w, row)
	}
}

// alignRows pads cells into columns two spaces apart, those named in
// right aligned.
func alignRows(rows [][]string, right map[int]bool) []string {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	out := make([]string, len(rows))
	for k, r := range rows {
		var sb strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			switch {
			case i == len(r)-1:
				sb.WriteString(c)
			case right[i]:
				sb.WriteString(pad + c + "  ")
			default:
				sb.WriteString(c + pad + "  ")
			}
		}
		out[k] = strings.TrimRight(sb.String(), " ")
	}
	return out
}

// andList joins names as people do: "A", "A and B", "A, B and C".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// jsonBreakdown is what memory breakdown -json prints: a stable shape for
// scripts, sizes in bytes.
type jsonBreakdown struct {
	File           string            `json:"file"`
	Time           string            `json:"time,omitempty"`
	Keywords       string            `json:"keywords"` // the file, or "" for the default dictionary
	Dictionary     []jsonRule        `json:"dictionary"`
	TrackedBytes   uint64            `json:"tracked_bytes"` // device memory, each buffer once
	TrackedBuffers int               `json:"tracked_buffers"`
	Devices        []int             `json:"devices"`
	HostBytes      uint64            `json:"host_bytes"` // left out of the breakdown
	HostBuffers    int               `json:"host_buffers"`
	Categories     []jsonCategory    `json:"categories"` // largest first, Others last
	Untrackable    []jsonUntrackable `json:"untrackable"`
	UntrackableAll *jsonUntrackable  `json:"untrackable_total"` // null when unknown
	MultiMatches   []jsonMultiMatch  `json:"multi_matches"`
	Warnings       []jsonWarning     `json:"warnings"`
	Counts         jsonCounts        `json:"counts"`
	Outputs        map[string]string `json:"outputs"` // "csv", "plot": the files written
}

type jsonRule struct {
	Category string   `json:"category"`
	Keywords []string `json:"keywords"`
}

type jsonCategory struct {
	Name    string           `json:"name"`
	Bytes   uint64           `json:"bytes"`
	Buffers int              `json:"buffers"`
	Devices []jsonDeviceSize `json:"devices"`
	Tags    []jsonTag        `json:"tags"`
}

type jsonDeviceSize struct {
	Device int    `json:"device"`                // -1 with a name
	Name   string `json:"device_name,omitempty"` // another backend's device ("cpu:0")
	Bytes  uint64 `json:"bytes"`
}

type jsonTag struct {
	Tag     string `json:"tag"`
	Bytes   uint64 `json:"bytes"`
	Buffers int    `json:"buffers"`
}

type jsonUntrackable struct {
	Device        int    `json:"device"` // -1 for all devices
	Bytes         int64  `json:"bytes"`  // expected − tracked; may be negative
	ExpectedBytes uint64 `json:"expected_bytes"`
	TrackedBytes  uint64 `json:"tracked_bytes"`
	From          string `json:"from"` // nvml-process, nvml-used, nvml, expected-sum
}

type jsonMultiMatch struct {
	Text       string   `json:"text"`
	Categories []string `json:"categories"`
	Bytes      uint64   `json:"bytes"`
	Buffers    int      `json:"buffers"`
}

func jsonUntrackableOf(u *membreakdown.Untrackable) jsonUntrackable {
	return jsonUntrackable{Device: u.Device, Bytes: u.Bytes, ExpectedBytes: u.Expected, TrackedBytes: u.Tracked, From: string(u.From)}
}

func writeBreakdownJSON(w io.Writer, path, dictName string, dict membreakdown.Dictionary, m *event.DeviceMemory, r *membreakdown.Report, csvPath, plotPath string) error {
	out := jsonBreakdown{File: path, Time: jsonTime(m.Time), Dictionary: []jsonRule{}, TrackedBytes: r.Tracked, TrackedBuffers: r.Buffers,
		Devices: append([]int{}, r.Devices...), HostBytes: r.Host.Bytes, HostBuffers: r.Host.Buffers, Categories: []jsonCategory{},
		Untrackable: []jsonUntrackable{}, MultiMatches: []jsonMultiMatch{}, Warnings: jsonWarnings(m.Warnings), Counts: jsonCountsOf(m.Counts),
		Outputs: map[string]string{}}
	if dictName != "the default dictionary" {
		out.Keywords = dictName
	}
	for _, rule := range dict {
		out.Dictionary = append(out.Dictionary, jsonRule{rule.Category, append([]string{}, rule.Keywords...)})
	}
	for _, c := range r.Categories {
		jc := jsonCategory{Name: c.Name, Bytes: c.Bytes, Buffers: c.Buffers, Devices: []jsonDeviceSize{}, Tags: []jsonTag{}}
		for _, d := range c.Devices {
			jc.Devices = append(jc.Devices, jsonDeviceSize{d.Device, d.Name, d.Bytes})
		}
		for _, t := range c.Tags {
			jc.Tags = append(jc.Tags, jsonTag{t.Tag, t.Bytes, t.Buffers})
		}
		out.Categories = append(out.Categories, jc)
	}
	for i := range r.Untrackable {
		out.Untrackable = append(out.Untrackable, jsonUntrackableOf(&r.Untrackable[i]))
	}
	if r.UntrackableTotal != nil {
		u := jsonUntrackableOf(r.UntrackableTotal)
		out.UntrackableAll = &u
	}
	for _, mm := range r.MultiMatches {
		out.MultiMatches = append(out.MultiMatches, jsonMultiMatch{mm.Text, mm.Categories, mm.Bytes, mm.Buffers})
	}
	if csvPath != "" {
		out.Outputs["csv"] = csvPath
	}
	if plotPath != "" {
		out.Outputs["plot"] = plotPath
	}
	return encodeJSON(w, out)
}
