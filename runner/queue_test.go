package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func runQueue(t *testing.T, spec QueueSpec) ([]Event, *Queue) {
	t.Helper()
	q := StartQueue(context.Background(), spec, WithFingerprinter(&Fingerprinter{HwmonRoot: t.TempDir()}))
	evs := collect(t, q.Events(), 2*time.Minute)
	q.Results() // waits for the queue's end
	assertGone(t, 0)
	return evs, q
}

type interval struct {
	pid        int
	start, end int64
}

// readIntervals reads the fake's start/end log into one interval per process.
func readIntervals(t *testing.T, path string) []interval {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byPid := map[int]*interval{}
	var order []int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		ts, _ := strconv.ParseInt(f[2], 10, 64)
		iv := byPid[pid]
		if iv == nil {
			iv = &interval{pid: pid}
			byPid[pid] = iv
			order = append(order, pid)
		}
		if f[0] == "start" {
			iv.start = ts
		} else {
			iv.end = ts
		}
	}
	var out []interval
	for _, p := range order {
		out = append(out, *byPid[p])
	}
	return out
}

func TestQueueRunsLegsInOrderOneAtATime(t *testing.T) {
	log := filepath.Join(t.TempDir(), "fake.log")
	var legs []LegSpec
	for i := 0; i < 3; i++ {
		l := fakeLeg(t, "", "FAKELLAMA_LOG="+log)
		l.NoFingerprint = false // fingerprints run llama-bench too: they must not overlap either
		legs = append(legs, l)
	}
	evs, q := runQueue(t, QueueSpec{Legs: legs})
	var order []string
	for _, e := range evs {
		switch e.Type {
		case EventLegStarted, EventLegFinished, EventQueueDone:
			order = append(order, string(e.Type)+":"+e.Leg)
		}
	}
	want := "leg_started:leg-01 leg_finished:leg-01 leg_started:leg-02 leg_finished:leg-02 leg_started:leg-03 leg_finished:leg-03 queue_done:"
	if strings.Join(order, " ") != want {
		t.Fatalf("order %v", order)
	}
	if last := evs[len(evs)-1]; last.Type != EventQueueDone || last.Queue.Halted || last.Queue.LegsDone != 3 {
		t.Fatalf("last %+v", last)
	}
	for _, e := range ofType(evs, EventSample) {
		if !strings.HasPrefix(e.Leg, "leg-0") {
			t.Fatalf("sample without its leg ID: %+v", e)
		}
	}
	if p := ofType(evs, EventQueueProgress); len(p) != 3 || p[2].Queue.LegsDone != 3 || p[0].Queue.ETA <= 0 {
		t.Errorf("queue progress %+v", p)
	}
	iv := readIntervals(t, log)
	// the first Take fingerprints (--version, --list-devices), then 3 legs (cached build part)
	if len(iv) != 5 {
		t.Fatalf("%d llama-bench processes logged, want 5: %+v", len(iv), iv)
	}
	for i := 1; i < len(iv); i++ {
		if iv[i].start < iv[i-1].end || iv[i-1].end == 0 {
			t.Fatalf("process %d started before process %d ended: %+v", i, i-1, iv)
		}
	}
	for _, r := range q.Results() {
		if r.Exit.Class != ClassOK || len(r.Results()) != 4 || r.Fingerprint == nil {
			t.Errorf("%s: %+v", r.ID, r.Exit)
		}
	}
}

func TestQueueCanaryAfterDeviceLost(t *testing.T) {
	canary := CanarySpec{Leg: fakeLeg(t, ""), Baseline: map[string]float64{"pp16": 1000, "tg8": 1000}}
	evs, q := runQueue(t, QueueSpec{Legs: []LegSpec{fakeLeg(t, "devicelost:1"), fakeLeg(t, "")}, Canary: &canary})
	c := ofType(evs, EventCanary)
	if len(c) != 1 || !c[0].Canary.Pass || c[0].Canary.After != "leg-01" || c[0].Canary.Observed["tg8"] == 0 {
		t.Fatalf("canary %+v", c)
	}
	res := q.Results()
	if len(res) != 3 || res[0].Exit.Class != ClassDeviceLost || res[1].ID != "canary-after-leg-01" || res[2].Exit.Class != ClassOK {
		t.Fatalf("results: %d", len(res))
	}
	if st := q.Status(); st.Halted || st.LegsDone != 2 {
		t.Fatalf("status %+v", st)
	}
}

func TestQueueFailingCanaryHalts(t *testing.T) {
	canary := CanarySpec{Leg: fakeLeg(t, "", "FAKELLAMA_TS=700"), Baseline: map[string]float64{"pp16": 1000}}
	legs := []LegSpec{fakeLeg(t, "segv:1"), fakeLeg(t, ""), fakeLeg(t, "")}
	evs, q := runQueue(t, QueueSpec{Legs: legs, Canary: &canary})
	h := ofType(evs, EventQueueHalted)
	if len(h) != 1 || h[0].Queue.Class != ClassCrashed || !strings.Contains(h[0].Queue.Reason, "30.0% below its baseline") {
		t.Fatalf("halt %+v", h)
	}
	if n := len(q.Results()); n != 2 { // the crashed leg and the canary
		t.Fatalf("%d legs ran after a failing canary", n-2)
	}
	t.Logf("halted: %s", h[0].Queue.Reason)
}

func TestQueueCrashWithoutCanaryContinuesAndFlaggedContinues(t *testing.T) {
	legs := []LegSpec{fakeLeg(t, "", "FAKELLAMA_CV=0.3", "FAKELLAMA_DELAY=200ms"), fakeLeg(t, "oom"), fakeLeg(t, "")}
	_, q := runQueue(t, QueueSpec{Legs: legs})
	res := q.Results()
	if len(res) != 3 || res[0].Exit.Class != ClassFlagged || res[1].Exit.Class != ClassOOM || res[2].Exit.Class != ClassOK {
		t.Fatalf("results %d", len(res))
	}
}

func TestQueueStop(t *testing.T) {
	legs := []LegSpec{fakeLeg(t, "", "FAKELLAMA_DELAY=30s"), fakeLeg(t, ""), fakeLeg(t, "")}
	q := StartQueue(context.Background(), QueueSpec{Legs: legs})
	var pid int
	var evs []Event
	for ev := range q.Events() {
		evs = append(evs, ev)
		if ev.Type == EventLine && pid == 0 {
			pid = -1
			go func() {
				if err := q.Stop(context.Background()); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	res := q.Results()
	if len(res) != 1 || res[0].Exit.Class != ClassStoppedByUser {
		t.Fatalf("%d results", len(res))
	}
	st := q.Status()
	if !st.Halted || st.Class != ClassStoppedByUser || st.LegsDone != 1 {
		t.Fatalf("status %+v", st)
	}
	if err := q.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, 0)
	if evs[len(evs)-1].Type != EventQueueDone {
		t.Error("queue_done not last")
	}
}
