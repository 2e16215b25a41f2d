package study

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"sparkbench/runner/vocab"
)

func TestSpeedChange(t *testing.T) {
	for _, c := range []struct {
		ratio float64
		want  string
	}{{1.023, "faster by 2.3%"}, {0.96, "slower by 4.0%"}, {1, "faster by 0.0%"}, {0.5, "slower by 50.0%"}, {2, "faster by 100.0%"}} {
		if got := SpeedChange(c.ratio); got != c.want {
			t.Errorf("SpeedChange(%g) = %q, want %q", c.ratio, got, c.want)
		}
	}
	q := KVQuality{Speed: []KVSpeedDiff{{Depth: 0, Ratio: 1.1}, {Depth: 512, Ratio: 0.8}}}
	if got := q.SpeedWords(); !reflect.DeepEqual(got, []string{"faster by 10.0% at d0", "slower by 20.0% at d512"}) {
		t.Errorf("speed words %q", got)
	}
}

// TestReadsAny: a prediction reads a set of legs when its about or its than touches one.
func TestReadsAny(t *testing.T) {
	p := loadValid(t)
	legs, err := Expand(p, "")
	if err != nil {
		t.Fatal(err)
	}
	d0 := 0
	cmp := Prediction{Kind: KindComparison, About: Selector{Figure: FigureCell, Model: "tiny", Test: "tg", Depth: &d0},
		Than: &Selector{Figure: FigureCell, Model: "moe", Test: "tg", Depth: &d0}}
	band := Prediction{Kind: KindBand, About: cmp.About}
	for _, c := range []struct {
		p    Prediction
		set  map[string]bool
		want bool
	}{
		{cmp, nil, false},
		{cmp, map[string]bool{}, false},
		{cmp, map[string]bool{"tiny/d0": true}, true},
		{cmp, map[string]bool{"moe/d0": true}, true},
		{cmp, map[string]bool{"moe/d128": true}, false},
		{band, map[string]bool{"moe/d0": true}, false},
		{band, map[string]bool{"tiny/d0": true}, true},
		{band, map[string]bool{"tiny/d0": false}, false},
	} {
		if got := ReadsAny(c.p, legs, c.set); got != c.want {
			t.Errorf("%s reads %v: %v, want %v", c.p.About, c.set, got, c.want)
		}
	}
}

