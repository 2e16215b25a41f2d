package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sparkbench/runner/sharedtest"
)

// A notebook open while its disk fills up (a real 1 MiB tmpfs, filled by another file): the
// write that finds no room fails as a DiskFullError naming the notebook and what to do, what
// was committed before reads back, and once there is room the same write goes through.
func TestWriteOnAFullDiskSaysSo(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		sharedtest.Require(t, fmt.Sprintf("no tmpfs mount here (%v): SQLite's full-disk error needs a real full file system; run as root (CI does)", err))
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "notebook.db")
	n := must[*Notebook](t)(Open(path))
	defer n.Close()
	st := must[Study](t)(n.CreateStudy(ctx, Study{Name: "full", Kind: StudyThroughput}))
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := filler.Write(buf); err != nil {
			break
		}
	}
	filler.Close()
	long := strings.Repeat("a finding long enough to need new pages. ", 400)
	_, err = n.AddFinding(ctx, Finding{StudyID: st.ID, Title: "t", Body: long})
	var full *DiskFullError
	if !errors.As(err, &full) || !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "notebook "+path+": the disk is full") ||
		!strings.Contains(err.Error(), "everything committed before it is kept") {
		t.Fatalf("write on a full disk: %v", err)
	}
	if got := must[Study](t)(n.Study(ctx, st.ID)); got.Name != "full" {
		t.Fatalf("the committed study: %+v", got)
	}
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddFinding(ctx, Finding{StudyID: st.ID, Title: "t", Body: long}); err != nil {
		t.Fatalf("with room again: %v", err)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("verify: %+v", rep.Broken)
	}
}
