package runner

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/llamatest"
)

// timing fields differ between any two runs; every other field must be identical.
var timingFields = map[benchfmt.Field]bool{
	benchfmt.FTestTime: true, benchfmt.FAvgNs: true, benchfmt.FStddevNs: true, benchfmt.FAvgTs: true,
	benchfmt.FStddevTs: true, benchfmt.FSamplesNs: true, benchfmt.FSamplesTs: true,
}

// directRun runs llama-bench args -o jsonl under a pipe (no pty, no runner) and parses stdout.
func directRun(t testing.TB, bench string, args []string, env ...string) []benchfmt.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bench, append(append([]string{}, args...), "-o", "jsonl")...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("direct %v: %v: %s", args, err, stderr.String())
	}
	var rows []benchfmt.Result
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		r, err := benchfmt.ParseJSONLLine(sc.Bytes())
		if err != nil {
			t.Fatalf("direct row: %v", err)
		}
		rows = append(rows, r)
	}
	return rows
}

func extraKeys(r benchfmt.Result) []string {
	var k []string
	for key := range r.Extra {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

// TestRealLegMatchesPipe: the rows parsed through the runner (pty, --progress) carry the same
// fields and the same non-timing values as the same command under a pipe.
func TestRealLegMatchesPipe(t *testing.T) {
	bench := realBench(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	args := []string{"-m", model, "-p", "32", "-n", "16", "-d", "0,32", "-r", "2", "-t", llamatest.Threads}
	direct := directRun(t, bench, args)
	leg := StartLeg(context.Background(), LegSpec{Bench: bench, Args: args, CVGate: CVGate{Off: true}})
	evs := collect(t, leg.Events(), 3*time.Minute)
	res := leg.Result()
	assertGone(t, leg.Pid())
	if res.Exit.Class != ClassOK {
		t.Fatalf("runner: %+v\n%s", res.Exit, lineTexts(evs))
	}
	got := res.Results()
	if len(got) != len(direct) || len(got) != 4 || res.Exit.Expected != 4 {
		t.Fatalf("runner %d rows (expected %d), direct %d", len(got), res.Exit.Expected, len(direct))
	}
	for i := range direct {
		a, b := got[i].Result, direct[i]
		if a.Known != b.Known || !reflect.DeepEqual(extraKeys(a), extraKeys(b)) {
			t.Errorf("row %d: field sets differ: runner %v extra %v, direct %v extra %v", i, a.Known.Fields(), extraKeys(a), b.Known.Fields(), extraKeys(b))
		}
		if !a.Complete() {
			t.Errorf("row %d lacks %v", i, a.Missing())
		}
		for f := benchfmt.Field(0); f < benchfmt.NumFields; f++ {
			va, _ := a.Value(f)
			vb, _ := b.Value(f)
			if timingFields[f] {
				continue
			}
			if !reflect.DeepEqual(va, vb) {
				t.Errorf("row %d %s: runner %v, direct %v", i, f, va, vb)
			}
		}
		if len(a.SamplesTs) != len(b.SamplesTs) || len(a.SamplesNs) != 2 || a.AvgTs <= 0 {
			t.Errorf("row %d: samples %d vs %d", i, len(a.SamplesTs), len(b.SamplesTs))
		}
		if got[i].Test != b.TestName() || got[i].Kind != b.Kind() || got[i].Depth != b.NDepth {
			t.Errorf("row %d: %s %s d%d vs %s", i, got[i].Test, got[i].Kind, got[i].Depth, b.TestName())
		}
	}
	if res.Fingerprint == nil || res.Fingerprint.BuildNumber != int(direct[0].BuildNumber) || len(res.Fingerprint.Binary.SHA256) != 64 {
		t.Errorf("fingerprint %+v", res.Fingerprint)
	}
	if n := len(ofType(evs, EventProgress)); n < 4 {
		t.Errorf("%d progress events", n)
	}
	t.Logf("%d rows; fields identical (%d known); build %d sha256 %s…; peak RSS %d KiB",
		len(got), got[0].Result.Known.Len(), res.Fingerprint.BuildNumber, res.Fingerprint.Binary.SHA256[:12], res.Exit.PeakRSS>>10)
}

// TestRealEventsWhileRunning: a multi-test leg on the medium model delivers its first Sample
// while llama-bench is still running, well before the Exit.
func TestRealEventsWhileRunning(t *testing.T) {
	bench := realBench(t)
	model := llamatest.Model(t, "medium-llama-f16.gguf")
	args := []string{"-m", model, "-p", "64", "-n", "32", "-d", "0,64", "-r", "2", "-t", llamatest.Threads}
	leg := StartLeg(context.Background(), LegSpec{Bench: bench, Args: args, CVGate: CVGate{Off: true}})
	var firstSample, exit *Event
	aliveAtFirst := false
	var received time.Time
	for ev := range leg.Events() {
		switch ev.Type {
		case EventSample:
			if firstSample == nil {
				e := ev
				firstSample = &e
				received = time.Now()
				aliveAtFirst = ProcessAlive(leg.Pid())
			}
		case EventExit:
			e := ev
			exit = &e
		}
	}
	res := leg.Result()
	assertGone(t, leg.Pid())
	if exit == nil || exit.Exit.Class != ClassOK || firstSample == nil || len(res.Results()) != 4 {
		t.Fatalf("exit %+v, %d results", exit, len(res.Results()))
	}
	gap := exit.T - firstSample.T
	ended := res.End
	if !aliveAtFirst || !received.Before(ended) || gap < 200*time.Millisecond || gap < exit.T/4 {
		t.Fatalf("first sample at %s (received with llama-bench alive: %v), exit at %s: not streamed", firstSample.T, aliveAtFirst, exit.T)
	}
	t.Logf("first sample %s (%s) at %s, received while llama-bench (pid %d) was alive, exit at %s: %s earlier",
		firstSample.Sample.Test, firstSample.Sample.Kind, firstSample.T.Round(time.Millisecond), leg.Pid(),
		exit.T.Round(time.Millisecond), gap.Round(time.Millisecond))
}

// TestRealBadInputs: real llama-bench failures classify as load_failed / bad_args with
// llama.cpp's own message as the reason.
func TestRealBadInputs(t *testing.T) {
	bench := realBench(t)
	tiny, err := os.ReadFile(llamatest.Model(t, "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nonGGUF := file("hosts.gguf", []byte("127.0.0.1 localhost\n"))
	truncHeader := file("trunc-header.gguf", tiny[:300])
	truncData := file("trunc-data.gguf", tiny[:len(tiny)-1000])
	empty := file("empty.gguf", nil)
	missing := filepath.Join(dir, "absent.gguf")
	good := llamatest.Model(t, "tiny-llama-f32.gguf")
	cases := []struct {
		name  string
		args  []string
		class Class
		want  []string
	}{
		{"missing model", []string{"-m", missing}, ClassLoadFailed, []string{"failed to open GGUF file", "absent.gguf"}},
		{"non-GGUF", []string{"-m", nonGGUF}, ClassLoadFailed, []string{"invalid magic characters", "expected 'GGUF'"}},
		{"truncated header", []string{"-m", truncHeader}, ClassLoadFailed, []string{"failed to load model", "trunc-header.gguf"}},
		{"truncated data", []string{"-m", truncData}, ClassLoadFailed, []string{"not within the file bounds"}},
		{"empty", []string{"-m", empty}, ClassLoadFailed, []string{"failed to read magic"}},
		{"unknown flag", []string{"-m", good, "--no-such-flag"}, ClassBadArgs, []string{"invalid parameter for argument: --no-such-flag"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{}, c.args...), "-p", "16", "-n", "8", "-r", "1", "-t", llamatest.Threads)
			leg := StartLeg(context.Background(), LegSpec{Bench: bench, Args: args, NoFingerprint: true})
			evs := collect(t, leg.Events(), time.Minute)
			res := leg.Result()
			assertGone(t, leg.Pid())
			if res.Exit.Class != c.class || res.Exit.Code != 1 {
				t.Fatalf("exit %+v\n%s", res.Exit, lineTexts(evs))
			}
			for _, w := range c.want {
				if !strings.Contains(res.Exit.Reason, w) {
					t.Errorf("reason %q lacks %q", res.Exit.Reason, w)
				}
			}
			t.Logf("%s: %s", res.Exit.Class, res.Exit.Reason)
		})
	}
}
