package main

// Issue 30 item 6: a capacity study stopped in the middle of a server lifetime and resumed
// keeps both attempts' files, and its receipt verifies and imports.

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// stopCapacityMidLifetime runs `capacity run ID --json` as its own process and, at the first
// request record the run reports, freezes that lifetime's llama-server (SIGSTOP: no further
// request of the lifetime can complete, so the lifetime cannot finish before the stop) and
// sends the run SIGINT. It returns the lifetime it stopped in and the run's stderr.
func stopCapacityMidLifetime(t *testing.T, bin, nb, id string) (lifetime, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, "capacity", "run", id, "--notebook", nb, "--json", "--grace", "1s")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	lines := make(chan []byte)
	go func() { // the run's events, until its stdout closes
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	limit := time.NewTimer(5 * time.Minute)
	defer limit.Stop()
	pids := map[string]int{}
	for open := true; open; {
		var line []byte
		select {
		case line, open = <-lines:
		case <-limit.C:
			t.Fatalf("capacity run %s: still running after 5 minutes (stopped in %q)", id, lifetime)
		}
		var ev capacity.RunEvent
		if !open || json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch {
		case ev.Type == capacity.ServerReady && ev.Server != nil:
			pids[ev.Lifetime] = ev.Server.Pid
		case ev.Type == capacity.RequestDone && lifetime == "":
			pid := pids[ev.Lifetime]
			if pid <= 0 {
				t.Fatalf("a request of %s before its server_ready", ev.Lifetime)
			}
			lifetime = ev.Lifetime
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatalf("freeze llama-server %d: %v", pid, err)
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("capacity run %s: its output closed but it did not exit within a minute", id)
	}
	killed = true
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || lifetime == "" {
		t.Fatalf("capacity run %s stopped in %q: %v, want exit 1\n%s", id, lifetime, err, errBuf.String())
	}
	return lifetime, errBuf.String()
}

// capacityLegRecord is one leg of a capacity study as its journal recorded it.
type capacityLegRecord struct {
	label, runDir, files, class string
	rows                        int64
}

// capacityLegRecords reads the study's legs from the journal: leg.started's run folder and
// files, leg.finished's class and request rows.
func capacityLegRecords(t *testing.T, nb string, id int64) []capacityLegRecord {
	t.Helper()
	_, es := studyEntries(t, nb, id)
	var legs []capacityLegRecord
	at := map[int64]int{}
	for _, e := range es {
		switch e.Kind {
		case store.KindLegStarted:
			var p struct {
				Leg    int64  `json:"leg"`
				Label  string `json:"label"`
				Detail struct {
					RunDir string `json:"run_dir"`
					Files  string `json:"files"`
				} `json:"detail"`
			}
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			at[p.Leg] = len(legs)
			legs = append(legs, capacityLegRecord{label: p.Label, runDir: p.Detail.RunDir, files: p.Detail.Files})
		case store.KindLegFinished:
			var p struct {
				Leg   int64  `json:"leg"`
				Class string `json:"class"`
				Rows  int64  `json:"request_rows"`
			}
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			i, ok := at[p.Leg]
			if !ok {
				t.Fatalf("leg.finished of leg %d, never started", p.Leg)
			}
			legs[i].class, legs[i].rows = p.Class, p.Rows
		}
	}
	return legs
}

// A capacity run stopped (SIGINT) in the middle of a server lifetime, after it recorded
// requests, then resumed to completion: the stopped attempt's files stay in the run folder
// beside the new attempt's, each leg's request rows are in the files its journal entry names,
// and the study's receipt (a folder and a .tar.gz) verifies and imports into a new notebook.
func TestFaultsCapacityStopResumeReceiptImports(t *testing.T) {
	llamatest.Binaries(t)
	bin := builtBinary(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	nb := filepath.Join(dir, "notebook.db")
	// Four requests of 64 tokens per lifetime: the stop comes after the first (the server is
	// frozen before the rest can complete).
	const measured, passes = 4, 2
	writePlan := func(name string) string {
		plan := smallCapacityPlan(t, dir, name)
		var m map[string]any
		b, _ := os.ReadFile(plan)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["n_predict"], m["measured"] = 64, measured
		b, _ = json.MarshalIndent(m, "", "  ")
		if err := os.WriteFile(plan, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return plan
	}
	code, out, errOut := runCapacity("register", writePlan("stop resume import"), "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: exit %d\n%s%s", code, out, errOut)
	}
	id := registeredID(t, out)
	sid, _ := strconv.ParseInt(id, 10, 64)

	// The stop must cut a lifetime after it recorded requests. Should the machine be so slow
	// that the lifetime finished before its server was frozen, the resumed run is stopped the
	// same way in the next lifetime.
	var cut string
	for try := 1; ; try++ {
		var stopErr string
		cut, stopErr = stopCapacityMidLifetime(t, bin, nb, id)
		t.Logf("stop %d: in %s:\n%s", try, cut, stopErr)
		var halted *capacityLegRecord
		legs := capacityLegRecords(t, nb, sid)
		for i, l := range legs {
			if (l.label == cut || strings.HasPrefix(l.label, cut+" (attempt ")) && l.class == "halted" && l.rows > 0 {
				halted = &legs[i]
			}
		}
		if halted != nil {
			break
		}
		if try == 3 {
			t.Fatalf("%d stops, none cut a lifetime after it recorded requests: %+v", try, legs)
		}
	}

	code, out, errOut = runCapacity("run", id, "--notebook", nb)
	if code != 0 || !strings.Contains(out, "resumed") {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("resumed:\n%s", out)

	// Every leg's rows are in the files its leg.started names, the stopped attempt's too.
	legs := capacityLegRecords(t, nb, sid)
	attempts := 0
	folders := map[string]string{} // each attempt's folder: one attempt's only
	for _, l := range legs {
		if strings.HasPrefix(l.label, cut+" (attempt ") {
			attempts++
		}
		f := filepath.Join(l.runDir, l.files)
		if other, ok := folders[f]; ok {
			t.Errorf("legs %s and %s name the same folder %s", other, l.label, f)
		}
		folders[f] = l.label
		if l.rows == 0 {
			continue
		}
		path := filepath.Join(l.runDir, l.files, capacity.RunRequestsFile)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("leg %s: %v", l.label, err)
			continue
		}
		rf, err := capacity.ReadRequests(path, data)
		if err != nil {
			t.Errorf("leg %s: %v", l.label, err)
		} else if int64(len(rf.Records)) != l.rows {
			t.Errorf("leg %s (%s): %s holds %d request records, its leg.finished recorded %d", l.label, l.class, path, len(rf.Records), l.rows)
		}
	}
	if attempts == 0 {
		t.Errorf("%s was not run again: %+v", cut, legs)
	}

	// A comparison reads each lifetime's request records from the attempt the study was
	// assembled from: every cell has both passes' measured requests on either side.
	registerAndRunCapacity(t, writePlan("stop resume import B"), nb, "2")
	code, out, errOut = runCapacity("compare", id, "2", "--notebook", nb, "--json")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s%s", code, out, errOut)
	}
	var c workbench.CapacityComparison
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Cells) == 0 {
		t.Fatalf("compare --json: %v\n%s", err, out)
	}
	for _, cell := range c.Cells {
		for _, p := range cell.Pairs {
			if p.E2EMs.Base.N != measured*passes || p.E2EMs.New.N != measured*passes {
				t.Errorf("compare P%d/C%d: %d and %d requests, want %d on either side", cell.Slots, cell.Clients, p.E2EMs.Base.N, p.E2EMs.New.N, measured*passes)
			}
		}
	}

	folder, tgz := filepath.Join(dir, "receipt"), filepath.Join(dir, "receipt.tar.gz")
	for _, dst := range []string{folder, tgz} {
		if code, out, errOut := runCLI("receipt", id, "--out", dst, "--notebook", nb); code != 0 {
			t.Fatalf("receipt --out %s: exit %d\n%s%s", dst, code, out, errOut)
		}
		if code, out, errOut := runCLI("verify", dst); code != 0 {
			t.Fatalf("verify %s: exit %d\n%s%s", dst, code, out, errOut)
		}
		fresh := filepath.Join(dir, "imported-"+filepath.Base(dst)+".db")
		code, out, errOut := runCLI("import", dst, "--notebook", fresh)
		if code != 0 {
			t.Fatalf("import %s: exit %d\n%s%s", dst, code, out, errOut)
		}
		// The imported study exports a receipt that verifies again.
		again := filepath.Join(dir, "again-"+filepath.Base(dst))
		if code, out, errOut := runCLI("receipt", registeredID(t, out), "--out", again, "--notebook", fresh); code != 0 {
			t.Fatalf("receipt of the imported study: exit %d\n%s%s", code, out, errOut)
		}
		if code, out, errOut := runCLI("verify", again); code != 0 {
			t.Fatalf("verify the imported study's receipt: exit %d\n%s%s", code, out, errOut)
		}
	}
}
