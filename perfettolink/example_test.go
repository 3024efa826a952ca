package perfettolink_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/devprof/devprof/perfettolink"
)

func ExampleLink() {
	fmt.Println(perfettolink.Link(perfettolink.DefaultAddr, "run 1.pftrace"))
	// Output:
	// https://ui.perfetto.dev/#!/?url=http%3A%2F%2F127.0.0.1%3A9001%2Frun%25201.pftrace
}

// ExampleServe shows the usual blocking use after an exporter has written a
// trace: print the link and wait until the UI has fetched the file. (Not run
// by go test, since it waits for a browser.)
func ExampleServe() {
	ctx := context.Background()
	err := perfettolink.Serve(ctx, "out/host.pftrace", perfettolink.Options{Timeout: 10 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
}

// ExampleStart uses the non-blocking form. A real program would wait on
// s.Done() (or s.Wait()) while doing other work; this one gives up at once.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "perfettolink-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "host.pftrace")
	if err := os.WriteFile(path, []byte{0x0a, 0x00}, 0o644); err != nil {
		log.Fatal(err)
	}

	s, err := perfettolink.Start(path, perfettolink.Options{
		Addr: "127.0.0.1:0", // any free port; ui.perfetto.dev itself needs the default 127.0.0.1:9001
		Out:  io.Discard,    // the default, os.Stderr, gets the link and an ssh hint
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(s.URL(), "https://ui.perfetto.dev/#!/?url=http%3A%2F%2F127.0.0.1%3A"))
	fmt.Println(strings.HasSuffix(s.TraceURL(), "/host.pftrace"))

	s.Close()
	<-s.Done()
	fmt.Println(s.Wait() != nil) // closed before anyone fetched it
	// Output:
	// true
	// true
	// true
}
