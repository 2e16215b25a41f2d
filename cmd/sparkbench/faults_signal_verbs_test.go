package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
)

// TestFaultsNotebookVerbsStopOnSIGTERMAndSIGHUP (issue 30, "vague today"): the verbs that
// write the notebook outside a run (import, finding add) stop on SIGTERM and SIGHUP as they do
// on Ctrl-C: the process ends by itself, saying why, instead of being killed by the signal;
// nothing half-written is left, and the notebook verifies. Each process is caught waiting for
// the notebook's write lock, which the test holds.
func TestFaultsNotebookVerbsStopOnSIGTERMAndSIGHUP(t *testing.T) {
	bin := builtBinary(t)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	bench := filepath.Join("..", "..", "runner", "benchfmt", "testdata", "bench-jsonl.stdout")
	if code, out, errOut := runCLI("import", "--study", "signals", bench, "--notebook", nb); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	code, out, errOut := runCLI("study", "register", leasePlan(t, dir, "signals plan", tiny), "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	verbs := [][]string{
		{"finding", "add", "signals plan", "--text", "a finding stopped by a signal"},
		{"import", "--study", "signals again", filepath.Join("..", "..", "runner", "benchfmt", "testdata", "batched-md.stdout")},
	}
	// Every verb under both signals at once, all waiting for the one write lock the test holds
	// (a waiting write gives up after the 5 s busy timeout; one at a time, four would take 26 s).
	db, err := sql.Open("sqlite3", "file:"+nb+"?_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin() // the write lock, held while the verbs wait for it
	if err != nil {
		t.Fatal(err)
	}
	type started struct {
		sig  syscall.Signal
		args []string
		p    *proc
	}
	var procs []started
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		for _, args := range verbs {
			procs = append(procs, started{sig, args, startCLI(t, bin, append(args, "--notebook", nb)...)})
		}
	}
	time.Sleep(1500 * time.Millisecond)
	for _, s := range procs {
		if err := syscall.Kill(s.p.cmd.Process.Pid, s.sig); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range procs {
		s.p.wait(t, time.Minute)
	}
	tx.Rollback()
	db.Close()
	for _, s := range procs {
		p := s.p
		if p.code != 1 || !strings.Contains(p.err.String(), "stopped ("+s.sig.String()+" signal received) before it was written: nothing of it was recorded") {
			t.Errorf("%s %v: exit %d (-1: killed by the signal)\nstdout %s\nstderr %s", s.sig, s.args, p.code, p.out.String(), p.err.String())
		}
		t.Logf("%s %v: exit %d: %s", s.sig, s.args, p.code, strings.TrimSpace(p.err.String()))
	}
	if code, out, errOut := runCLI("notebook", "verify", "--notebook", nb); code != 0 || !strings.Contains(out, ": intact: ") {
		t.Errorf("verify: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI("finding", "add", "signals plan", "--text", "a finding with the lock free", "--notebook", nb); code != 0 {
		t.Errorf("finding add afterwards: %d\n%s%s", code, out, errOut)
	}
}
