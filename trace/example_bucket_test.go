package trace_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/trace"
)

// A log directory may be a bucket URL: s3://BUCKET/PATH, gs://…,
// azblob://…, or file:///PATH as here (so that the example runs anywhere).
// Many hosts of one job share a SessionID and write one run, each its own
// <host>.* objects.
func ExampleStartSession_bucket() {
	dir, _ := os.MkdirTemp("", "devprof-example")
	defer os.RemoveAll(dir)
	logdir := "file://" + dir // e.g. "s3://my-bucket/prof"

	s, err := trace.StartSession(logdir, trace.Options{
		DeviceTracerLevel: trace.Off,
		Hostname:          "worker-3",
		SessionID:         "job-1234",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, span := annotate.Begin(context.Background(), "work")
	span.End()
	if err := s.Stop(); err != nil {
		fmt.Println(err)
		return
	}
	out := s.Outputs()
	fmt.Println(strings.TrimPrefix(out.XPlane, logdir))
	// Output:
	// /plugins/profile/job-1234/worker-3.xplane.pb
}
