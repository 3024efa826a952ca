package cuptisource

import (
	"fmt"
	"slices"
	"sync"

	"github.com/devprof/devprof/event"
	"github.com/devprof/devprof/internal/cuptiwrap"
	"github.com/devprof/devprof/internal/recorder"
	"github.com/devprof/devprof/sources/cupti"
)

// Source collects GPU activity for one session.
type Source struct {
	buf *recorder.Buffer
	col *cuptiwrap.Collector
	lib cuptiwrap.LibraryInfo

	offset int64 // CUPTI ns minus session monotonic ns
	gap    int64 // width of the paired read the offset came from

	mu      sync.Mutex
	batches [][]cuptiwrap.Record // everything CUPTI delivered, written at Stop
	spans   map[uint64]spanInfo  // external correlation id (span ID) -> the span

	stopOnce sync.Once
	report   Report
}

// Report is what Stop found out about the collection.
type Report struct {
	// Library describes the libcupti that was loaded.
	Library cuptiwrap.LibraryInfo
	// Stats are the collector's counts.
	Stats cuptiwrap.Stats
	// Events is how many events were written into the buffer.
	Events int
	// Clock says which clock the device timestamps came from and how they
	// were mapped onto the session timeline.
	Clock event.Note
	// Drops counts the device records the trace lost before they reached
	// the buffer (dropped by CUPTI or over cupti.Options.MaxRecords).
	Drops event.Drops
	// Warnings are problems to show in the outputs (records dropped,
	// records without timestamps, a failed Stop).
	Warnings []event.Warning
}

// Start begins collecting device activity into buf. The returned error
// says why device activity cannot be recorded (no libcupti, no GPU, another
// profiler attached, insufficient privileges); the session records the host
// alone then.
func Start(buf *recorder.Buffer, cfg cupti.Options) (*Source, error) {
	s := &Source{buf: buf, spans: map[uint64]spanInfo{}}
	col, err := cuptiwrap.Start(cuptiwrap.Options{
		Library:     cfg.Library,
		BufferSize:  cfg.BufferSize,
		MaxBuffers:  cfg.MaxBuffers,
		FlushPeriod: cfg.FlushPeriod,
		MaxRecords:  cfg.MaxRecords,
	}, s.sink)
	if err != nil {
		return nil, err
	}
	s.col = col
	s.lib = col.Library()
	if err := s.measureOffset(); err != nil {
		col.Stop()
		return nil, err
	}
	buf.SetDeviceCorrelator(correlator{s})
	return s, nil
}

// sink keeps every record until Stop: an API call, the external
// correlation that names its span and the kernel it launched may arrive in
// different buffers, in any order.
func (s *Source) sink(batch []cuptiwrap.Record) {
	// Whole batches are kept as they come (the collector reuses its batch):
	// appending records to one growing slice moved every 192-byte record
	// again at each growth.
	kept := slices.Clone(batch)
	s.mu.Lock()
	s.batches = append(s.batches, kept)
	s.mu.Unlock()
}

// offsetReads is how many paired clock reads measureOffset takes.
const offsetReads = 16

// measureOffset pairs CUPTI's clock with the session's monotonic clock:
// the CUPTI reading is taken between two monotonic ones, and the pair with
// the narrowest bracket wins.
func (s *Source) measureOffset() error {
	best := int64(1 << 62)
	for i := 0; i < offsetReads; i++ {
		m0 := recorder.Mono()
		c, err := s.col.Timestamp()
		m1 := recorder.Mono()
		if err != nil {
			return fmt.Errorf("reading CUPTI's clock: %w", err)
		}
		if g := m1 - m0; g < best {
			best = g
			s.offset = int64(c) - (m0 + g/2)
		}
	}
	s.gap = best
	return nil
}

// mono converts a CUPTI timestamp to the session timeline.
func (s *Source) mono(t uint64) int64 { return int64(t) - s.offset }

// spanInfo is what the writer needs of an annotate.Device span.
type spanInfo struct {
	name string
	lane uint32
}

// correlator lets annotate.Device attribute kernels to its span through
// CUPTI's external correlation (kind CUSTOM0).
type correlator struct{ s *Source }

func (c correlator) Push(spanID uint64, lane uint32, name string) error {
	c.s.mu.Lock()
	c.s.spans[spanID] = spanInfo{name, lane}
	c.s.mu.Unlock()
	return c.s.col.PushExternalCorrelation(spanID)
}

func (c correlator) Pop() error {
	_, err := c.s.col.PopExternalCorrelation()
	return err
}

// Stop stops collecting, writes what was collected into the buffer and
// reports on it. Call it once the host sources have stopped and before the
// buffer is snapshotted; later calls return the first call's report.
func (s *Source) Stop() recorder.SourceReport {
	r := s.stop()
	return recorder.SourceReport{Warnings: r.Warnings, Notes: []event.Note{r.Clock}, Dropped: r.Drops.Events}
}

// Report returns what Stop found out, in more detail than Stop's report
// (the library, the collector's counts). It stops the source if Stop has
// not been called.
func (s *Source) Report() Report { return s.stop() }

func (s *Source) stop() Report {
	s.stopOnce.Do(func() {
		s.buf.SetDeviceCorrelator(nil)
		st, err := s.col.Stop()
		s.report = Report{Library: s.lib, Stats: st, Drops: event.Drops{Source: cupti.SourceName, Events: st.Dropped}}
		if err != nil {
			s.warn(cupti.CodeStopFailed, "stopping CUPTI: %v", err)
		}
		s.mu.Lock()
		batches := s.batches
		s.batches = nil
		s.mu.Unlock()
		w := newWriter(s, batches)
		s.report.Events = w.write()
		s.report.Clock = event.Note{Source: cupti.SourceName, Text: fmt.Sprintf("GPU timestamps: CUPTI's clock (CLOCK_REALTIME, %s), mapped onto the session's monotonic clock by an offset of %d ns measured at start (pairing within %d ns)",
			libName(s.lib), s.offset, s.gap)}
		if d := st.Dropped; d > 0 {
			s.warn(cupti.CodeRecordsDropped, "%d GPU activity records dropped (%d by CUPTI, %d over the limit of kept records); raise the gpu_max_activity_api_events, gpu_buffer_size or gpu_max_buffers advanced settings",
				d, st.CUPTIDropped, st.OverLimit)
		}
		if w.untimed > 0 {
			s.warn(cupti.CodeUntimed, "%d GPU activity records had no timestamps (CUPTI could not time them) and were left out", w.untimed)
		}
		if w.lost > 0 {
			s.warn(cupti.CodeBufferFull, "%d GPU activity events did not fit in the event buffer (max_events)", w.lost)
		}
	})
	return s.report
}

// warn adds a warning of this source to the report.
func (s *Source) warn(code, format string, args ...any) {
	s.report.Warnings = append(s.report.Warnings, event.Warning{Source: cupti.SourceName, Code: code, Text: fmt.Sprintf(format, args...)})
}

func libName(l cuptiwrap.LibraryInfo) string {
	name := l.Soname
	if name == "" {
		name = l.Path
	}
	return fmt.Sprintf("%s, CUPTI API %d", name, l.APIVersion)
}
