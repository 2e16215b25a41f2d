package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLeg is a leg of the fake binary with four tests (pp16, tg8 at depths 0 and 16).
func fakeLeg(t *testing.T, mode string, env ...string) LegSpec {
	return LegSpec{
		Bench:         fakeLlama(t),
		Args:          []string{"-m", "fake.gguf", "-p", "16", "-n", "8", "-d", "0,16", "-r", "3", "-t", "1"},
		Env:           append([]string{"FAKELLAMA_MODE=" + mode}, env...),
		NoFingerprint: true,
		Progress:      true,
		Limits:        Limits{Idle: 20 * time.Second, Grace: 2 * time.Second},
	}
}

func runFake(t *testing.T, spec LegSpec) ([]Event, *LegResult, *Leg) {
	t.Helper()
	leg := StartLeg(context.Background(), spec)
	evs := collect(t, leg.Events(), 60*time.Second)
	res := leg.Result()
	assertGone(t, leg.Pid())
	return evs, res, leg
}

func TestFakeOK(t *testing.T) {
	evs, res, _ := runFake(t, fakeLeg(t, ""))
	if res.Exit.Class != ClassOK || res.Exit.Code != 0 {
		t.Fatalf("exit %+v", res.Exit)
	}
	samples := ofType(evs, EventSample)
	if len(samples) != 4 || len(res.Rows) != 4 || len(res.Results()) != 4 {
		t.Fatalf("samples %d rows %d results %d, want 4", len(samples), len(res.Rows), len(res.Results()))
	}
	wantTests := []string{"pp16", "tg8", "pp16 @ d16", "tg8 @ d16"}
	for i, s := range samples {
		if s.Sample.Test != wantTests[i] || s.Sample.Row != i+1 || s.Sample.Result.NThreads != 1 {
			t.Errorf("sample %d: %+v", i, s.Sample)
		}
	}
	if res.Exit.Expected != 4 || res.Exit.Rows != 4 {
		t.Errorf("expected/rows %d/%d", res.Exit.Expected, res.Exit.Rows)
	}
	prog := ofType(evs, EventProgress)
	if len(prog) == 0 {
		t.Fatal("no progress events")
	}
	last := prog[len(prog)-1].Progress
	if last.Total != 4 || last.Done != 4 || last.ETA != 0 {
		t.Errorf("last progress %+v", last)
	}
	var sawETA bool
	for _, p := range prog {
		if p.Progress.Done > 0 && p.Progress.Done < 4 && p.Progress.ETA > 0 {
			sawETA = true
		}
	}
	if !sawETA {
		t.Error("no ETA while running")
	}
	if evs[len(evs)-1].Type != EventExit {
		t.Errorf("last event %s, want exit", evs[len(evs)-1].Type)
	}
	// the argv gained -o jsonl and --progress
	argv := strings.Join(res.Argv, " ")
	if !strings.HasSuffix(argv, "-t 1 -o jsonl --progress") {
		t.Errorf("argv %q", argv)
	}
	if !strings.Contains(string(res.Transcript.Bytes()), "\r\n") {
		t.Error("transcript lacks the pty's CRLF: not verbatim")
	}
}

func TestFakeSegfaultMidway(t *testing.T) {
	_, res, _ := runFake(t, fakeLeg(t, "segv:2"))
	if res.Exit.Class != ClassCrashed || !strings.Contains(res.Exit.Signal, "SIGSEGV") {
		t.Fatalf("exit %+v", res.Exit)
	}
	if !strings.Contains(res.Exit.Reason, "SIGSEGV") {
		t.Errorf("reason %q", res.Exit.Reason)
	}
	if len(res.Rows) != 2 {
		t.Fatalf("rows %d, want the 2 printed before the crash", len(res.Rows))
	}
	for _, r := range res.Rows {
		if r.Status != RowDiscarded {
			t.Errorf("row %d status %s, want discarded", r.Sample.Row, r.Status)
		}
	}
	if len(res.Results()) != 0 {
		t.Error("a crashed leg yielded results")
	}
	t.Logf("crashed: %s", res.Exit.Reason)
}

