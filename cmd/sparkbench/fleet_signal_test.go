package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote/sshdtest"
	"sparkbench/store"
)

// SIGHUP (a closed terminal or ssh session) and SIGTERM stop `fleet run` as Ctrl-C does: the
// run stops its legs here and on every host, leaves no study running and no process behind,
// and exits 1 — it is not killed with its studies left "running". The local member's
// llama-bench sleeps before its leg, so the signal lands while that leg runs.
func TestFaultsFleetRunStopsOnSIGHUPAndSIGTERM(t *testing.T) {
	loc := llamatest.Binaries(t)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			lab := exampleLab(t)
			dir := t.TempDir()
			fake := filepath.Join(dir, "bin")
			if err := os.Mkdir(fake, 0o755); err != nil {
				t.Fatal(err)
			}
			mark := fmt.Sprintf("31.%d", 4159+int(sig))
			script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" -m \"*) sleep %s ;; esac\nexec %q \"$@\"\n", mark, loc.Bench)
			if err := os.WriteFile(filepath.Join(fake, "llama-bench"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(loc.Dir) // the rest of the build as it is
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Name() != "llama-bench" {
					if err := os.Symlink(filepath.Join(loc.Dir, e.Name()), filepath.Join(fake, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
			}
			nb := filepath.Join(dir, "nb.sqlite")
			cmd := exec.Command(os.Args[0], "-test.run=^TestStudyHelperProcess$")
			cmd.Env = append(os.Environ(), studyHelperEnv+"="+strings.Join([]string{"fleet", "run", fleetExample(), "--hosts", lab.HostsFile,
				"--notebook", nb, "--llama-dir", fake}, "\x1f"))
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// the local leg is under way once its sleep runs
			sleeping := func() bool { return len(processesWith("sleep "+mark)) > 0 }
			for end := time.Now().Add(60 * time.Second); !sleeping(); time.Sleep(50 * time.Millisecond) {
				select {
				case err := <-done:
					t.Fatalf("fleet run ended (%v) before the local leg started\n%s\n%s", err, out.String(), errOut.String())
				default:
				}
				if time.Now().After(end) {
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("the local leg never started\n%s\n%s", out.String(), errOut.String())
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("fleet run did not stop within 60 s of %s\n%s\n%s", sig, out.String(), errOut.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1 (stopped, not killed by the signal)\n%s\n%s", err, out.String(), errOut.String())
			}
			for end := time.Now().Add(5 * time.Second); sleeping() && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			}
			if sleeping() {
				t.Errorf("the local leg's process is left behind after %s", sig)
			}
			for h, d := range lab.LlamaDirs {
				if left := sshdtest.Processes(d); len(left) > 0 {
					t.Errorf("left on %s after %s: %q", h, sig, left)
				}
			}
			n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			sts, err := n.Studies(context.Background())
			if err != nil || len(sts) == 0 {
				t.Fatalf("studies: %v (%d)", err, len(sts))
			}
			for _, st := range sts {
				if st.Status == store.StatusRunning {
					t.Errorf("study %d %q is left running after %s", st.ID, st.Name, sig)
				}
			}
			if rep, err := n.Verify(context.Background()); err != nil || !rep.OK() {
				t.Errorf("verify after %s: %+v %v", sig, rep.Broken, err)
			}
		})
	}
}

// processesWith lists the command lines of this machine's processes that contain s.
func processesWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		if cl := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "); strings.Contains(cl, s) {
			out = append(out, cl)
		}
	}
	return out
}
