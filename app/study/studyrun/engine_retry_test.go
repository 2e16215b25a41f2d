package studyrun

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// Issue: a crashed leg was never run again. Resume must re-run it as a new attempt (the
// earlier attempt stays), and the prediction that reads it must wait for it, not be condemned.
func TestFaultsEngineRetriesACrashedLegOnResume(t *testing.T) {
	h := newHarness(t, nil)
	h.bench.outcome["tiny/d128"] = "crash"
	sum, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != study.StatusIncomplete || len(sum.Incomplete) != 1 || sum.Incomplete[0].Leg != "tiny/d128" {
		t.Fatalf("a crashed leg must leave the study incomplete: %+v", sum)
	}
	if n := h.journalCount("verdict P4 "); n != 0 {
		t.Fatalf("P4 (crossing over every tiny depth) journaled while its crashed leg can be retried: %q", h.rec.journal)
	}
	st, _ := h.rec.Study(context.Background(), h.id)
	if st.Status != study.StatusIncomplete {
		t.Fatalf("notebook status %q", st.Status)
	}
	if !slices.ContainsFunc(st.Notes, func(n study.StoredNote) bool {
		return n.Kind == study.NoteIncomplete && strings.Contains(string(n.Payload), `"leg":"tiny/d128"`)
	}) {
		t.Fatalf("no study.incomplete note naming the leg: %+v", st.Notes)
	}

	// The build is fixed: the next run retries the crashed leg, and only it.
	h.bench.outcome = map[string]string{}
	h.bench.ran = nil
	h.events = nil
	sum, err = h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != study.StatusComplete || len(sum.Incomplete) != 0 || !slices.Equal(h.bench.ran, []string{"tiny/d128"}) {
		t.Fatalf("resume: %+v ran %q", sum, h.bench.ran)
	}
	legs, _ := h.rec.Legs(context.Background(), h.id)
	var labels []string
	for _, l := range legs {
		if l.PlanLeg == "tiny/d128" && l.Role == study.RoleLeg {
			labels = append(labels, l.Label+" "+l.Class)
		}
	}
	if !slices.Equal(labels, []string{"tiny/d128 crashed", "tiny/d128 (attempt 2) ok"}) {
		t.Fatalf("attempts of tiny/d128: %q", labels)
	}
	if n := h.journalCount("verdict P4 ANSWERED"); n != 1 {
		t.Fatalf("P4 must be answered once from the retried leg: %q", h.rec.journal)
	}
	rep, err := study.Show(context.Background(), h.rec, h.id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Study.LegsDone != rep.Study.LegsTotal {
		t.Fatalf("show: %d/%d legs", rep.Study.LegsDone, rep.Study.LegsTotal)
	}
}

// When a leg's failures reach the plan's retry limit it is final: the predictions that read it
// are decided without it (UNRESOLVABLE, once), the study stays incomplete, a further run runs
// nothing; --retry LEG forces one more attempt and its verdicts are journaled again.
func TestFaultsEngineRetryLimitAndForcedRetry(t *testing.T) {
	one := 1
	h := newHarness(t, func(p *study.Plan) { p.Retries = &one })
	h.bench.outcome["tiny/d128"] = "crash"
	if sum, err := h.run(context.Background()); err != nil || sum.Status != study.StatusIncomplete || sum.Incomplete[0].Final {
		t.Fatalf("first run: %+v %v", sum, err)
	}
	if n := h.journalCount("verdict P4 "); n != 0 {
		t.Fatalf("P4 journaled with one retry left: %q", h.rec.journal)
	}
	h.bench.ran = nil
	sum, err := h.run(context.Background())
	if err != nil || sum.Status != study.StatusIncomplete || !sum.Incomplete[0].Final || sum.Incomplete[0].Failed != 2 ||
		!slices.Equal(h.bench.ran, []string{"tiny/d128", "canary after tiny/d128 (attempt 2)"}) {
		t.Fatalf("second run: %+v %v ran %q", sum, err, h.bench.ran)
	}
	if n := h.journalCount("verdict P4 UNRESOLVABLE"); n != 1 {
		t.Fatalf("P4 must be UNRESOLVABLE once the retries are spent: %q", h.rec.journal)
	}
	h.bench.ran = nil
	sum, err = h.run(context.Background())
	if err != nil || sum.Status != study.StatusIncomplete || sum.LegsRun != 0 || len(h.bench.ran) != 0 {
		t.Fatalf("third run must run nothing: %+v %v ran %q", sum, err, h.bench.ran)
	}

	// Refused retries name what is wrong and change nothing.
	before := len(h.rec.journal)
	for leg, want := range map[string]string{
		"tiny/d999": "--retry tiny/d999: not a leg of this study's plan; its legs are tiny/d0#start, tiny/d0,",
		"tiny/d0":   "--retry tiny/d0: the leg has results (tiny/d0, attempt 1); only a leg that ended without results is retried",
	} {
		e := h.engine()
		e.Retry = []string{leg}
		_, err := e.Run(context.Background(), h.id)
		var re *study.RetryError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
			t.Errorf("--retry %s: %v, want %q", leg, err, want)
		}
	}
	if len(h.rec.journal) != before {
		t.Fatalf("a refused --retry wrote to the journal: %q", h.rec.journal[before:])
	}

	// Forced: one more attempt beyond the limit; P4 is journaled again from its result.
	h.bench.outcome = map[string]string{}
	h.bench.ran = nil
	e := h.engine()
	e.Retry = []string{"tiny/d128"}
	sum, err = e.Run(context.Background(), h.id)
	if err != nil || sum.Status != study.StatusComplete || !slices.Equal(h.bench.ran, []string{"tiny/d128"}) {
		t.Fatalf("forced retry: %+v %v ran %q", sum, err, h.bench.ran)
	}
	if h.journalCount("verdict P4 UNRESOLVABLE") != 1 || h.journalCount("verdict P4 ANSWERED") != 1 {
		t.Fatalf("after the forced retry P4 must be journaled again (the earlier verdict kept): %q", h.rec.journal)
	}
	if h.journalCount("verdict P1 ") != 1 {
		t.Fatalf("P1 does not read the retried leg and must not be journaled again: %q", h.rec.journal)
	}
}

