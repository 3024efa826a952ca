//go:build !cgo

package main

import (
	"database/sql"
	"errors"
)

// errNeedsCgo is why this build cannot query: DuckDB is a C++ library.
var errNeedsCgo = errors.New("devprof-query needs cgo: DuckDB is a C++ library linked through cgo; build with CGO_ENABLED=1 and a C compiler")

// engineAvailable fails: this build has no DuckDB, which is better said
// before a bucket's tables are downloaded for nothing.
func engineAvailable() error { return errNeedsCgo }

// openTables fails: this build has no DuckDB.
func openTables(root string, names []string) (*sql.DB, error) { return nil, errNeedsCgo }
