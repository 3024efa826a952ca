package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/tables"
)

// download copies the tables' Parquet files under the bucket URL root
// into the local directory dir, keeping their partition paths. The
// embedded DuckDB reads local files only: it has no httpfs extension
// built in, and extensions are fetched from the network at run time,
// which a query must not depend on. So a bucket's tables cost their
// size in local disk for the query's length (removed after).
func download(ctx context.Context, root, dir string) error {
	n := 0
	var walk func(loc, local string, depth int) error
	walk = func(loc, local string, depth int) error {
		entries, err := runstore.List(ctx, loc)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name, ".") {
				continue // an export's staging, never a table
			}
			src, dst := runstore.Join(loc, e.Name), filepath.Join(local, e.Name)
			switch {
			case e.Dir && depth < 3: // run=…/host=…/
				if err := walk(src, dst, depth+1); err != nil {
					return err
				}
			case !e.Dir && strings.HasSuffix(e.Name, ".parquet"):
				if err := os.MkdirAll(local, 0o755); err != nil {
					return err
				}
				if err := runstore.Get(ctx, dst, src); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	}
	for _, t := range tables.Tables {
		if err := walk(runstore.Join(root, t), filepath.Join(dir, t), 0); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("%s holds no exported tables (no %s/**/*.parquet): devprof export SRC %s writes them", runstore.Display(root), tables.TableSpans, runstore.Display(root))
	}
	return nil
}
