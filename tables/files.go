package tables

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/devprof/devprof/event"
)

// rowGroupRows bounds a row group, which a table's writer holds in memory
// until it is full: 64 Ki rows keep each table's buffer to a few MiB and
// its dictionaries small, while leaving engines row groups large enough
// to scan fast.
const rowGroupRows = 64 << 10

// batchRows is how many rows a table gathers before handing them to the
// Parquet writer, which costs less per row in batches.
const batchRows = 1024

// PartitionPath returns where the file of one table of one session goes,
// relative to the export's root: <table>/run=<run>/host=<host>/<session>.parquet.
// The partition values are escaped as Hive escapes them (%XX for '/',
// '=', '%', control characters and the like), so any run or host name
// makes one path element; the columns inside the file hold them as they
// are.
func PartitionPath(table, run, host, session string) string {
	return table + "/run=" + escapeHive(run) + "/host=" + escapeHive(host) + "/" + escapeHive(session) + ".parquet"
}

// escapeHive escapes what a Hive partition value must not hold: path
// separators, '=', '%', and bytes a file name should not have.
func escapeHive(s string) string {
	if s == "" {
		return "__HIVE_DEFAULT_PARTITION__"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f || strings.IndexByte(`"#%'*/:=?\{[]^`, c) >= 0:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// mkdirBelow makes the directories of rel under root, which must exist:
// a caller that removes root to abandon an export (on a signal) is sure
// no table recreates it.
func mkdirBelow(root, rel string) error {
	dir := root
	for _, elem := range strings.Split(rel, string(filepath.Separator)) {
		dir = filepath.Join(dir, elem)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

// table is one table's file being written.
type table[T any] struct {
	path string // relative to the root
	f    *os.File
	bw   *bufio.Writer
	w    *columnFile[T]
	rows []T
	// refs are the ids of the tracks rows sit on, by row (see rename).
	refs []uint32
}

func openTable[T any](root, name, run, host, session string) (*table[T], error) {
	rel := PartitionPath(name, run, host, session)
	path := filepath.Join(root, filepath.FromSlash(rel))
	if err := mkdirBelow(root, filepath.Dir(filepath.FromSlash(rel))); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := newColumnFile[T](bw, &parquet.Zstd, writerOptions(name))
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return &table[T]{path: rel, f: f, bw: bw, w: w, rows: make([]T, 0, batchRows), refs: make([]uint32, 0, batchRows)}, nil
}

// writerOptions are parquet-go's writer options for table name: its
// files' compression, row groups and metadata, which columnFile takes
// from an empty file parquet-go writes with them.
func writerOptions(name string) []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.KeyValueMetadata(MetadataSchemaVersion, strconv.Itoa(SchemaVersion)),
		parquet.KeyValueMetadata(MetadataTable, name),
		parquet.CreatedBy("devprof", strconv.Itoa(SchemaVersion), ""),
	}
}

// add adds row r, on the track with id track (0: none).
func (t *table[T]) add(track uint32, r T) error {
	p, err := t.row(track)
	if err == nil {
		*p = r
	}
	return err
}

// row returns the next row to fill in, zero, for a row on the track
// with id track (0: none): rows are built in place, not copied in (a
// kernel's is a few hundred bytes). The rows past len are always zero
// (flush clears those it wrote).
func (t *table[T]) row(track uint32) (*T, error) {
	if len(t.rows) == cap(t.rows) {
		if err := t.flush(); err != nil {
			return nil, err
		}
	}
	t.rows = t.rows[:len(t.rows)+1]
	t.refs = append(t.refs, track)
	return &t.rows[len(t.rows)-1], nil
}

func (t *table[T]) flush() error {
	if len(t.rows) == 0 {
		return nil
	}
	err := t.w.write(t.rows, t.refs)
	clear(t.rows) // let go of the strings
	t.rows, t.refs = t.rows[:0], t.refs[:0]
	return err
}

// rename gives the rows of track id not yet in a written row group the
// track name name (see tableSet.renameTrack).
func (t *table[T]) rename(id uint32, name string) {
	col := t.w.track
	if col == nil {
		return
	}
	for i, ref := range t.refs {
		if ref == id {
			*(*string)(unsafe.Add(unsafe.Pointer(&t.rows[i]), col.offset)) = name
		}
	}
	t.w.rename(id, name)
}

// close finishes the file, synced, or removes what there is of it.
func (t *table[T]) close(ok bool) error {
	var err error
	if ok {
		err = t.flush()
		if err == nil {
			err = t.w.close()
		}
		if err == nil {
			err = t.bw.Flush()
		}
		if err == nil {
			err = t.f.Sync()
		}
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if !ok || err != nil {
		os.Remove(t.f.Name())
		// Its partition's directories too (<table>/run=…/host=…), unless
		// another session's files are in them: a failed export leaves no
		// empty partition behind.
		dir := filepath.Dir(t.f.Name())
		for range strings.Count(t.path, "/") {
			if os.Remove(dir) != nil {
				break
			}
			dir = filepath.Dir(dir)
		}
	}
	return err
}

// tableSet is the files of one session's tables.
type tableSet struct {
	spans    *table[Span]
	instants *table[Instant]
	counters *table[Counter]
	kernels  *table[Kernel]
	memory   *table[Memory]
	flows    *table[Flow]
	steps    *table[Step]
	hosts    *table[Host]
	// written are the tracks with rows in a row group already written.
	written trackSet
}

// renameTrack gives the rows of track id the name name, unless some are
// in a row group already written (it returns false then): a Writer that
// writes rows as events come (Export) keeps them right when a reader
// names a track after its first rows, as a Go trace's reader names a
// goroutine when a stack shows its start function.
func (s *tableSet) renameTrack(id uint32, name string) bool {
	if s.written.has(id) {
		return false
	}
	s.spans.rename(id, name)
	s.instants.rename(id, name)
	s.counters.rename(id, name)
	s.kernels.rename(id, name)
	s.memory.rename(id, name)
	s.steps.rename(id, name)
	return true
}

// trackSet is a set of track ids.
type trackSet struct{ bits []uint64 }

func (t *trackSet) add(id uint32) {
	i := int(id / 64)
	if i >= len(t.bits) {
		t.bits = append(t.bits, make([]uint64, i+1-len(t.bits))...)
	}
	t.bits[i] |= 1 << (id % 64)
}

// union adds the ids of o.
func (t *trackSet) union(o *trackSet) {
	if len(o.bits) > len(t.bits) {
		t.bits = append(t.bits, make([]uint64, len(o.bits)-len(t.bits))...)
	}
	for i, b := range o.bits {
		t.bits[i] |= b
	}
}

func (t *trackSet) has(id uint32) bool {
	i := int(id / 64)
	return i < len(t.bits) && t.bits[i]&(1<<(id%64)) != 0
}

func openTables(root, run, host, session string) (*tableSet, error) {
	s := &tableSet{}
	var err error
	open := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	open(func() (e error) { s.spans, e = openTable[Span](root, TableSpans, run, host, session); return })
	open(func() (e error) { s.instants, e = openTable[Instant](root, TableInstants, run, host, session); return })
	open(func() (e error) { s.counters, e = openTable[Counter](root, TableCounters, run, host, session); return })
	open(func() (e error) { s.kernels, e = openTable[Kernel](root, TableKernels, run, host, session); return })
	open(func() (e error) { s.memory, e = openTable[Memory](root, TableMemory, run, host, session); return })
	open(func() (e error) { s.flows, e = openTable[Flow](root, TableFlows, run, host, session); return })
	open(func() (e error) { s.steps, e = openTable[Step](root, TableSteps, run, host, session); return })
	open(func() (e error) { s.hosts, e = openTable[Host](root, TableHosts, run, host, session); return })
	if err == nil {
		for _, w := range []interface{ noteWritten(*trackSet) }{s.spans.w, s.instants.w, s.counters.w, s.kernels.w, s.memory.w, s.flows.w, s.steps.w, s.hosts.w} {
			w.noteWritten(&s.written)
		}
	}
	if err != nil {
		s.close(false)
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("tables: run %q, host %q, session %q is already exported there", run, host, session)
		}
		return nil, err
	}
	return s, nil
}

// close finishes every file (ok) or removes them all; it returns their
// paths relative to the root, in Tables' order.
func (s *tableSet) close(ok bool) ([]string, error) {
	var errs []error
	var paths []string
	closeOne := func(path string, c func(bool) error) {
		if err := c(ok && len(errs) == 0); err != nil {
			errs = append(errs, err)
		}
		paths = append(paths, path)
	}
	if s.spans != nil {
		closeOne(s.spans.path, s.spans.close)
	}
	if s.instants != nil {
		closeOne(s.instants.path, s.instants.close)
	}
	if s.counters != nil {
		closeOne(s.counters.path, s.counters.close)
	}
	if s.kernels != nil {
		closeOne(s.kernels.path, s.kernels.close)
	}
	if s.memory != nil {
		closeOne(s.memory.path, s.memory.close)
	}
	if s.flows != nil {
		closeOne(s.flows.path, s.flows.close)
	}
	if s.steps != nil {
		closeOne(s.steps.path, s.steps.close)
	}
	if s.hosts != nil {
		closeOne(s.hosts.path, s.hosts.close)
	}
	if err := errors.Join(errs...); err != nil || !ok {
		return nil, err
	}
	return paths, nil
}

// hostRows returns the hosts table's rows of a finished session: its own
// and one per device, each device's identity merged from all its tracks.
func hostRows(d *deriver, m *event.Meta, tracks []event.Track, format string) []Host {
	base := Host{
		Run: d.run, Host: d.host, Session: d.session,
		Program: validUTF8(m.Program), PID: int64(m.PID),
		StartNS: m.Start.Mono + d.offset, StopNS: m.Stop.Mono + d.offset, Device: -1,
		Spans: d.counts[tSpans], Instants: d.counts[tInstants], Counters: d.counts[tCounters],
		Kernels: d.counts[tKernels], Memory: d.counts[tMemory], Flows: d.counts[tFlows], Steps: d.counts[tSteps],
		DroppedEvents: m.Dropped(), Warnings: int64(len(m.Warnings)), SourceFormat: format,
	}
	rows := []Host{base}
	index := map[int]int{}
	for i, t := range tracks {
		switch {
		case t.Kind == event.TrackDeviceStream, t.Kind == event.TrackDevice, t.Kind == event.TrackMemory:
		case i < len(d.tracks) && d.tracks[i].stream:
			// A Chrome file's stream: a device it saw, with no facts.
			t.Device = int(d.tracks[i].device)
		default:
			continue
		}
		if t.Device < 0 {
			continue
		}
		i, ok := index[t.Device]
		if !ok {
			h := base
			h.Device = int32(t.Device)
			i = len(rows)
			index[t.Device] = i
			rows = append(rows, h)
		}
		h := &rows[i]
		fill := func(dst *string, v string) {
			if *dst == "" {
				*dst = validUTF8(v)
			}
		}
		fill(&h.DeviceName, t.DeviceName)
		fill(&h.Vendor, t.Vendor)
		fill(&h.UUID, t.UUID)
		fill(&h.PCIBusID, t.PCIBusID)
		c := t.Caps
		if h.ClockRateKHz == 0 {
			h.ClockRateKHz = c.ClockRateKHz
		}
		if h.Cores == 0 {
			h.Cores = c.Cores
		}
		if h.MemoryBytes == 0 {
			h.MemoryBytes = int64(c.MemoryBytes)
		}
		if h.MemoryBandwidth == 0 {
			h.MemoryBandwidth = int64(c.MemoryBandwidth)
		}
		if h.ComputeCapability == "" && (c.ComputeCapMajor != 0 || c.ComputeCapMinor != 0) {
			h.ComputeCapability = strconv.FormatInt(c.ComputeCapMajor, 10) + "." + strconv.FormatInt(c.ComputeCapMinor, 10)
		}
	}
	return rows
}