// Issue: a leg that failed only at d128 in a 0/128/256 sweep made the d0→d256 slope
// UNRESOLVABLE, journaled right after d128 failed and before d256 ran. A slope reads its two
// depths; it is decided when they are final.
func TestFaultsEngineFailedMiddleDepthDoesNotDecideTheSlope(t *testing.T) {
	h := newHarness(t, nil)
	h.bench.outcome["moe/d128"] = "crash"
	if _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := h.trail()
	v := indexOf(t, tr, "verdict P2 HIT")
	if v < indexOf(t, tr, "finished moe/d256 ok") {
		t.Fatalf("P2 decided before moe/d256 ended: %q", tr)
	}
	if h.journalCount("verdict P2 UNRESOLVABLE") != 0 {
		t.Fatalf("P2 condemned by a failed middle depth: %q", h.rec.journal)
	}
	rep, _ := study.Show(context.Background(), h.rec, h.id)
	for _, s := range rep.Scoreboard {
		if s.Prediction == "P2" && (s.Verdict.Value == nil || *s.Verdict.Value != -0.25) {
			t.Fatalf("P2 must be the d0→d256 slope -0.25: %+v", s.Verdict)
		}
	}
}

// A registered plan whose extra_args the build does not know is refused before any leg runs.
func TestFaultsEngineRefusesExtraArgsTheBuildDoesNotKnow(t *testing.T) {
	h := newHarness(t, func(p *study.Plan) { p.Axes.ExtraArgs = []string{"--no-warmup", "--warmup-twice"} })
	e := h.engine()
	e.BenchFlags = func(context.Context, string) (map[string]bool, error) {
		return map[string]bool{"--no-warmup": true, "-m": true}, nil
	}
	_, err := e.Run(context.Background(), h.id)
	var ref *study.RefusedError
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "axes.extra_args[1]: --warmup-twice is not a flag of this build's llama-bench") ||
		strings.Contains(err.Error(), "--no-warmup is not") {
		t.Fatalf("want the unknown flag refused, got %v", err)
	}
	if len(h.bench.ran) != 0 {
		t.Fatalf("legs ran: %q", h.bench.ran)
	}
}
