//go:build cgo

package main

import (
	"database/sql"
	"fmt"
	"strings"

	// DuckDB's prebuilt static library, through database/sql: the only
	// package of the module that links it (docs/tables.md says why it is
	// a command of its own).
	_ "github.com/duckdb/duckdb-go/v2"
)

// engineAvailable reports that this build can query (it links DuckDB).
func engineAvailable() error { return nil }

// openTables opens an in-memory DuckDB database with one view per table
// that has files under root (docs/tables.md's layout), each a glob over
// the table's hive partitions: a query says `from spans`, not the
// read_parquet call. Partition values stay strings (a host named 10 is
// not a number), as the columns inside the files are.
func openTables(root string, names []string) (*sql.DB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	// One connection: views live in the database, but a pool opening a
	// second connection mid-query gains nothing here.
	db.SetMaxOpenConns(1)
	for _, t := range names {
		glob := strings.TrimSuffix(root, "/") + "/" + t + "/**/*.parquet"
		stmt := fmt.Sprintf("create view %s as select * from read_parquet(%s, hive_partitioning = true, hive_types_autocast = false)", t, quoteSQL(glob))
		if _, err := db.Exec(stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("table %s: %s", t, firstLine(err.Error()))
		}
	}
	return db, nil
}

// quoteSQL is s as an SQL string literal.
func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