// TestReopen: --retry takes plan legs without results; a final one is reopened, one with
// retries left runs anyway, a leg with results or outside the plan is refused.
func TestReopen(t *testing.T) {
	retries := 1
	p := &Plan{Retries: &retries}
	legs := []LegPlan{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	failed := func(id int64, leg string, attempt int) StoredLeg {
		return StoredLeg{ID: id, PlanLeg: leg, Role: RoleLeg, Attempt: attempt, State: LegFinished, Class: string(vocab.ClassFailed), Label: leg}
	}
	stored := []StoredLeg{
		{ID: 1, PlanLeg: "a", Role: RoleLeg, Attempt: 1, State: LegFinished, Class: string(vocab.ClassOK), Label: "leg a", Rows: 1, Results: 1},
		failed(2, "b", 1), failed(3, "b", 2), failed(4, "c", 1),
	}
	l := &Loaded{Plan: p, Legs: legs, Stored: stored}
	if err := l.Reopen(nil); err != nil || l.Reopened == nil || len(l.Reopened) != 0 {
		t.Fatalf("no retry: %v %v", l.Reopened, err)
	}
	if err := l.Reopen([]string{"b", "c"}); err != nil || !reflect.DeepEqual(l.Reopened, map[string]bool{"b": true}) {
		t.Errorf("retry b (final) and c (a retry left): %v %v", l.Reopened, err)
	}
	var re *RetryError
	if err := l.Reopen([]string{"z"}); !errors.As(err, &re) || !strings.Contains(err.Error(), "--retry z: not a leg of this study's plan; its legs are a, b, c") {
		t.Errorf("retry z: %v", err)
	}
	if err := l.Reopen([]string{"b", "a"}); !errors.As(err, &re) || !strings.Contains(err.Error(), "--retry a: the leg has results (leg a, attempt 1)") {
		t.Errorf("retry a: %v", err)
	}
}

// TestDeviceRatio: a cell on one device over the same cell on the base device, the selector's
// configuration kept; a base of 0 t/s or a device without a row resolves to nothing.
func TestDeviceRatio(t *testing.T) {
	res := fixture(t)
	rpc, none := row("tiny/d0", "tiny", 0, 0, 32, 4500), row("tiny/d0", "tiny", 0, 0, 32, 9000)
	rpc.Result.Devices, none.Result.Devices, rpc.Ref, none.Ref = "RPC0", "none", "rpc row", "local row"
	res.Rows = append(res.Rows, rpc, none)
	d0 := 0
	s := Selector{Figure: FigureDeviceRatio, Model: "tiny", Test: "tg", Depth: &d0, Device: "RPC0", BaseDevice: "none"}
	v, err := res.Resolve(s)
	if err != nil || v.X != 0.5 || !reflect.DeepEqual(v.Sources, []string{"rpc row", "local row"}) || v.Detail != "4500.00 t/s on RPC0 / 9000.00 t/s on none" {
		t.Fatalf("ratio %+v %v", v, err)
	}
	s.Config = &ConfigSel{Threads: iptr(1)}
	if v, err := res.Resolve(s); err != nil || v.X != 0.5 {
		t.Errorf("with threads 1: %+v %v", v, err)
	}
	s.Config = &ConfigSel{Threads: iptr(4)}
	if _, err := res.Resolve(s); !errors.Is(err, ErrUnresolvable) {
		t.Errorf("with threads 4 (no row): %v", err)
	}
	s.Config, s.Device = nil, "Vulkan0"
	if _, err := res.Resolve(s); !errors.Is(err, ErrUnresolvable) || !strings.Contains(err.Error(), "no result row") {
		t.Errorf("a device without a row: %v", err)
	}
	res.Rows[len(res.Rows)-1].Result.AvgTs = 0
	s.Device = "RPC0"
	if _, err := res.Resolve(s); !errors.Is(err, ErrUnresolvable) || !strings.Contains(err.Error(), "tg on none: mean is 0") {
		t.Errorf("a base of 0 t/s: %v", err)
	}
}

// TestEvaluateComparisonOnRepetitions: stats benchmath judges the two cells' repetitions (their
// medians), not the rows' means; a cell without repetitions is unresolvable.
func TestEvaluateComparisonOnRepetitions(t *testing.T) {
	res := fixture(t)
	d256 := 256
	p := Prediction{ID: "P3", Kind: KindComparison, About: Selector{Figure: FigureCell, Model: "tiny", Test: "tg32", Depth: &d256}, Op: ">=",
		Than: &Selector{Figure: FigureCell, Model: "moe", Test: "tg32", Depth: &d256}, Tolerance: 0.02}
	// The rows' means say tiny 4000 < moe 6000; their repetitions say tiny ~6500 > moe ~6000.
	if vd := res.Evaluate(p); vd.Outcome != Fails {
		t.Fatalf("on the means: %+v", vd)
	}
	p.Stats = StatsBenchmath
	if vd := res.Evaluate(p); vd.Outcome != Unresolvable || !strings.Contains(vd.Problem, "a cell has no repetitions recorded") {
		t.Errorf("without repetitions: %+v", vd)
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		if r.Result.NGen == 32 && r.Result.NDepth == 256 && r.Leg == r.Model+"/d256" {
			base := map[string]float64{"tiny": 6500, "moe": 6000}[r.Model]
			r.Result.SamplesTs = []float64{base, base + 10, base - 10, base + 5, base - 5, base + 2, base - 2, base + 8, base - 8}
		}
	}
	vd := res.Evaluate(p)
	if vd.Outcome != Holds || !strings.Contains(vd.Detail, "median 6500 vs 6000") || vd.Value == nil || math.Abs(*vd.Value-6500) > 1e-9 ||
		!reflect.DeepEqual(vd.Sources, []string{"tiny/d256 tg d256", "moe/d256 tg d256"}) {
		t.Errorf("on the repetitions: %+v value %v sources %q", vd, *vd.Value, vd.Sources)
	}
}

// TestAttemptOutcomes: which attempts have results, which count toward the retry limit, and
// which notebook leg's rows count for a plan leg.
func TestAttemptOutcomes(t *testing.T) {
	leg := func(state string, class vocab.Class, results int) StoredLeg {
		return StoredLeg{PlanLeg: "a", Role: RoleLeg, State: state, Class: string(class), Results: results}
	}
	for _, c := range []struct {
		s       StoredLeg
		results bool
		failed  bool
	}{
		{leg(LegFinished, vocab.ClassOK, 2), true, false},
		{leg(LegFinished, "", 2), true, false},
		{leg(LegFinished, vocab.ClassFlagged, 1), true, false},
		{leg(LegFinished, vocab.ClassFlagged, 0), false, true},
		{leg(LegFinished, vocab.ClassCrashed, 0), false, true},
		{leg(LegFinished, vocab.ClassStoppedByUser, 0), false, false},
		{leg(LegInterrupted, vocab.ClassOK, 2), false, false},
		{leg(LegRunning, "", 0), false, false},
	} {
		if got := HasResults(c.s); got != c.results {
			t.Errorf("%s %s results %d: has results %v, want %v", c.s.State, c.s.Class, c.s.Results, got, c.results)
		}
		if got := failedAttempt(c.s); got != c.failed {
			t.Errorf("%s %s results %d: failed %v, want %v", c.s.State, c.s.Class, c.s.Results, got, c.failed)
		}
	}
	ok1, ok2 := leg(LegFinished, vocab.ClassOK, 1), leg(LegFinished, vocab.ClassOK, 1)
	ok1.ID, ok2.ID = 1, 2
	canary := leg(LegFinished, vocab.ClassOK, 1)
	canary.ID, canary.Role = 3, RoleCanary
	crashed := leg(LegFinished, vocab.ClassCrashed, 0)
	crashed.ID = 4
	if got := finalLegs([]StoredLeg{ok1, ok2, canary, crashed}); len(got) != 1 || got["a"].ID != 2 {
		t.Errorf("the latest attempt with results counts, not a canary nor a crash: %+v", got)
	}
}

// TestKVGate: the gate passes at or below the limit; a check's speed is its tg cells over the
// f16 cells of the same model, test and depth (a base of 0 t/s gives none).
func TestKVGate(t *testing.T) {
	g := &KVQualityGate{KLDMeanMax: 0.01}
	for _, c := range []struct {
		kld  float64
		want string
	}{{0.01, "pass"}, {0.009, "pass"}, {0.0101, GateKLDAboveMax}, {0, "pass"}} {
		if got := KVGateOutcome(c.kld, g); got != c.want {
			t.Errorf("KLD %g: %q, want %q", c.kld, got, c.want)
		}
	}
	rep := &Report{Results: []ReportCell{
		{Model: "m", Test: "tg32", Depth: 0, Config: "ub512 kv-f16/f16 t1", Mean: 100},
		{Model: "m", Test: "tg32", Depth: 0, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 90},
		{Model: "m", Test: "tg64", Depth: 0, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 80},
		{Model: "m", Test: "tg64", Depth: 128, Config: "ub512 kv-f16/f16 t1", Mean: 160},
		{Model: "m", Test: "tg32", Depth: 128, Config: "ub512 kv-f16/f16 t1", Mean: 0},
		{Model: "m", Test: "tg32", Depth: 128, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 50},
		{Model: "other", Test: "tg32", Depth: 0, Config: "ub512 kv-f16/f16 t1", Mean: 200},
		{Model: "other", Test: "tg32", Depth: 0, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 300},
		{Model: "m", Test: "pp64", Depth: 0, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 500},
		{Model: "m", Test: "pp64", Depth: 0, Config: "ub512 kv-f16/f16 t1", Mean: 1000},
	}}
	AttachKVQuality(rep, []KVQuality{{Model: "m", KV: "q8_0/q8_0", MeanKLD: 0.01}}, nil)
	q := rep.KVQuality[0]
	if q.Gate != "" || q.Max != nil || !reflect.DeepEqual(q.Speed, []KVSpeedDiff{{Test: "tg32", Depth: 0, Ratio: 0.9}}) {
		t.Errorf("without a gate: %+v", q)
	}
	rep.KVQuality = nil
	AttachKVQuality(rep, []KVQuality{{Model: "m", KV: "q8_0/q8_0", MeanKLD: 0.01}}, g)
	if q := rep.KVQuality[0]; q.Gate != "pass" || q.Max == nil || *q.Max != 0.01 {
		t.Errorf("at the limit: %+v", q)
	}
	if got := replaceWord([]string{"a", "b", "a"}, "a", "c"); !reflect.DeepEqual(got, []string{"c", "b", "c"}) {
		t.Errorf("replaceWord %q", got)
	}
}

// TestLegStatuses: attempts of every kind are counted, failures toward the limit; a leg is final
// with results or when its failures reach 1 + retries; a canary and a leg outside the plan are
// not its attempts.
func TestLegStatuses(t *testing.T) {
	retries := 2
	p := &Plan{Retries: &retries}
	legs := []LegPlan{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	at := func(id int64, leg, role, state string, class vocab.Class) StoredLeg {
		return StoredLeg{ID: id, PlanLeg: leg, Role: role, State: state, Class: string(class)}
	}
	stored := []StoredLeg{
		at(1, "a", RoleLeg, LegFinished, vocab.ClassCrashed),
		at(2, "a", RoleLeg, LegFinished, vocab.ClassStoppedByUser),
		at(3, "a", RoleLeg, LegFinished, vocab.ClassCrashed),
		at(4, "a", RoleCanary, LegFinished, vocab.ClassCrashed),
		at(5, "b", RoleLeg, LegFinished, vocab.ClassCrashed),
		at(6, "b", RoleLeg, LegFinished, vocab.ClassCrashed),
		at(7, "b", RoleLeg, LegFinished, vocab.ClassCrashed),
		at(8, "z", RoleLeg, LegFinished, vocab.ClassCrashed),
	}
	st := LegStatuses(p, legs, stored)
	want := []struct {
		attempts, failed, left int
		final                  bool
		last                   int64
	}{{3, 2, 1, false, 3}, {3, 3, 0, true, 7}, {0, 0, 3, false, 0}}
	for i, w := range want {
		s := st[i]
		if s.Attempts != w.attempts || s.Failed != w.failed || s.RetriesLeft() != w.left || s.Final != w.final || s.Last.ID != w.last || s.MaxAttempts != 3 || s.Results {
			t.Errorf("leg %s: %+v; want %+v", s.Leg, s, w)
		}
	}
	if (LegStatus{MaxAttempts: 2, Failed: 3}).RetriesLeft() != 0 {
		t.Error("retries left below 0")
	}
}
