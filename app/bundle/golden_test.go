package bundle

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sparkbench/app/receipt"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.* from the current code")

// The seed fixture's receipt.md, byte for byte: a change to the receipt writer that moves one
// byte of it fails here (rewrite with -update only when the change is meant).
func TestCapacitySeedReceiptGolden(t *testing.T) {
	files := seedBundle(t, seedDir, "/nonexistent-home")
	path := filepath.Join("testdata", "seed-receipt.golden.md")
	got := files[receipt.FileReceipt]
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("receipt.md differs from %s (%d bytes, want %d); diff it, and rewrite with -update only when the change is meant", path, len(got), len(want))
	}
}
