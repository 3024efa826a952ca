package tables

import (
	"fmt"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// Row is any table's row type.
type Row interface {
	Span | Instant | Counter | Kernel | Memory | Flow | Step | Host
}

// TableOf returns the name of the table whose rows are of type T.
func TableOf[T Row]() string {
	var z T
	switch any(z).(type) {
	case Span:
		return TableSpans
	case Instant:
		return TableInstants
	case Counter:
		return TableCounters
	case Kernel:
		return TableKernels
	case Memory:
		return TableMemory
	case Flow:
		return TableFlows
	case Step:
		return TableSteps
	}
	return TableHosts
}

// Read reads every row of one table's file (size bytes of r). A file of
// an older schema version reads too: columns are matched by name, and
// those it lacks read as their zero values. A file of a newer version,
// of another table, or that devprof did not write is an error, since its
// columns may mean what this version cannot know.
func Read[T Row](r io.ReaderAt, size int64) ([]T, error) {
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	v, ok := f.Lookup(MetadataSchemaVersion)
	if !ok {
		return nil, fmt.Errorf("tables: not a devprof table (no %s in the file's metadata)", MetadataSchemaVersion)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("tables: schema version %q is not a version", v)
	}
	if n > SchemaVersion {
		return nil, fmt.Errorf("tables: the file has schema version %d, newer than this devprof's %d: read it with a newer devprof", n, SchemaVersion)
	}
	if got, want := lookup(f, MetadataTable), TableOf[T](); got != want {
		return nil, fmt.Errorf("tables: the file holds table %q, not %q", got, want)
	}
	rows := make([]T, 0, f.NumRows())
	rd := parquet.NewGenericReader[T](f)
	defer rd.Close()
	buf := make([]T, 1024)
	for {
		k, err := rd.Read(buf)
		rows = append(rows, buf[:k]...)
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("tables: %w", err)
		}
	}
}

func lookup(f *parquet.File, key string) string {
	v, _ := f.Lookup(key)
	return v
}
