package membreakdown

import (
	"encoding/csv"
	"io"
	"strconv"

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
