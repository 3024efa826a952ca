package profileserver_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/devprof/devprof/annotate"
	"github.com/devprof/devprof/exporters/xplane"
	"github.com/devprof/devprof/profileserver"
	pb "github.com/devprof/devprof/profileserver/profilerpb"
	"github.com/devprof/devprof/trace"
)

// A program starts the server once and keeps it for its lifetime; here on
// a port of the loopback interface the system picks.
func ExampleStartServer() {
	srv, err := profileserver.StartServer("127.0.0.1:0", profileserver.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	fmt.Println("listening:", srv.Addr() != "127.0.0.1:0")
	// Output:
	// listening: true
}

// What jax.collect_profile does, as a Go client: Profile records the
// program for the request's duration (here until Terminate) and answers
// with the capture's XSpace, which the client saves as <host>.xplane.pb.
func ExampleStartServer_capture() {
	srv, err := profileserver.StartServer("127.0.0.1:0", profileserver.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///"+srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	client := pb.NewProfilerServiceClient(conn)

	// The program's own work, annotated as usual, once the capture runs.
	go func() {
		for {
			if st, ok := trace.Running(); ok && st.Capture {
				break
			}
			time.Sleep(time.Millisecond)
		}
		for range 3 {
			_, span := annotate.Begin(context.Background(), "handle")
			span.End()
		}
		client.Terminate(context.Background(), &pb.TerminateRequest{SessionId: "run1"})
	}()

	resp, err := client.Profile(context.Background(), &pb.ProfileRequest{
		DurationMs: 60_000,
		SessionId:  "run1",
		Opts:       &pb.ProfileOptions{Version: 1, HostTracerLevel: 2, DurationMs: 60_000},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tool := range resp.GetToolData() {
		snap, err := xplane.Read(bytes.NewReader(tool.GetData()))
		if err != nil {
			fmt.Println(err)
			return
		}
		n := 0
		for _, r := range snap.Events {
			if snap.Name(r) == "handle" {
				n++
			}
		}
		fmt.Printf("%s: %d handle spans\n", tool.GetName(), n)
	}
	// Output:
	// xplane.pb: 3 handle spans
}
