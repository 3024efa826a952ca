package runstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublishLocal: staged files appear at the destination in their
// folders; a file already there refuses the whole set before any is
// placed; a failure part-way takes back what was placed.
func TestPublishLocal(t *testing.T) {
	staging, dst := t.TempDir(), filepath.Join(t.TempDir(), "dst")
	files := []string{"a/x=1/f.bin", "b/g.bin", "hosts/h.bin"}
	for _, rel := range files {
		p := filepath.Join(staging, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	placed, err := Publish(context.Background(), staging, files, dst)
	if err != nil || len(placed) != 3 {
		t.Fatalf("Publish: %v, placed %q", err, placed)
	}
	for _, rel := range files {
		if b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel))); err != nil || string(b) != rel {
			t.Errorf("%s: %q, %v", rel, b, err)
		}
	}
	// Again: every file is there, so nothing is placed.
	if _, err := Publish(context.Background(), staging, files, dst); err == nil || !strings.Contains(err.Error(), "already there") {
		t.Errorf("publishing over existing files: %v", err)
	}
	// A staged file that is missing fails part-way: the first file
	// placed is taken back, and its folders too.
	dst2 := filepath.Join(t.TempDir(), "dst2")
	if _, err := Publish(context.Background(), staging, []string{"a/x=1/f.bin", "missing/m.bin"}, dst2); err == nil {
		t.Fatal("a missing staged file: no error")
	}
	if _, err := os.Stat(filepath.Join(dst2, "a")); !os.IsNotExist(err) {
		t.Errorf("after a failure, %s/a is still there (%v)", dst2, err)
	}
}