func TestFakeDeviceLost(t *testing.T) {
	_, res, _ := runFake(t, fakeLeg(t, "devicelost:1"))
	if res.Exit.Class != ClassDeviceLost {
		t.Fatalf("exit %+v", res.Exit)
	}
	if !strings.Contains(res.Exit.Reason, "ErrorDeviceLost") {
		t.Errorf("reason %q lacks llama.cpp's message", res.Exit.Reason)
	}
	if !strings.Contains(res.Exit.Signal, "SIGABRT") || len(res.Rows) != 1 || res.Rows[0].Status != RowDiscarded {
		t.Errorf("signal %q rows %+v", res.Exit.Signal, res.Rows)
	}
}

func TestFakeOOM(t *testing.T) {
	_, res, _ := runFake(t, fakeLeg(t, "oom"))
	if res.Exit.Class != ClassOOM || !strings.Contains(res.Exit.Reason, "failed to allocate buffer") {
		t.Fatalf("exit %+v", res.Exit)
	}
}

func TestFakeHangIdleTimeout(t *testing.T) {
	spec := fakeLeg(t, "hang:1")
	spec.Limits = Limits{Idle: 400 * time.Millisecond, Grace: time.Second}
	start := time.Now()
	_, res, _ := runFake(t, spec)
	took := time.Since(start)
	if res.Exit.Class != ClassTimeout || res.Exit.StoppedBy != StopIdleTimeout {
		t.Fatalf("exit %+v", res.Exit)
	}
	if !strings.Contains(res.Exit.Reason, "no output for 400ms") {
		t.Errorf("reason %q", res.Exit.Reason)
	}
	if took > 5*time.Second {
		t.Errorf("took %s for a 400ms idle limit", took)
	}
	if len(res.Rows) != 1 || res.Rows[0].Status != RowDiscarded {
		t.Errorf("rows %+v", res.Rows)
	}
	t.Logf("idle timeout: ended after %s: %s", took.Round(time.Millisecond), res.Exit.Reason)
}

func TestFakeForkedChildIgnoresSIGTERM(t *testing.T) {
	spec := fakeLeg(t, "forkterm", "FAKELLAMA_DELAY=30s")
	grace := 700 * time.Millisecond
	spec.Limits.Grace = grace
	leg := StartLeg(context.Background(), spec)
	child := 0
	stopTook := make(chan time.Duration, 1)
	var evs []Event
	timeout := time.After(60 * time.Second)
	var stopOnce sync.Once
loop:
	for {
		select {
		case ev, ok := <-leg.Events():
			if !ok {
				break loop
			}
			evs = append(evs, ev)
			if ev.Type == EventLine && strings.HasPrefix(ev.Line.Text, "child ready") {
				stopOnce.Do(func() {
					go func() {
						s := time.Now()
						_ = leg.Stop(context.Background())
						stopTook <- time.Since(s)
					}()
				})
			}
			if ev.Type == EventLine && strings.HasPrefix(ev.Line.Text, "child pid ") {
				child, _ = strconv.Atoi(strings.TrimPrefix(ev.Line.Text, "child pid "))
			}
		case <-timeout:
			t.Fatal("leg did not end")
		}
	}
	res := leg.Result()
	if child == 0 {
		t.Fatalf("no child pid line: %s", lineTexts(evs))
	}
	assertGone(t, leg.Pid(), child)
	if res.Exit.Class != ClassStoppedByUser || !res.Exit.Escalated {
		t.Fatalf("exit %+v, want stopped_by_user with SIGKILL escalation", res.Exit)
	}
	took := <-stopTook
	if took < grace {
		t.Errorf("Stop returned after %s, before the %s grace period", took, grace)
	}
	t.Logf("child %d ignored SIGTERM; group killed after grace, Stop took %s: %s", child, took, res.Exit.Reason)
}

func TestFakeMalformedJSONL(t *testing.T) {
	evs, res, _ := runFake(t, fakeLeg(t, "malformed:2"))
	mal := ofType(evs, EventMalformed)
	if len(mal) != 1 {
		t.Fatalf("malformed events %d, want 1", len(mal))
	}
	m := mal[0].Malformed
	// the line number is that of the broken row in the output
	var lineText string
	for _, e := range ofType(evs, EventLine) {
		if e.Line.N == m.Line {
			lineText = e.Line.Text
		}
	}
	if !strings.HasPrefix(lineText, `{"build_commit"`) || m.Err == "" {
		t.Errorf("malformed %+v points at line %q", m, lineText)
	}
	samples := ofType(evs, EventSample)
	if len(samples) != 3 || samples[2].Sample.Test != "tg8 @ d16" {
		t.Fatalf("leg did not continue past the malformed line: %d samples", len(samples))
	}
	if res.Exit.Class != ClassIncomplete || res.Exit.Malformed != 1 || !strings.Contains(res.Exit.Reason, "3 of 4") {
		t.Errorf("exit %+v", res.Exit)
	}
	t.Logf("malformed line %d: %s", m.Line, m.Err)
}

