package quantrun

import (
	"strings"
	"testing"
)

// TestCheckDisk: the ladder refuses, before quantizing anything, derived models that the
// cache's disk cannot hold (the upper estimate against the free space statfs reports), and
// lets a ladder that fits go on.
func TestCheckDisk(t *testing.T) {
	e := &engine{cacheDir: t.TempDir()}
	free, err := freeBytes(e.cacheDir)
	if err != nil {
		t.Skipf("free space not measurable here: %v", err)
	}
	// A reference so large that one Q8_0 of it needs more than the disk has.
	err = e.checkDisk([]string{"Q8_0", "Q4_0"}, free*4, "MOSTLY_F16")
	if err == nil || !strings.Contains(err.Error(), "the derived models need about") || !strings.Contains(err.Error(), "list fewer quants") {
		t.Fatalf("want a refusal, got %v", err)
	}
	if err := e.checkDisk([]string{"Q8_0", "Q4_0"}, 50<<20, "MOSTLY_F16"); err != nil {
		t.Fatalf("a 50 MiB reference: %v", err)
	}
	var said []string
	e.opts.Event = func(s string) { said = append(said, s) }
	if err := e.checkDisk([]string{"Q9_Z"}, 50<<20, "MOSTLY_F16"); err != nil || len(said) != 1 || !strings.Contains(said[0], "no size estimate for Q9_Z") {
		t.Fatalf("unknown type: %v %v", err, said)
	}
}
