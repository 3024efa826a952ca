package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/devprof/devprof/exporters/formats"
	pb "github.com/devprof/devprof/profileserver/profilerpb"
)

// snapshotTimeout is a snapshot's per-host limit when --timeout is not
// given: the server answers at once, so this is the time to copy and send
// its ring.
const snapshotTimeout = time.Minute

// runCollectSnapshot is devprof collect --snapshot ADDR[,ADDR…]: each
// host's flight recorder (GetSnapshot) into one run directory, written
// exactly as a capture is (<host>.xplane.pb per host, the merged
// collect.pftrace, its link unless --no_perfetto_link).
func runCollectSnapshot(fs *flag.FlagSet, logdir string, noLink bool, timeout time.Duration, stdout, stderr io.Writer) error {
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "devprof collect --snapshot: want ADDR[,ADDR…] (and no duration: a snapshot is what the hosts already hold), got %d arguments\n", fs.NArg())
		fs.Usage()
		return errUsage
	}
	addrs, err := collectAddrs(fs.Arg(0))
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = snapshotTimeout
	}
	if logdir == "" {
		if logdir, err = os.MkdirTemp("", "devprof-collect-"); err != nil {
			return err
		}
	}
	run := time.Now().Format("2006_01_02_15_04_05")
	runDir := filepath.Join(logdir, "plugins", "profile", run)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("cannot create the run directory: %w", err)
	}
	fmt.Fprintf(stderr, "devprof collect: taking the flight-recorder snapshot of %d host(s)\n", len(addrs))
	results := make([]error, len(addrs))
	paths := make([]string, len(addrs))
	sem := make(chan struct{}, collectConcurrency)
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			paths[i], results[i] = snapshotOne(addr, runDir, timeout)
		}()
	}
	wg.Wait()
	var errs []error
	var hosts []collectedHost
	for i, err := range results {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addrs[i], err))
			continue
		}
		snap, err := formats.XPlane.ReadFile(paths[i], nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: the xplane it sent cannot be read back: %w", addrs[i], err))
			continue
		}
		hosts = append(hosts, collectedHost{name: addrs[i], snap: snap})
	}
	for _, err := range errs {
		fmt.Fprintf(stderr, "devprof collect: %v\n", err)
	}
	if len(hosts) == 0 {
		for _, p := range paths {
			if p != "" {
				os.Remove(p)
			}
		}
		os.Remove(runDir) // only if empty: TensorBoard would list it as a run
		return fmt.Errorf("no host returned a snapshot")
	}
	fmt.Fprintf(stdout, "%s\n", runDir)
	fmt.Fprintf(stderr, "devprof collect: wrote %d of %d host(s) to %s; open with xprof --logdir %s, or devprof summary %s\n",
		len(hosts), len(addrs), runDir, logdir, runDir)
	merged := filepath.Join(runDir, collectMergedName)
	if err := formats.WriteFile(merged, formats.Perfetto, mergeHosts(hosts)); err != nil {
		errs = append(errs, fmt.Errorf("merged trace: %w", err))
		fmt.Fprintf(stderr, "devprof collect: cannot write the merged trace: %v\n", err)
		merged = ""
	} else {
		fmt.Fprintf(stderr, "devprof collect: merged %d host(s), one process each, into %s\n", len(hosts), merged)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d host(s) failed", len(errs), len(addrs))
	}
	if merged != "" && !noLink {
		return serve(merged, 0, stderr)
	}
	return nil
}

// snapshotOne asks one host for its flight recorder's snapshot and writes
// <host>.xplane.pb.
func snapshotOne(addr, runDir string, timeout time.Duration) (string, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<31-1)))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := pb.NewProfilerServiceClient(conn).GetSnapshot(ctx, &pb.GetSnapshotRequest{})
	if err != nil {
		return "", err
	}
	if resp.GetEmptyTrace() {
		return "", errors.New("its flight recorder holds no event in its window")
	}
	path := filepath.Join(runDir, fileHostName(addr)+formats.XPlane.SessionExt)
	for _, td := range resp.GetToolData() {
		if td.GetName() == strings.TrimPrefix(formats.XPlane.SessionExt, ".") {
			return path, writeFileAtomic(path, td.GetData())
		}
	}
	if x := resp.GetXspace(); len(x) > 0 {
		return path, writeFileAtomic(path, x)
	}
	return "", errors.New("the answer holds no xplane.pb")
}
