// Command devprof-query runs SQL on the tables `devprof export` writes,
// through an embedded DuckDB, on one machine.
//
// Usage:
//
//	devprof-query [-json | -csv] [-max_rows N] DST 'SQL'
//	devprof-query -q NAME [-json | -csv] [-max_rows N] DST
//	devprof-query -list
//
// DST is the directory (or bucket URL) an export wrote; each table
// (spans, instants, counters, kernels, memory, flows, steps, hosts) is a
// view over its hive partitions, so a query says `select … from spans`.
// -q runs a named query instead: steps, kernels, devices and
// stragglers reproduce devprof analyze's figures (docs/tables.md says
// which exactly); -list shows them. The result is printed as a table,
// or with -json as a JSON array of objects (one per row, keys in column
// order), or with -csv as CSV with a header. Exit status: 0 done, 1
// failed (bad SQL, no tables), 2 usage error.
//
// It is a command apart from devprof because DuckDB's static library
// nearly doubles a binary (docs/tables.md, "Querying"); it needs cgo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/devprof/devprof/internal/runstore"
	"github.com/devprof/devprof/tables"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a mistake in the command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run is the command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := query(ctx, args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "devprof-query: %s\nusage: devprof-query [-q NAME] [-json | -csv] [-max_rows N] DST ['SQL'] (-h for more)\n", ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "devprof-query: %s\n", firstLine(err.Error()))
		return 1
	}
}

func query(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("devprof-query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	named := fs.String("q", "", "run the named query `NAME` (-list shows them) instead of SQL")
	list := fs.Bool("list", false, "list the named queries")
	asJSON := fs.Bool("json", false, "print the rows as a JSON array of objects")
	asCSV := fs.Bool("csv", false, "print the rows as CSV with a header")
	maxRows := fs.Int("max_rows", 1000, "print at most `N` rows of the terminal table (-json and -csv print all)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: devprof-query [-q NAME] [-json | -csv] [-max_rows N] DST ['SQL']

Runs SQL on the Parquet tables devprof export wrote to DST (a directory or
a bucket URL) through an embedded DuckDB. Each table is a view over its
hive partitions: spans, instants, counters, kernels, memory, flows, steps,
hosts (docs/tables.md).

  devprof-query /tmp/tables 'select host, count(*) from kernels group by host'
  devprof-query -q steps /tmp/tables
  devprof-query -q kernels -json s3://bucket/tables

`)
		fs.PrintDefaults()
	}
	// Flags may follow the arguments, as with the devprof command.
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{err.Error()}
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
	}
	if *list {
		if *named != "" || len(pos) > 0 {
			return usageError{"-list takes no other argument"}
		}
		for _, q := range namedQueries() {
			fmt.Fprintf(stdout, "%-11s %s\n", q.name, q.about)
		}
		return nil
	}
	if *asJSON && *asCSV {
		return usageError{"-json and -csv: pick one"}
	}
	if *maxRows < 1 {
		return usageError{"-max_rows must be at least 1"}
	}
	var text string
	switch {
	case *named != "" && len(pos) == 1:
		q, err := lookupQuery(*named)
		if err != nil {
			return usageError{err.Error()}
		}
		text = q.sql
	case *named != "":
		return usageError{fmt.Sprintf("-q %s takes one argument, DST (got %d)", *named, len(pos))}
	case len(pos) == 2:
		text = pos[1]
		if strings.TrimSpace(text) == "" {
			return usageError{"the SQL is empty"}
		}
	default:
		return usageError{fmt.Sprintf("want DST and SQL, or -q NAME and DST (got %d arguments)", len(pos))}
	}
	if err := engineAvailable(); err != nil {
		return err
	}
	root := pos[0]
	if runstore.IsURL(root) {
		local, err := os.MkdirTemp("", "devprof-query-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(local)
		if err := download(ctx, root, local); err != nil {
			return err
		}
		root = local
	}
	names, err := tablesUnder(root)
	if err != nil {
		return err
	}
	db, err := openTables(root, names)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, text)
	if err != nil {
		return err
	}
	defer rows.Close()
	var out resultWriter
	switch {
	case *asJSON:
		out = &jsonWriter{w: stdout}
	case *asCSV:
		out = newCSVWriter(stdout)
	default:
		out = &tableWriter{w: stdout, max: *maxRows}
	}
	return copyRows(rows, out)
}

// tablesUnder returns the tables that have at least one Parquet file
// under root, in tables.Tables' order: a view over a glob that matches
// nothing could not be created, and a table that is not there is better
// named missing by the query that uses it.
func tablesUnder(root string) ([]string, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: want the directory devprof export wrote", root)
	}
	var names []string
	for _, t := range tables.Tables {
		found := false
		err := filepath.WalkDir(filepath.Join(root, t), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && path == filepath.Join(root, t) {
					return fs.SkipAll
				}
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
				found = true
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if found {
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s holds no exported tables (no %s/**/*.parquet): devprof export SRC %s writes them", root, tables.TableSpans, root)
	}
	return names, nil
}

// firstLine is the first line of s: DuckDB's errors go on to quote the
// query with a caret under the fault, which a one-line message leaves out.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
