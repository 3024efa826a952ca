package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCommitPublishesWholeFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello")
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("destination visible before Commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // no effect after Commit
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello" {
		t.Fatalf("got %q, %v", b, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("partial")
	f.Abort()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("files left behind: %v", ents)
	}
}

func TestCreateInMissingDirFails(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "no", "such", "out.bin"))
	if err == nil {
		t.Fatal("want error")
	}
}

// TestLargeFileStartsWriteback writes 5 MiB in pieces of every size the
// writers use (small writes through the buffer, one large write past it)
// and checks that the writeback was started along the way and that the
// committed file holds exactly what was written.
func TestLargeFileStartsWriteback(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.bin")
	before := writebacks.Load()
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := 0; len(want) < 2<<20; i++ {
		piece := make([]byte, 1+i%5000)
		for j := range piece {
			piece[j] = byte(i + j)
		}
		want = append(want, piece...)
		f.Write(piece)
	}
	large := make([]byte, 3<<20)
	for j := range large {
		large[j] = byte(j * 13)
	}
	want = append(want, large...)
	f.Write(large)
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	// 2 MiB in small writes start 2; the 3 MiB write one more.
	if n := writebacks.Load() - before; n < 3 {
		t.Errorf("%d writebacks started for 5 MiB, want one per MiB written or more", n)
	}
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("committed file differs from what was written (%d bytes, want %d): %v", len(got), len(want), err)
	}
}
