package membreakdown

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/devprof/devprof/event"
)

// WriteCSV writes m's device memory in the layout of MXNet's GPU memory
// profiler CSV (mxnet_gpu_memory_profiler.csv), which its analysis scripts
// read: no header, one line per allocation (a group of Count buffers
// gives Count lines), in m's order, two fields:
//
//	tag,size_in_MiB
//
// tag is the buffer's Text; size_in_MiB is bytes/1048576 as a decimal
// number, as exact as a float64 allows ("6", "0.29296875"). Host memory is
// left out (see OnDevice), as MXNet's profiler saw only the GPU's.
//
// Unlike MXNet, which wrote tags as they were, a tag containing a comma,
// a double quote or a line break is quoted as RFC 4180 says
// ("weights,fp16 train" becomes "\"weights,fp16 train\""), so that every
// line has two fields: a tag list joined with "," always is. Python's csv
// module, which MXNet's scripts use, reads such a field back whole.
//
// The file has CSVRows(m) lines, which a group's Count can make many more
// than m has entries: callers writing for a user check it first.
func WriteCSV(w io.Writer, m *event.DeviceMemory) error {
	cw := csv.NewWriter(w)
	rec := make([]string, 2)
	for i := range m.Buffers {
		b := &m.Buffers[i]
		if !OnDevice(b) {
			continue
		}
		rec[0] = Text(b)
		rec[1] = strconv.FormatFloat(float64(b.Bytes)/(1<<20), 'f', -1, 64)
		for range max(b.Count, 1) {
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// CSVRows returns how many allocation lines WriteCSV and
// WriteStorageCSV write for m: one per device-memory buffer an entry
// stands for (saturating at math.MaxUint64).
func CSVRows(m *event.DeviceMemory) uint64 {
	var n uint64
	for i := range m.Buffers {
		if b := &m.Buffers[i]; OnDevice(b) {
			c := uint64(max(b.Count, 1))
			if n > math.MaxUint64-c {
				return math.MaxUint64
			}
			n += c
		}
	}
	return n
}

// StorageCSVHeader is the first line WriteStorageCSV writes: the columns
// of MXNet 2's GPU storage profiler (its gpu_memory_profile-pid_N.csv).
const StorageCSVHeader = `"Attribute Name","Requested Size","Device","Actual Size","Reuse?"`

// NVMLAmend is the attribute name of the rows WriteStorageCSV adds for
// the memory in use on a device beyond its tracked buffers, as MXNet's
// storage profiler named them.
const NVMLAmend = "nvml_amend"

// WriteStorageCSV writes m's device memory with the columns of MXNet 2's
// GPU storage profiler, for the scripts that read that CSV: a header
// (StorageCSVHeader), then one row per allocation (a group of Count
// buffers gives Count rows), every field double-quoted:
//
//	"Attribute Name","Requested Size","Device","Actual Size","Reuse?"
//
// The attribute name is the buffer's Text; the rows are in its byte
// order (as MXNet sorted them by name), ties in m's order. Sizes are in
// bytes. Device is the CUDA ordinal, or the device's name for another
// backend's ("cpu:0"). Actual Size is the requested size and Reuse? is
// 0: devprof sees the size asked of CUDA, not what CUDA rounded it to,
// and every tracked allocation is a real one, not a framework's pool
// handing a block out again. Host memory is left out (see OnDevice).
//
// Then, as MXNet did with NVML, one NVMLAmend row per device that r gives
// a non-negative Untrackable figure for (r may be nil: no such rows),
// holding that figure as both sizes; MXNet computed it in unsigned
// arithmetic and wrote a huge number where more was tracked than NVML
// said, which is left out here instead. A double quote in a name is
// doubled, as RFC 4180 says.
func WriteStorageCSV(w io.Writer, m *event.DeviceMemory, r *Report) error {
	type row struct {
		name   string
		bytes  uint64
		device string
		count  int
	}
	var rows []row
	for i := range m.Buffers {
		b := &m.Buffers[i]
		if !OnDevice(b) {
			continue
		}
		dev := b.DeviceName
		if dev == "" {
			dev = strconv.Itoa(b.Device)
		}
		rows = append(rows, row{Text(b), b.Bytes, dev, max(b.Count, 1)})
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.name, b.name) })
	bw := bufio.NewWriter(w)
	bw.WriteString(StorageCSVHeader + "\n")
	var line []byte
	writeRow := func(name string, bytes uint64, dev string) {
		line = line[:0]
		line = appendQuoted(line, name)
		line = append(line, ',')
		size := strconv.AppendUint(nil, bytes, 10)
		line = appendQuoted(line, string(size))
		line = append(line, ',')
		line = appendQuoted(line, dev)
		line = append(line, ',')
		line = appendQuoted(line, string(size))
		line = append(line, `,"0"`...)
		line = append(line, '\n')
		bw.Write(line)
	}
	for _, x := range rows {
		for range x.count {
			writeRow(x.name, x.bytes, x.device)
		}
	}
	if r != nil {
		for _, u := range r.Untrackable {
			if u.Bytes >= 0 {
				writeRow(NVMLAmend, uint64(u.Bytes), strconv.Itoa(u.Device))
			}
		}
	}
	return bw.Flush()
}

// appendQuoted appends s between double quotes, its own doubled.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = append(dst, strings.ReplaceAll(s, `"`, `""`)...)
	return append(dst, '"')
}
