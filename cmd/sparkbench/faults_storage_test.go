package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/sharedtest"
)

// storageNotebook is a small real notebook in dir: a registered study and one imported leg.
func storageNotebook(t *testing.T, dir string) string {
	t.Helper()
	nb := filepath.Join(dir, "notebook.db")
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	plan := writeSmallPlan(t, dir, "storage", model, capacitySHA(t, model), "0", 3)
	if code, out, errOut := runCLI("study", "register", plan, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI("import", benchSample(t, "bench-depth-jsonl.stdout"), "--notebook", nb); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	return nb
}

// readOnlyView mounts dir again, read only, at a new folder (a bind mount: read-only for root
// too) and returns that folder; unmounted at the end.
func readOnlyView(t *testing.T, dir string) string {
	t.Helper()
	view := t.TempDir()
	if err := syscall.Mount(dir, view, "", syscall.MS_BIND, ""); err != nil {
		sharedtest.Require(t, fmt.Sprintf("cannot bind-mount here (%v): this test needs CAP_SYS_ADMIN; run as root (CI does)", err))
	}
	t.Cleanup(func() { _ = syscall.Unmount(view, syscall.MNT_DETACH) })
	if err := syscall.Mount("", view, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	return view
}

// TestFaultsReadOnlyNotebook (issue 30 item 11): a notebook on a read-only file system (a real
// read-only bind mount) answers every command that only reads it, and each command that would
// record says the notebook is read-only for this user, why, and what to do (exit 2) — never
// "unable to open database file: no such file or directory". Nothing is written.
func TestFaultsReadOnlyNotebook(t *testing.T) {
	src := t.TempDir()
	storageNotebook(t, src)
	view := readOnlyView(t, src)
	nb := filepath.Join(view, "notebook.db")
	before, err := os.ReadFile(filepath.Join(src, "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"study", "show", "1"}, `study 1 "storage"`},
		{[]string{"study", "list"}, "storage"},
		{[]string{"notebook", "verify"}, "intact"},
		{[]string{"export", "2"}, "avg_ts"},
	} {
		code, out, errOut := runCLIWithin(t, time.Minute, append(c.args, "--notebook", nb)...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v on a read-only notebook: exit %d\n%s%s", c.args, code, out, errOut)
		}
	}
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	plan := writeSmallPlan(t, t.TempDir(), "another", model, capacitySHA(t, model), "0", 3)
	for _, args := range [][]string{
		{"study", "register", plan},
		{"study", "run", "1"},
		{"finding", "add", "1", "--text", "x"},
		{"import", benchSample(t, "bench-depth-jsonl.stdout")},
	} {
		code, out, errOut := runCLIWithin(t, time.Minute, append(args, "--notebook", nb)...)
		want := "notebook " + nb + " is read-only for this user (the file: on a read-only file system); commands that only read it still work"
		if code != 2 || !strings.Contains(errOut, want) || strings.Contains(errOut, "no such file") {
			t.Errorf("%v on a read-only notebook: exit %d (want 2 and %q)\n%s%s", args, code, want, out, errOut)
		}
	}
	after, err := os.ReadFile(filepath.Join(src, "notebook.db"))
	if err != nil || string(after) != string(before) {
		t.Errorf("the read-only notebook changed (%v)", err)
	}
}

// A zero-byte notebook is named as empty, not as missing (issue 30 item 11).
func TestFaultsEmptyNotebook(t *testing.T) {
	nb := filepath.Join(t.TempDir(), "notebook.db")
	if err := os.WriteFile(nb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"study", "show", "1"}, {"study", "list"}, {"notebook", "verify"}} {
		code, out, errOut := runCLI(append(args, "--notebook", nb)...)
		if code != 2 || !strings.Contains(errOut, nb+" is 0 bytes, so nothing was ever recorded in it") || strings.Contains(errOut, "no such file") {
			t.Errorf("%v on an empty notebook: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// TestFaultsNotebookDiskFull (issue 30, "vague today"): a notebook whose disk fills up (a real
// 1 MiB tmpfs, filled by another file) refuses the write naming the notebook, that the disk is
// full, that what was committed is kept and how to go on; the notebook then verifies intact,
// and once there is room the same command succeeds.
func TestFaultsNotebookDiskFull(t *testing.T) {
	disk, mounted := smallDisk(t)
	if !mounted {
		sharedtest.Require(t, "no tmpfs mount here (not root): SQLite's full-disk error needs a real full file system; run as root (CI does)")
	}
	nb := storageNotebook(t, disk)
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break // the disk is full
		}
	}
	f.Close()
	add := []string{"finding", "add", "1", "--text", strings.Repeat("a finding long enough to need a new page. ", 200), "--notebook", nb}
	code, out, errOut := runCLIWithin(t, time.Minute, add...)
	for _, want := range []string{"notebook " + nb + ": the disk is full", "everything committed before it is kept", "free space on that disk, then run the command again"} {
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("finding add on a full disk: exit %d, lacks %q\n%s%s", code, want, out, errOut)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLIWithin(t, time.Minute, "notebook", "verify", "--notebook", nb); code != 0 || !strings.Contains(out, "intact") {
		t.Errorf("verify after the full disk: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLIWithin(t, time.Minute, add...); code != 0 {
		t.Errorf("finding add with room again: %d\n%s%s", code, out, errOut)
	}
}
