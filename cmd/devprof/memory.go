package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/exporters/formats"
	"github.com/devprof/devprof/exporters/pprof"
	"github.com/devprof/devprof/internal/atomicfile"
	"github.com/devprof/devprof/internal/metatext"
	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/membreakdown"
)

func runMemory(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("memory", stderr)
	n := fs.Int("n", 30, "show the `N` largest rows (0 for all)")
	exact := fs.Bool("bytes", false, "print sizes as exact byte counts, not KiB, MiB, GiB")
	stacks := fs.Bool("stack", false, "print each row's full allocation stack under it")
	base := fs.String("base", "", "show the growth per allocation site since the earlier profile `BEFORE` (leak hunting)")
	asJSON := fs.Bool("json", false, "print the profile (or the growth) as one JSON object (every row, whatever -n says) for scripts")
	maxRows := maxRowsFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *n < 0 {
		fmt.Fprintf(stderr, "devprof memory: -n %d: want 0 (all) or more\n", *n)
		return errUsage
	}
	path, err := oneFile(fs)
	if err != nil {
		return err
	}
	// A run or log directory stands for its newest memory profile, as
	// for breakdown and timeline.
	if path, err = memoryInput("memory", path, stderr); err != nil {
		return err
	}
	m, err := readMemory(path)
	if err != nil {
		return err
	}
	o := memOptions{rows: *n, exact: *exact, stacks: *stacks}
	if *base == "" {
		b := rowBudget{max: *maxRows, entries: len(m.Buffers)}
		if *asJSON {
			if err := b.check("-json", "buffers and stack frames", memoryJSONRows(m)); err != nil {
				return err
			}
			return writeMemoryJSON(stdout, path, m)
		}
		if err := b.check("the table", "rows and stack lines", memoryRows(m, o)); err != nil {
			return err
		}
		return writeMemory(stdout, path, m, o)
	}
	basePath, err := memoryInput("memory", *base, stderr)
	if err != nil {
		return err
	}
	before, err := readMemory(basePath)
	if err != nil {
		return err
	}
	g := growthOf(before, m)
	b := rowBudget{max: *maxRows, entries: len(before.Buffers) + len(m.Buffers)}
	if err := b.check(map[bool]string{false: "the table", true: "-json"}[*asJSON], "sites and stack lines", growthRows(g, o, *asJSON)); err != nil {
		return err
	}
	if *asJSON {
		return writeGrowthJSON(stdout, basePath, path, before, m, g)
	}
	return writeGrowth(stdout, basePath, path, before, m, g, o)
}

// defaultMaxRows is -max_rows's default: four times the live buffers
// devprof's tracker holds by default (devmem.DefaultMaxBuffers), so that
// the CSV of every profile a program within the tracker's defaults (or
// four times them) saves is written whole, while a 167-byte profile that
// says it holds 10⁹ allocations is refused instead of becoming gigabytes.
const defaultMaxRows = 1 << 22

// rowsPerEntry is how many rows an output may have per entry of its
// input whatever -max_rows says, so that a large profile is never
// refused for its size alone: twice the deepest stack devprof's tracker
// keeps by default (devmem.DefaultStackDepth) and its row, so that -json
// and -stack list every profile devprof saves with its defaults.
const rowsPerEntry = 128

// maxRowsFlag defines -max_rows on a command whose outputs expand counts
// (a CSV line per allocation of a group, a line per stack frame).
func maxRowsFlag(fs *flag.FlagSet) *uint64 {
	return fs.Uint64("max_rows", defaultMaxRows, fmt.Sprintf("refuse to write an output (CSV, table, JSON) of more rows than `N` or %d per entry of the input, whichever is more; 0 for no bound", rowsPerEntry))
}

// rowBudget is how many rows an output may expand its input into: the
// larger of -max_rows and rowsPerEntry per entry, so that a tiny input
// whose counts claim billions (a group of 10⁹ allocations, a stack of
// 4,096 inlined frames in each of a million samples) cannot fill a disk.
type rowBudget struct {
	max     uint64 // -max_rows; 0: no bound
	entries int    // the input's entries: a profile's samples, a dictionary's keywords
}

