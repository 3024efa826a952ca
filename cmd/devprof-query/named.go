package main

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

// queryFiles are the named queries, one SQL text per file: the same
// text runs here on DuckDB and, unchanged, on Spark SQL
// (conformance/spark_check.py reads these files).
//
//go:embed queries/*.sql
var queryFiles embed.FS

// namedQuery is one of the queries -q names.
type namedQuery struct {
	name string
	// about is the file's first line after "-- name: ".
	about string
	sql   string
}

// namedQueries lists the named queries in name order.
func namedQueries() []namedQuery {
	entries, err := queryFiles.ReadDir("queries")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	var out []namedQuery
	for _, e := range entries {
		b, err := queryFiles.ReadFile("queries/" + e.Name())
		if err != nil {
			panic(err)
		}
		name := strings.TrimSuffix(e.Name(), ".sql")
		first, _, _ := strings.Cut(string(b), "\n")
		about := strings.TrimPrefix(strings.TrimPrefix(first, "-- "), name+": ")
		out = append(out, namedQuery{name: name, about: about, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b namedQuery) int { return strings.Compare(a.name, b.name) })
	return out
}

// lookupQuery returns the named query name, or an error listing them.
func lookupQuery(name string) (namedQuery, error) {
	var names []string
	for _, q := range namedQueries() {
		if q.name == name {
			return q, nil
		}
		names = append(names, q.name)
	}
	return namedQuery{}, fmt.Errorf("no query named %q (there are %s)", name, strings.Join(names, ", "))
}
