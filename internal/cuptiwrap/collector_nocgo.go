//go:build !cgo

package cuptiwrap

// Collector collects CUPTI activity records. This build has no cgo, so no
// Collector can exist: [Start] always fails with [ErrNeedsCgo].
type Collector struct{}

// Start fails: loading libcupti needs cgo (CGO_ENABLED=1 and a C compiler).
func Start(opts Options, sink func(batch []Record)) (*Collector, error) {
	if _, err := opts.withDefaults(); err != nil {
		return nil, err
	}
	return nil, ErrNeedsCgo
}

// Stop returns ErrNeedsCgo.
func (c *Collector) Stop() (Stats, error) { return Stats{}, ErrNeedsCgo }

// Flush returns ErrNeedsCgo.
func (c *Collector) Flush() error { return ErrNeedsCgo }

// Timestamp returns ErrNeedsCgo.
func (c *Collector) Timestamp() (uint64, error) { return 0, ErrNeedsCgo }

// Library returns the zero LibraryInfo.
func (c *Collector) Library() LibraryInfo { return LibraryInfo{} }

// PushExternalCorrelation returns ErrNeedsCgo.
func (c *Collector) PushExternalCorrelation(id uint64) error { return ErrNeedsCgo }

// PopExternalCorrelation returns ErrNeedsCgo.
func (c *Collector) PopExternalCorrelation() (uint64, error) { return 0, ErrNeedsCgo }