func TestFakeShortIsIncomplete(t *testing.T) {
	_, res, _ := runFake(t, fakeLeg(t, "short:2"))
	if res.Exit.Class != ClassIncomplete || !strings.Contains(res.Exit.Reason, "2 of 4") {
		t.Fatalf("exit %+v", res.Exit)
	}
}

func TestFakeExitStatus(t *testing.T) {
	_, res, _ := runFake(t, fakeLeg(t, "exit:3"))
	if res.Exit.Class != ClassFailed || res.Exit.Code != 3 {
		t.Fatalf("exit %+v", res.Exit)
	}
}

func TestFakeUnknownFlagIsBadArgs(t *testing.T) {
	spec := fakeLeg(t, "")
	spec.Args = append(spec.Args, "--no-such-flag")
	_, res, _ := runFake(t, spec)
	if res.Exit.Class != ClassBadArgs || !strings.Contains(res.Exit.Reason, "--no-such-flag") {
		t.Fatalf("exit %+v", res.Exit)
	}
}

func TestFakeCVGateHaltsLeg(t *testing.T) {
	evs, res, _ := runFake(t, fakeLeg(t, "", "FAKELLAMA_CV=0.2", "FAKELLAMA_DELAY=300ms"))
	fl := ofType(evs, EventFlagged)
	if len(fl) != 1 || fl[0].Flagged.Row != 1 || fl[0].Flagged.Limit != DefaultCVPP {
		t.Fatalf("flagged %+v", fl)
	}
	if res.Exit.Class != ClassFlagged || res.Exit.StoppedBy != StopGate {
		t.Fatalf("exit %+v", res.Exit)
	}
	if res.Rows[0].Status != RowFlagged || len(res.Results()) != 0 {
		t.Errorf("rows %+v", res.Rows)
	}
	if len(res.Rows) == 4 {
		t.Error("the gate did not halt the leg")
	}
	// with the gate off the same leg is ok
	spec := fakeLeg(t, "", "FAKELLAMA_CV=0.2")
	spec.CVGate.Off = true
	if _, res, _ := runFake(t, spec); res.Exit.Class != ClassOK {
		t.Errorf("gate off: %+v", res.Exit)
	}
	t.Logf("flagged: %s", res.Exit.Reason)
}

// A gate that counts (gates.on_cv "count") flags every test above its limit, keeps each as a
// result and lets the leg finish: four flags, four results, class ok. The same leg with the
// halting gate stops at its first row.
func TestFakeCVGateCountsWithItsFlag(t *testing.T) {
	spec := fakeLeg(t, "", "FAKELLAMA_CV=0.2")
	spec.CVGate.Count = true
	evs, res, _ := runFake(t, spec)
	fl := ofType(evs, EventFlagged)
	if len(fl) != 4 {
		t.Fatalf("%d flags, want one per row (4): %+v", len(fl), fl)
	}
	for _, e := range fl {
		if !e.Flagged.Counted || e.Flagged.Gate != "cv" || !strings.Contains(e.Flagged.Reason, "counted with its flag") {
			t.Errorf("flag %+v", e.Flagged)
		}
	}
	if res.Exit.Class != ClassOK || !strings.HasPrefix(res.Exit.Reason, "4 row(s) counted with a CV flag: pp16: CV ") {
		t.Fatalf("exit %+v", res.Exit)
	}
	if len(res.Results()) != 4 {
		t.Fatalf("%d results, want 4: %+v", len(res.Results()), res.Rows)
	}
	for _, r := range res.Rows {
		if r.Status != RowResult || r.Sample.Flag != "cv" {
			t.Errorf("row %d: status %s flag %q", r.Sample.Row, r.Status, r.Sample.Flag)
		}
	}
}

