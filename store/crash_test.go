package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
)

const crashHelperEnv = "SPARKBENCH_STORE_CRASH_HELPER"

// TestHelperProcess is the child of TestCrashLosesAtMostTheLastBatch: it streams samples into
// the notebook named by $SPARKBENCH_STORE_CRASH_HELPER and prints "committed N" after every
// committed batch, until it is killed.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(crashHelperEnv)
	if path == "" {
		t.Skip("helper process for TestCrashLosesAtMostTheLastBatch")
	}
	var leg atomic.Int64
	n, err := OpenWith(path, Options{OnCommit: func(ci CommitInfo) {
		if c, ok := ci.Legs[leg.Load()]; ok {
			fmt.Fprintf(os.Stdout, "committed %d\n", c)
		}
	}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	st, err := n.CreateStudy(ctx, Study{Name: "crash", Kind: StudyThroughput})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	l, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "streaming", Argv: []string{"llama-bench", "-o", "jsonl"}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	leg.Store(l.ID)
	fmt.Printf("leg %d\n", l.ID)
	line, _ := os.ReadFile(filepath.Join("..", "runner", "benchfmt", "testdata", "bench-jsonl.stdout"))
	tmpl, err := benchfmt.ParseJSONLLine([]byte(strings.SplitN(string(line), "\n", 2)[0]))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	for i := 0; ; i++ {
		r := tmpl
		r.NDepth = int64(i)
		r.AvgTs = float64(i) + 0.5
		if err := sw.AddBench(r); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		sw.AddTranscript([]byte("row " + strconv.Itoa(i) + "\r\n"))
		time.Sleep(200 * time.Microsecond)
	}
}

// TestCrashLosesAtMostTheLastBatch: a child process streams samples and is SIGKILLed; on
// reopen the file is intact, every sample of a committed batch is there, and the leg is
// journaled as interrupted.
func TestCrashLosesAtMostTheLastBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var legID, committed int64
	batches := 0
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "leg":
			legID, _ = strconv.ParseInt(f[1], 10, 64)
		case len(f) == 2 && f[0] == "committed":
			committed, _ = strconv.ParseInt(f[1], 10, 64)
			batches++
		case len(f) > 0 && f[0] == "error":
			t.Fatalf("helper: %s", sc.Text())
		}
		if batches >= 4 && committed > 0 {
			break
		}
	}
	deadline.Stop()
	if err := cmd.Process.Signal(os.Kill); err != nil { // SIGKILL mid-stream
		t.Fatal(err)
	}
	werr := cmd.Wait()
	if legID == 0 || committed == 0 {
		t.Fatalf("helper never committed (leg %d, %d rows): %v", legID, committed, werr)
	}
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
		t.Fatalf("helper was not killed by a signal: %v", werr)
	}

	n, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var integrity string
	if err := n.rdb.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: %q %v", integrity, err)
	}
	if len(n.Recovered) != 1 || n.Recovered[0] != legID {
		t.Fatalf("recovered %v, want leg %d", n.Recovered, legID)
	}
	var count, maxSeq int64
	n.rdb.QueryRow("SELECT COUNT(*), COALESCE(MAX(seq), -1) FROM bench_samples WHERE leg_id = ?", legID).Scan(&count, &maxSeq)
	if count < committed || maxSeq != count-1 {
		t.Fatalf("after the kill: %d rows (max seq %d); %d were reported committed", count, maxSeq, committed)
	}
	var bad int
	n.rdb.QueryRow("SELECT COUNT(*) FROM bench_samples WHERE leg_id = ? AND (n_depth <> seq OR avg_ts <> seq + 0.5)", legID).Scan(&bad)
	if bad != 0 {
		t.Fatalf("%d rows with wrong values", bad)
	}
	leg, err := n.Leg(ctx, legID)
	if err != nil || leg.State != LegInterrupted || leg.Class != ClassInterrupted {
		t.Fatalf("leg %+v %v", leg, err)
	}
	entries, _ := n.Journal(ctx, 0, 0, 0)
	last := entries[len(entries)-1]
	var p legFinishedPayload
	json.Unmarshal(last.Payload, &p)
	if last.Kind != KindLegFinished || p.State != LegInterrupted || p.Leg != legID || p.BenchRows != count {
		t.Fatalf("last journal entry %s %s", last.Kind, last.Payload)
	}
	if rep, err := n.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("verify after crash: %+v %v", rep, err)
	}
	tr, _ := n.Transcript(ctx, legID)
	t.Logf("killed after %d reported batches: %d rows reported committed, %d rows on disk, %d transcript bytes, integrity ok", batches, committed, count, len(tr))
	n.Close()
	// reopening again recovers nothing more
	n2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if len(n2.Recovered) != 0 {
		t.Fatalf("recovered twice: %v", n2.Recovered)
	}
}
