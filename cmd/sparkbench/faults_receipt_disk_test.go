package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// smallDisk gives a folder on which a write of more than about 1 MiB fails: a 1 MiB tmpfs
// mounted there when this process may mount (root with CAP_SYS_ADMIN: CI and this machine),
// unmounted at the end; otherwise nil, and the caller limits the file size of a child process
// instead (prlimit --fsize), which fails the same write with "file too large".
func smallDisk(t *testing.T) (dir string, mounted bool) {
	t.Helper()
	dir = t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Logf("no tmpfs (%v): the child's file size is limited instead", err)
		return dir, false
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	return dir, true
}

// A folder receipt on a disk that fills up mid-write leaves nothing at the target (no half
// bundle, no SHA256SUMS naming missing files, no temporary folder beside it), says what failed
// and that nothing was written, and the same command succeeds once there is room (issue 30,
// item 7). A temporary folder left by a killed writer is removed by the next write; one of a
// live writer is left alone.
func TestFaultsReceiptFolderOnAFullDisk(t *testing.T) {
	base := t.TempDir()
	nb, id := demoNotebook(t, filepath.Join(base, "home"))
	disk, mounted := smallDisk(t)
	out := filepath.Join(disk, "receipt")
	var code int
	var errOut string
	if mounted {
		code, _, errOut = runCLI("receipt", id, "--notebook", nb, "--out", out)
	} else {
		if _, err := exec.LookPath("prlimit"); err != nil {
			t.Fatalf("neither a tmpfs mount nor prlimit (util-linux) is available: %v", err)
		}
		cmd := exec.Command("prlimit", "--fsize=200000", "--", builtBinary(t), "receipt", id, "--notebook", nb, "--out", out)
		b, err := cmd.CombinedOutput()
		errOut = string(b)
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if code == 0 {
		t.Fatalf("receipt on a full disk exited 0: %s", errOut)
	}
	full := "no space left on device"
	if !mounted {
		full = "file too large"
	}
	for _, want := range []string{full, "nothing was written at " + out, "run the command again"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errOut)
		}
	}
	ents, err := os.ReadDir(disk)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("a failed receipt left %s", filepath.Join(disk, e.Name()))
	}

	// Room again: the same command writes the bundle, which verifies. Beside it, a folder a
	// killed writer left (its process gone) is removed; a live writer's (PID 1) is not.
	roomy := t.TempDir()
	out = filepath.Join(roomy, "receipt")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(roomy, ".receipt.writing-"+strconv.Itoa(gone.Process.Pid)+"-123")
	live := filepath.Join(roomy, ".receipt.writing-1-456")
	for _, d := range []string{dead, live} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "receipt.md"), []byte("half"), 0o644)
	}
	if code, stdout, errOut := runCLI("receipt", id, "--notebook", nb, "--out", out); code != 0 {
		t.Fatalf("receipt with room: %d\n%s\n%s", code, stdout, errOut)
	}
	if code, stdout, errOut := runCLI("verify", out); code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, stdout, errOut)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the killed writer's folder %s is still there (%v)", dead, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live writer's folder was removed: %v", err)
	}
}