func TestFakeStopIsIdempotent(t *testing.T) {
	spec := fakeLeg(t, "", "FAKELLAMA_DELAY=30s")
	leg := StartLeg(context.Background(), spec)
	done := make(chan []Event)
	go func() { done <- collect(t, leg.Events(), 60*time.Second) }()
	time.Sleep(200 * time.Millisecond)
	var wg sync.WaitGroup
	var errs atomic.Int32
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := leg.Stop(context.Background()); err != nil {
				errs.Add(1)
			}
		}()
	}
	wg.Wait()
	evs := <-done
	if err := leg.Stop(context.Background()); err != nil || errs.Load() != 0 {
		t.Fatalf("stop after end: %v (%d errors)", err, errs.Load())
	}
	if n := len(ofType(evs, EventExit)); n != 1 {
		t.Fatalf("%d exit events", n)
	}
	res := leg.Result()
	if res.Exit.Class != ClassStoppedByUser || res.Exit.Escalated {
		t.Fatalf("exit %+v", res.Exit)
	}
	assertGone(t, leg.Pid())
}

func TestFakeContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	leg := StartLeg(ctx, fakeLeg(t, "", "FAKELLAMA_DELAY=30s"))
	time.AfterFunc(200*time.Millisecond, cancel)
	collect(t, leg.Events(), 30*time.Second)
	if c := leg.Result().Exit.Class; c != ClassStoppedByUser {
		t.Fatalf("class %s", c)
	}
	assertGone(t, leg.Pid())
}

func TestFakeStartFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		spec  LegSpec
		class Class
		want  string
	}{
		{"missing binary", LegSpec{Bench: "/nonexistent/llama-bench", Args: []string{"-m", "x"}, NoFingerprint: true}, ClassFailed, "no such file"},
		{"not executable", LegSpec{Bench: "/etc/hostname", Args: []string{"-m", "x"}, NoFingerprint: true}, ClassFailed, "could not start: /etc/hostname"},
		{"second output format", LegSpec{Bench: "/bin/true", Args: []string{"-m", "x", "-oe", "md"}}, ClassBadArgs, "-oe"},
		{"other -o", LegSpec{Bench: "/bin/true", Args: []string{"-m", "x", "-o", "md"}}, ClassBadArgs, "-o md"},
		{"no binary", LegSpec{Args: []string{"-m", "x"}}, ClassBadArgs, "no llama-bench"},
	} {
		t.Run(c.name, func(t *testing.T) {
			leg := StartLeg(context.Background(), c.spec)
			evs := collect(t, leg.Events(), 10*time.Second)
			res := leg.Result()
			if len(evs) != 1 || res.Exit.Class != c.class || !strings.Contains(res.Exit.Reason, c.want) || leg.Pid() != 0 {
				t.Fatalf("events %v exit %+v", evs, res.Exit)
			}
		})
	}
}

// TestFakeFlood100MB: the child prints 100 MB of log lines and a 16 MiB line; the runner's
// memory stays bounded by its caps (transcript, line, event queue).
func TestFakeFlood100MB(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB through a pty")
	}
	const floodBytes = 100 << 20
	spec := fakeLeg(t, "flood:"+strconv.Itoa(floodBytes))
	spec.Args = []string{"-m", "fake.gguf", "-p", "16", "-n", "8", "-r", "2", "-t", "1"}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	start := time.Now()
	leg := StartLeg(context.Background(), spec)
	var lines, cutLines, dropped int
	var longest int
	for ev := range leg.Events() {
		if ev.Type == EventLine {
			lines++
			dropped += ev.Line.Dropped
			if ev.Line.Cut > 0 {
				cutLines++
			}
			longest = max(longest, len(ev.Line.Text))
		}
	}
	took := time.Since(start)
	close(stop)
	<-sampled
	res := leg.Result()
	assertGone(t, leg.Pid())
	if res.Exit.Class != ClassOK || len(res.Results()) != 2 {
		t.Fatalf("exit %+v", res.Exit)
	}
	tr := res.Transcript
	if tr.Total < floodBytes || tr.Kept() > int64(tr.Cap) || tr.Omitted() == 0 {
		t.Fatalf("transcript total %d kept %d cap %d omitted %d", tr.Total, tr.Kept(), tr.Cap, tr.Omitted())
	}
	if !strings.Contains(string(tr.Bytes()), "bytes of output not kept") {
		t.Error("no cut marker in the transcript")
	}
	if cutLines != 1 || longest > DefaultMaxLine+200 {
		t.Errorf("cut lines %d longest %d", cutLines, longest)
	}
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	var vmhwm string
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				vmhwm = strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
			}
		}
	}
	msg := fmt.Sprintf("flood: %d MB in %s (%.0f MB/s); %d lines delivered, %d dropped for the consumer; transcript kept %d of %d bytes; peak heap in use %.1f MiB (%.1f MiB above the %.1f MiB before); test process VmHWM %s",
		tr.Total>>20, took.Round(time.Millisecond), float64(tr.Total)/1e6/took.Seconds(), lines, dropped,
		tr.Kept(), tr.Total, float64(peak.Load())/(1<<20), float64(growth)/(1<<20), float64(base.HeapInuse)/(1<<20), vmhwm)
	t.Log(msg)
	if growth > 64<<20 {
		t.Fatalf("heap grew by %d MiB under the flood: not bounded (%s)", growth>>20, msg)
	}
}