// check refuses rows rows of the output named what (of units) past the
// budget, with one line that names the count and the flag.
func (b rowBudget) check(what, units string, rows uint64) error {
	if b.max == 0 {
		return nil
	}
	limit := max(b.max, rowsPerEntry*uint64(b.entries))
	if rows <= limit {
		return nil
	}
	entries := "entries"
	if b.entries == 1 {
		entries = "entry"
	}
	return fmt.Errorf("%s would have %d %s, more than the %d allowed for an input of %d %s (the larger of -max_rows %d and %d per entry): -max_rows N raises the bound, -max_rows 0 lifts it",
		what, rows, units, limit, b.entries, entries, b.max, rowsPerEntry)
}

// addRows is a + b, saturating.
func addRows(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// memoryRows is how many lines writeMemory prints below its header.
func memoryRows(m *event.DeviceMemory, o memOptions) uint64 {
	shown := m.Buffers
	if o.rows > 0 && len(shown) > o.rows {
		shown = shown[:o.rows]
	}
	n := uint64(len(shown))
	if o.stacks {
		for i := range shown {
			n = addRows(n, uint64(max(len(shown[i].Stack), 1)))
		}
	}
	return n
}

// memoryJSONRows is how many buffers and frames writeMemoryJSON prints.
func memoryJSONRows(m *event.DeviceMemory) uint64 {
	n := uint64(len(m.Buffers))
	for i := range m.Buffers {
		n = addRows(n, uint64(len(m.Buffers[i].Stack)))
	}
	return n
}

// growthRows is how many sites and stack lines writeGrowth (or, asJSON,
// writeGrowthJSON) prints.
func growthRows(g growth, o memOptions, asJSON bool) uint64 {
	shown := g.sites
	if !asJSON && o.rows > 0 && len(shown) > o.rows {
		shown = shown[:o.rows]
	}
	n := uint64(len(shown))
	if asJSON || o.stacks {
		for _, s := range shown {
			for _, st := range s.stacks {
				n = addRows(n, uint64(max(len(st.frames), 1))+1) // and the separator
			}
		}
	}
	return n
}

// removeTemporariesOnSignal makes an interrupted command (Ctrl-C,
// SIGTERM) leave none of its outputs' temporary files; stop ends it.
func removeTemporariesOnSignal() (stop func()) {
	return atomicfile.RemoveOnSignal(os.Interrupt, syscall.SIGTERM)
}

// memOptions are the flags that shape the text output.
type memOptions struct {
	rows   int  // rows shown; 0 for all
	exact  bool // byte counts instead of binary units
	stacks bool // full stacks under the rows
}

// readMemory reads the memory profile at path. A trace given by mistake is
// named as one, so that the user knows which command reads it.
func readMemory(path string) (*event.DeviceMemory, error) {
	if runstore.IsURL(path) {
		return readRemote(path, readMemory)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a memory profile", path)
	}
	m, err := pprof.ReadFile(path)
	if err == nil || errors.Is(err, pprof.ErrNotMemory) {
		return m, err
	}
	if f, derr := formats.Detect(path); derr == nil {
		if _, rerr := f.ReadFile(path, nil); rerr == nil {
			return nil, fmt.Errorf("%s is a trace (%s), not a memory profile: devprof summary and devprof serve read it", path, f.Display)
		}
	}
	return nil, err
}

// size formats a byte count: binary units, or the exact count.
func size(n uint64, exact bool) string {
	if exact {
		return strconv.FormatUint(n, 10)
	}
	return metatext.Bytes(n)
}

// bytesWord is size with the unit said when it is exact, for sizes
// outside a table ("2048 bytes").
func bytesWord(n uint64, exact bool) string {
	if exact {
		return size(n, true) + " bytes"
	}
	return size(n, false)
}

// signedSize formats a change in bytes with its sign ("+2.0 MiB").
func signedSize(d int64, exact bool) string {
	switch {
	case d > 0:
		return "+" + size(uint64(d), exact)
	case d < 0:
		return "-" + size(uint64(-d), exact)
	}
	return size(0, exact)
}

// when formats a profile's time as pprof does; a profile may have none.
func when(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

// countsLine words a tracker's totals; "" when it has none (a profile
// JAX wrote).
func countsLine(c event.MemoryCounts) string {
	if c == (event.MemoryCounts{}) {
		return ""
	}
	parts := []string{fmt.Sprintf("tracker: %s and %s seen", plural(int64(c.Allocs), "allocation"), plural(int64(c.Frees), "free"))}
	if c.Untracked > 0 {
		parts = append(parts, fmt.Sprintf("%s (%s) untracked, so not below", plural(int64(c.Untracked), "allocation"), size(c.UntrackedBytes, false)))
	}
	if c.UnknownFrees > 0 {
		parts = append(parts, unknownFrees(c.UnknownFrees))
	}
	if c.DoubleFrees > 0 {
		parts = append(parts, plural(int64(c.DoubleFrees), "double free"))
	}
	if c.ZeroSize > 0 {
		parts = append(parts, plural(int64(c.ZeroSize), "zero-size allocation"))
	}
	s := strings.Join(parts, "; ")
	return s
}

// unknownFrees words a count of frees of pointers the tracker did not
// hold.
func unknownFrees(n uint64) string {
	if n == 1 {
		return "1 free of an unknown pointer"
	}
	return plural(int64(n), "free") + " of unknown pointers"
}

// header prints a profile's one-line description, its warnings and its
// tracker's counts.
func header(w io.Writer, path string, m *event.DeviceMemory, exact bool, warnPrefix string) {
	live, bufs := m.Live()
	fmt.Fprintf(w, "%s: device memory at %s: %s in %s\n", path, when(m.Time), bytesWord(live, exact), plural(int64(bufs), "live buffer"))
	for _, x := range m.Warnings {
		fmt.Fprintf(w, "%s%s\n", warnPrefix, x.Text)
	}
	if c := countsLine(m.Counts); c != "" {
		fmt.Fprintln(w, c)
	}
	for _, u := range m.Devices {
		var tracked uint64
		for i := range m.Buffers {
			if b := &m.Buffers[i]; b.Device == u.Device && membreakdown.OnDevice(b) {
				tracked += b.Total()
			}
		}
		line := fmt.Sprintf("%s: NVML at capture: %s in use of %s", deviceName(u.Device), bytesWord(u.Used, exact), bytesWord(u.Total, exact))
		if u.Process > 0 {
			line += ", this process " + bytesWord(u.Process, exact)
		}
		fmt.Fprintf(w, "%s; tracked here %s (devprof memory breakdown tells the rest)\n", line, bytesWord(tracked, exact))
	}
}

// table prints rows of cells in columns two spaces apart (alignRows), the
// columns named in right aligned (numbers), each row followed by its extra
// lines.
func table(w io.Writer, head []string, rows [][]string, extra [][]string, right map[int]bool) {
	lines := alignRows(append([][]string{head}, rows...), right)
	fmt.Fprintln(w, lines[0])
	for i, line := range lines[1:] {
		fmt.Fprintln(w, line)
		for _, x := range extra[i] {
			fmt.Fprintln(w, x)
		}
	}
}

// stackLines are a stack's frames, indented under a row; its glue
// innermost frames (a CUDA binding's, cgo's) are said to be.
func stackLines(st []event.Frame, glue int) []string {
	if len(st) == 0 {
		return []string{"    (no stack)"}
	}
	if glue >= len(st) {
		glue = 0
	}
	out := make([]string, len(st))
	for i, f := range st {
		out[i] = "    " + f.String()
		if i < glue {
			out[i] += "  [binding]"
		}
	}
	return out
}

// tagsSpan is a buffer's tags and span in one cell: "[weights fp16]
// train/step".
func tagsSpan(b *event.Buffer) string {
	var parts []string
	if len(b.Tags) > 0 {
		parts = append(parts, "["+strings.Join(b.Tags, " ")+"]")
	}
	if b.Span != "" {
		parts = append(parts, b.Span)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// bufferDevice names a buffer's device: "gpu:N", "host", or the name
// another backend gave it ("cpu:0").
func bufferDevice(b *event.Buffer) string {
	if b.DeviceName != "" {
		return b.DeviceName
	}
	return pprof.DeviceLabel(b.Device)
}

// site is where a buffer was allocated, for people.
func site(b *event.Buffer) string {
	if s := b.Site(); s != "" {
		return s
	}
	return "(no stack)"
}

// writeMemory prints the live buffers, largest total first.
func writeMemory(w io.Writer, path string, m *event.DeviceMemory, o memOptions) error {
	header(w, path, m, o.exact, "warning: ")
	fmt.Fprintln(w)
	if len(m.Buffers) == 0 {
		fmt.Fprintln(w, "(no live buffers)")
		return nil
	}
	shown := m.Buffers
	if o.rows > 0 && len(shown) > o.rows {
		shown = shown[:o.rows]
	}
	var rows, extra [][]string
	for i := range shown {
		b := &shown[i]
		rows = append(rows, []string{size(b.Total(), o.exact), strconv.Itoa(max(b.Count, 1)), size(b.Bytes, o.exact),
			bufferDevice(b), orDash(b.Kind), tagsSpan(b), site(b)})
		var x []string
		if o.stacks {
			x = stackLines(b.Stack, b.Glue)
		}
		extra = append(extra, x)
	}
	table(w, []string{"TOTAL", "COUNT", "SIZE", "DEVICE", "KIND", "TAGS/SPAN", "ALLOCATED AT"}, rows, extra, map[int]bool{0: true, 1: true, 2: true})
	if rest := m.Buffers[len(shown):]; len(rest) > 0 {
		var bytes uint64
		for i := range rest {
			bytes += rest[i].Total()
		}
		fmt.Fprintf(w, "… %d more %s (%s); -n 0 shows all\n", len(rest), map[bool]string{true: "row", false: "rows"}[len(rest) == 1], bytesWord(bytes, o.exact))
	}
	return nil
}

// siteGrowth is how the memory held by the buffers allocated at one site
// (the call site: the innermost frame past a CUDA binding's) changed
// between two profiles.
type siteGrowth struct {
	frame                 event.Frame // zero for buffers without a stack
	before, after         uint64      // bytes
	beforeBufs, afterBufs int
	stacks                []glueStack // the distinct stacks through it, the later profile's first
	growth                int64
}

// glueStack is a stack and how many of its innermost frames are glue.
type glueStack struct {
	frames []event.Frame
	glue   int
}

func (g *siteGrowth) site() string {
	if g.frame == (event.Frame{}) {
		return "(no stack)"
	}
	return g.frame.String()
}

// growthOf compares two profiles site by site: the sites whose bytes or
// buffers changed, largest growth first (shrinking sites last), and how
// many sites did not change.
func growthOf(before, after *event.DeviceMemory) (g growth) {
	index := map[event.Frame]*siteGrowth{}
	var all []*siteGrowth
	// The stacks already listed per site, by their frames: a site under a
	// million distinct stacks costs a million lookups, not 10¹² compares.
	// A profile read back shares one slice among the buffers of a stack,
	// so each slice's key is made once.
	listed := map[event.Frame]map[string]bool{}
	type sliceID struct {
		first *event.Frame
		n     int
	}
	keys := map[sliceID]string{}
	keyOf := func(st []event.Frame) string {
		if len(st) == 0 {
			return ""
		}
		id := sliceID{&st[0], len(st)}
		k, ok := keys[id]
		if !ok {
			k = stackKey(st)
			keys[id] = k
		}
		return k
	}
	add := func(m *event.DeviceMemory, later bool) {
		for i := range m.Buffers {
			b := &m.Buffers[i]
			f := b.SiteFrame()
			s := index[f]
			if s == nil {
				s = &siteGrowth{frame: f}
				index[f] = s
				all = append(all, s)
			}
			if later {
				s.after += b.Total()
				s.afterBufs += max(b.Count, 1)
			} else {
				s.before += b.Total()
				s.beforeBufs += max(b.Count, 1)
			}
			if listed[f] == nil {
				listed[f] = map[string]bool{}
			}
			if k := keyOf(b.Stack); !listed[f][k] {
				listed[f][k] = true
				s.stacks = append(s.stacks, glueStack{b.Stack, b.Glue})
			}
		}
	}
	add(after, true)
	add(before, false)
	for _, s := range all {
		// Both totals are at most MaxInt64 (Read checks a profile's sum).
		s.growth = int64(s.after) - int64(s.before)
		if s.growth == 0 && s.afterBufs == s.beforeBufs {
			g.unchanged++
			continue
		}
		g.sites = append(g.sites, s)
	}
	slices.SortStableFunc(g.sites, func(a, b *siteGrowth) int {
		return cmp.Or(cmp.Compare(b.growth, a.growth), cmp.Compare(b.afterBufs-b.beforeBufs, a.afterBufs-a.beforeBufs), cmp.Compare(a.site(), b.site()))
	})
	return g
}

// stackKey is a stack's frames as a string that only an equal stack
// has (each name after its length, so that no byte in a name can make two
// stacks alike).
func stackKey(st []event.Frame) string {
	var b []byte
	for _, f := range st {
		b = strconv.AppendInt(b, int64(len(f.Function)), 10)
		b = append(b, ':')
		b = append(b, f.Function...)
		b = strconv.AppendInt(b, int64(len(f.File)), 10)
		b = append(b, ':')
		b = append(b, f.File...)
		b = strconv.AppendInt(b, int64(f.Line), 10)
		b = append(b, ';')
	}
	return string(b)
}

// growth is what -base shows.
type growth struct {
	sites     []*siteGrowth
	unchanged int
}

// writeGrowth prints what grew between two profiles, site by site.
func writeGrowth(w io.Writer, basePath, path string, before, after *event.DeviceMemory, g growth, o memOptions) error {
	b0, n0 := before.Live()
	b1, n1 := after.Live()
	unit := ""
	if o.exact {
		unit = " bytes"
	}
	fmt.Fprintf(w, "%s (%s) → %s (%s): %s%s (%s → %s), %s buffers (%d → %d)\n", basePath, when(before.Time), path, when(after.Time),
		signedSize(int64(b1)-int64(b0), o.exact), unit, bytesWord(b0, o.exact), bytesWord(b1, o.exact), signedCount(n1-n0), n0, n1)
	if d := after.Counts.Untracked - min(before.Counts.Untracked, after.Counts.Untracked); d > 0 {
		fmt.Fprintf(w, "warning: %d more %s (%s%s) went untracked after %s: the growth below does not include them\n", d, map[bool]string{true: "allocation", false: "allocations"}[d == 1],
			signedSize(int64(after.Counts.UntrackedBytes)-int64(before.Counts.UntrackedBytes), o.exact), unit, basePath)
	}
	for _, x := range after.Warnings {
		fmt.Fprintf(w, "warning: %s\n", x.Text)
	}
	for _, x := range before.Warnings {
		if !slices.Contains(after.Warnings, x) { // said above
			fmt.Fprintf(w, "warning (%s): %s\n", basePath, x.Text)
		}
	}
	fmt.Fprintln(w)
	if len(g.sites) == 0 {
		fmt.Fprintf(w, "(no allocation site changed; %s the same)\n", plural(int64(g.unchanged), "site"))
		return nil
	}
	shown := g.sites
	if o.rows > 0 && len(shown) > o.rows {
		shown = shown[:o.rows]
	}
	var rows, extra [][]string
	for _, s := range shown {
		rows = append(rows, []string{signedSize(s.growth, o.exact), size(s.before, o.exact), size(s.after, o.exact),
			signedCount(s.afterBufs - s.beforeBufs), s.site()})
		var x []string
		if o.stacks {
			for i, st := range s.stacks {
				if i > 0 {
					x = append(x, "    ---")
				}
				x = append(x, stackLines(st.frames, st.glue)...)
			}
		}
		extra = append(extra, x)
	}
	table(w, []string{"GROWTH", "BEFORE", "AFTER", "BUFFERS", "ALLOCATED AT"}, rows, extra, map[int]bool{0: true, 1: true, 2: true, 3: true})
	if rest := len(g.sites) - len(shown); rest > 0 {
		fmt.Fprintf(w, "… %d more changed (-n 0 shows all); ", rest)
	}
	fmt.Fprintf(w, "%s unchanged\n", plural(int64(g.unchanged), "site"))
	return nil
}

func signedCount(d int) string {
	if d > 0 {
		return "+" + strconv.Itoa(d)
	}
	return strconv.Itoa(d)
}

// jsonMemory is what memory -json prints: a stable shape for scripts,
// sizes in bytes.
type jsonMemory struct {
	File        string        `json:"file"`
	Time        string        `json:"time,omitempty"` // RFC 3339; absent when the profile has none
	LiveBytes   uint64        `json:"live_bytes"`
	LiveBuffers int           `json:"live_buffers"`
	Counts      jsonCounts    `json:"counts"`
	Warnings    []jsonWarning `json:"warnings"`
	Buffers     []jsonBuffer  `json:"buffers"`
}

type jsonCounts struct {
	Allocs         uint64 `json:"allocs"`
	Frees          uint64 `json:"frees"`
	Untracked      uint64 `json:"untracked"`
	UntrackedBytes uint64 `json:"untracked_bytes"`
	UnknownFrees   uint64 `json:"unknown_frees"`
	DoubleFrees    uint64 `json:"double_frees"`
	ZeroSize       uint64 `json:"zero_size"`
}

type jsonBuffer struct {
	TotalBytes uint64      `json:"total_bytes"`
	Count      int         `json:"count"`
	Bytes      uint64      `json:"bytes"`
	Device     int         `json:"device"`                // -1: host or unknown, or a named device
	DeviceName string      `json:"device_name,omitempty"` // another backend's device ("cpu:0")
	Kind       string      `json:"kind"`
	Tags       []string    `json:"tags"`
	Span       string      `json:"span"`
	Source     string      `json:"source"`
	API        string      `json:"api"`
	Site       string      `json:"site"` // the call site, "" without a stack
	Stack      []jsonFrame `json:"stack"`
	// Glue is how many of Stack's innermost frames are a CUDA binding's
	// or cgo's, above Site.
	Glue int `json:"glue_frames"`
}

type jsonFrame struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func jsonStack(st []event.Frame) []jsonFrame {
	out := []jsonFrame{}
	for _, f := range st {
		out = append(out, jsonFrame{f.Function, f.File, f.Line})
	}
	return out
}

func jsonWarnings(ws []event.Warning) []jsonWarning {
	out := []jsonWarning{}
	for _, x := range ws {
		out = append(out, jsonWarning{x.Source, x.Code, x.Text})
	}
	return out
}

func jsonCountsOf(c event.MemoryCounts) jsonCounts {
	return jsonCounts{c.Allocs, c.Frees, c.Untracked, c.UntrackedBytes, c.UnknownFrees, c.DoubleFrees, c.ZeroSize}
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeMemoryJSON(w io.Writer, path string, m *event.DeviceMemory) error {
	live, bufs := m.Live()
	// Empty lists print as [], not null, so scripts can iterate them as
	// they are.
	out := jsonMemory{File: path, Time: jsonTime(m.Time), LiveBytes: live, LiveBuffers: bufs,
		Counts: jsonCountsOf(m.Counts), Warnings: jsonWarnings(m.Warnings), Buffers: []jsonBuffer{}}
	return streamJSON(w, out, "buffers", len(m.Buffers), func(i int) any {
		b := &m.Buffers[i]
		return jsonBuffer{TotalBytes: b.Total(), Count: max(b.Count, 1), Bytes: b.Bytes, Device: b.Device, DeviceName: b.DeviceName,
			Kind: b.Kind, Tags: append([]string{}, b.Tags...), Span: b.Span, Source: b.Source, API: b.API, Site: b.Site(), Stack: jsonStack(b.Stack), Glue: b.Glue}
	})
}

// streamJSON writes v as encodeJSON does, but with its top-level list
// field named list (empty in v) holding item(0) … item(n-1), each
// encoded and written in turn: the whole document of a million buffers
// with their stacks is gigabytes, which encoding v at once held in
// memory two or three times over.
func streamJSON(w io.Writer, v any, list string, n int, item func(i int) any) error {
	doc, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// A newline in a string value is escaped, so only the structure has
	// a line starting with the field's name.
	field := []byte("\n  " + strconv.Quote(list) + ": [")
	at := bytes.Index(doc, field)
	if at < 0 || n == 0 {
		if at < 0 {
			return fmt.Errorf("streamJSON: no list %q in the document", list)
		}
		return encodeJSON(w, v)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.Write(doc[:at+len(field)])
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("    ", "  ")
	for i := range n {
		buf.Reset()
		if err := enc.Encode(item(i)); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	bw.WriteString("\n  ]")
	bw.Write(doc[at+len(field)+1:]) // past the empty list's ]
	bw.WriteByte('\n')
	return bw.Flush()
}

// jsonGrowth is what memory -base -json prints.
type jsonGrowth struct {
	File          string        `json:"file"`
	Base          string        `json:"base"`
	Time          string        `json:"time,omitempty"`
	BaseTime      string        `json:"base_time,omitempty"`
	LiveBytes     uint64        `json:"live_bytes"`
	BaseLiveBytes uint64        `json:"base_live_bytes"`
	GrowthBytes   int64         `json:"growth_bytes"`
	GrowthBuffers int           `json:"growth_buffers"`
	Counts        jsonCounts    `json:"counts"`
	BaseCounts    jsonCounts    `json:"base_counts"`
	Warnings      []jsonWarning `json:"warnings"`
	BaseWarnings  []jsonWarning `json:"base_warnings"`
	Sites         []jsonSite    `json:"sites"` // the sites that changed, largest growth first
	Unchanged     int           `json:"unchanged_sites"`
}

type jsonSite struct {
	Site        string        `json:"site"` // "" for buffers without a stack
	GrowthBytes int64         `json:"growth_bytes"`
	BaseBytes   uint64        `json:"base_bytes"`
	Bytes       uint64        `json:"bytes"`
	BaseBuffers int           `json:"base_buffers"`
	Buffers     int           `json:"buffers"`
	Stacks      [][]jsonFrame `json:"stacks"`
}

func writeGrowthJSON(w io.Writer, basePath, path string, before, after *event.DeviceMemory, g growth) error {
	b0, n0 := before.Live()
	b1, n1 := after.Live()
	out := jsonGrowth{File: path, Base: basePath, Time: jsonTime(after.Time), BaseTime: jsonTime(before.Time),
		LiveBytes: b1, BaseLiveBytes: b0, GrowthBytes: int64(b1) - int64(b0), GrowthBuffers: n1 - n0,
		Counts: jsonCountsOf(after.Counts), BaseCounts: jsonCountsOf(before.Counts),
		Warnings: jsonWarnings(after.Warnings), BaseWarnings: jsonWarnings(before.Warnings), Sites: []jsonSite{}, Unchanged: g.unchanged}
	return streamJSON(w, out, "sites", len(g.sites), func(i int) any {
		s := g.sites[i]
		js := jsonSite{GrowthBytes: s.growth, BaseBytes: s.before, Bytes: s.after, BaseBuffers: s.beforeBufs, Buffers: s.afterBufs, Stacks: [][]jsonFrame{}}
		if s.frame != (event.Frame{}) {
			js.Site = s.frame.String()
		}
		for _, st := range s.stacks {
			js.Stacks = append(js.Stacks, jsonStack(st.frames))
		}
		return js
	})
}