// Without --progress the total comes from the arguments and the ETA from the rows.
func TestFakeProgressFromRows(t *testing.T) {
	spec := fakeLeg(t, "", "FAKELLAMA_DELAY=50ms")
	spec.Progress = false
	evs, res, _ := runFake(t, spec)
	if res.Exit.Class != ClassOK || res.Exit.Expected != 4 || strings.Contains(strings.Join(res.Argv, " "), "--progress") {
		t.Fatalf("exit %+v argv %v", res.Exit, res.Argv)
	}
	prog := ofType(evs, EventProgress)
	if len(prog) != 4 {
		t.Fatalf("%d progress events, want one per row", len(prog))
	}
	for i, p := range prog {
		pr := p.Progress
		if pr.Done != i+1 || pr.Total != 4 || (i < 3 && (pr.Test != i+2 || pr.ETA <= 0)) || (i == 3 && pr.ETA != 0) {
			t.Errorf("progress %d: %+v", i, pr)
		}
	}
}

// A JSON object that is not a result row is reported, not counted.
func TestLegRejectsNonResultJSON(t *testing.T) {
	leg := StartLeg(context.Background(), LegSpec{Bench: "/bin/sh", NoFingerprint: true,
		Args: []string{"-c", `echo '{"hello": 1}'; echo '{}'`}})
	evs := collect(t, leg.Events(), 10*time.Second)
	res := leg.Result()
	mal := ofType(evs, EventMalformed)
	if len(mal) != 2 || !strings.Contains(mal[0].Malformed.Err, "no n_prompt, n_gen, avg_ts") || len(res.Rows) != 0 {
		t.Fatalf("malformed %+v rows %d", mal, len(res.Rows))
	}
	if res.Exit.Class != ClassIncomplete {
		t.Errorf("exit %+v", res.Exit)
	}
}

// The device gate on a running leg: the first row that ran elsewhere than the leg asked is
// flagged with its code and halts the leg; rows that ran on the device pass it.
func TestFakeDeviceGateHaltsLeg(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		code string
	}{
		{"cpu", nil, CodeDeviceNotUsed},
		{"other backend", []string{"FAKELLAMA_GPU_INFO=NVIDIA GB10", "FAKELLAMA_BACKENDS=CUDA", "FAKELLAMA_NGL=99"}, CodeDeviceOtherBackend},
		{"on the device", []string{"FAKELLAMA_GPU_INFO=llvmpipe (LLVM 19.1.7, 256 bits)", "FAKELLAMA_BACKENDS=Vulkan", "FAKELLAMA_NGL=99", "FAKELLAMA_DEVICES=Vulkan0"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := fakeLeg(t, "", append([]string{"FAKELLAMA_DELAY=300ms"}, c.env...)...)
			spec.DeviceGate = &DeviceGate{Want: "Vulkan0"}
			evs, res, _ := runFake(t, spec)
			fl := ofType(evs, EventFlagged)
			if c.code == "" {
				if len(fl) != 0 || res.Exit.Class != ClassOK || len(res.Results()) != 4 {
					t.Fatalf("flagged %+v, exit %+v, %d results", fl, res.Exit, len(res.Results()))
				}
				return
			}
			if len(fl) != 1 || fl[0].Flagged.Row != 1 || fl[0].Flagged.Gate != "device" || fl[0].Flagged.Code != c.code {
				t.Fatalf("flagged %+v", fl)
			}
			if res.Exit.Class != ClassFlagged || res.Exit.StoppedBy != StopGate || !strings.Contains(res.Exit.Reason, "pp16: "+c.code) {
				t.Fatalf("exit %+v", res.Exit)
			}
			if len(res.Rows) == 0 || res.Rows[0].Status != RowFlagged || len(res.Results()) != 0 || len(res.Rows) == 4 {
				t.Errorf("rows %+v (the gate must flag row 1 and halt the leg)", res.Rows)
			}
		})
	}
}
