package studyrun

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner"
)

// adaptivePlan makes the fixture plan adaptive: tg and pp to ±1%, 3 to 30 reps in chunks of 3
// (the rule over processes, at least 3 of them, as registration defaults it).
func adaptivePlan(p *study.Plan) {
	p.Repeatability = nil
	p.Axes.Reps = 0
	p.Adaptive = &study.Adaptive{MinReps: 3, MaxReps: 30, ChunkReps: 3, Order: study.OrderBlocks, Seed: 7,
		Targets: []study.PrecisionTarget{{Test: "tg", Rel: 0.01}, {Test: "pp", Rel: 0.01}}}
}

// seededSamples draws a leg's k-th set of repetitions from its own generator (CV cv), so a
// resumed run gets the same samples for the same chunk as an uninterrupted one.
type seededSamples struct {
	mu sync.Mutex
	n  map[string]int
	cv float64
}

func (s *seededSamples) draw(leg string, reps int, ts float64) []float64 {
	s.mu.Lock()
	k := s.n[leg]
	s.n[leg]++
	s.mu.Unlock()
	h := fnv.New64a()
	h.Write([]byte(leg))
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(k)))
	xs := make([]float64, reps)
	for i := range xs {
		xs[i] = ts * (1 + s.cv*rng.NormFloat64())
	}
	return xs
}

// chunkTrail is the chunks with results in the order they ran: "tiny/d0 chunk 1 -r 3".
func chunkTrail(t *testing.T, h *harness) []string {
	t.Helper()
	legs, _ := h.rec.Legs(context.Background(), h.id)
	var out []string
	for _, l := range legs {
		if l.Role == study.RoleLeg && l.State == study.LegFinished {
			label, _, _ := strings.Cut(l.Label, " (attempt")
			out = append(out, fmt.Sprintf("%s -r %d", label, study.ChunkReps(l.Argv)))
		}
	}
	return out
}

func TestAdaptiveRepetitionsStopWhenEveryTargetIsMet(t *testing.T) {
	h := newHarness(t, adaptivePlan)
	h.bench.samples = (&seededSamples{n: map[string]int{}, cv: 0.012}).draw
	sum, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != study.StatusComplete || len(sum.Verdicts) != 4 {
		t.Fatalf("summary %+v", sum)
	}
	rep, err := study.Show(context.Background(), h.rec, h.id)
	if err != nil {
		t.Fatal(err)
	}
	a := rep.Adaptive
	if a == nil || !a.Stop || !a.Met {
		t.Fatalf("adaptive report %+v", a)
	}
	reps := a.Legs[0].Reps
	for _, l := range a.Legs {
		if l.Reps != reps || l.Reps < 9 || l.Reps > 30 || l.Chunks != reps/3 {
			t.Errorf("%s: %d reps in %d chunks; every leg stops with the others (%d)", l.Leg, l.Reps, l.Chunks, reps)
		}
		for _, c := range l.Cells {
			if !c.Met || c.HalfWidth == nil || *c.HalfWidth > 0.01 || len(c.Samples) != l.Reps || len(c.Refs) != l.Chunks ||
				c.Process == nil || c.Process.N != l.Chunks || c.Process.MMax != 3 {
				t.Errorf("%s %s: %+v", l.Leg, c.Test, c)
			}
		}
	}
	// The rounds' order is the plan seed's.
	var ids []string
	for _, lp := range mustLegs(t, h) {
		ids = append(ids, lp.ID)
	}
	seeded := &study.Adaptive{Seed: 7, Order: study.OrderBlocks}
	for i, round := range a.Order {
		if want := seeded.RoundOrder(ids, i+1); !slices.Equal(round, want) {
			t.Errorf("round %d ran %v, want %v", i+1, round, want)
		}
	}
	if len(a.Order) < 2 || slices.Equal(a.Order[0], a.Order[1]) {
		t.Errorf("rounds %v: a randomised block order differs between rounds", a.Order)
	}
	// The results merge every chunk: one row per cell with all its repetitions.
	for _, c := range rep.Results {
		if c.Reps != reps || !strings.Contains(c.Source, ", ") {
			t.Errorf("result %s %s d%d: %d reps from %s", c.Model, c.Test, c.Depth, c.Reps, c.Source)
		}
	}
	var text strings.Builder
	study.WriteReport(&text, rep)
	if !strings.Contains(text.String(), "adaptive repetitions: 3 to 30 reps in chunks of 3 until tg ±1%, pp ±1%") ||
		!strings.Contains(text.String(), "results by depth (t/s, the mean of the chunks' means ± sd over the repetitions)") ||
		!strings.Contains(text.String(), "every target met") || !strings.Contains(text.String(), "(target ±1%) met after") {
		t.Errorf("show:\n%s", text.String())
	}
	if h.journalCount("study.adaptive") != 1 {
		t.Errorf("journal %q", h.rec.journal)
	}
}

func mustLegs(t *testing.T, h *harness) []study.LegPlan {
	l, err := study.LoadStudy(context.Background(), h.rec, h.id)
	if err != nil {
		t.Fatal(err)
	}
	return l.Legs
}

func TestAdaptivePrecisionNotReachedIsRecorded(t *testing.T) {
	h := newHarness(t, adaptivePlan)
	h.bench.samples = (&seededSamples{n: map[string]int{}, cv: 0.08}).draw
	sum, err := h.run(context.Background())
	if err != nil || sum.Status != study.StatusComplete {
		t.Fatalf("%+v %v", sum, err)
	}
	rep, _ := study.Show(context.Background(), h.rec, h.id)
	if rep.Adaptive.Met || !rep.Adaptive.Stop {
		t.Fatalf("%+v", rep.Adaptive)
	}
	for _, l := range rep.Adaptive.Legs {
		if l.Reps != 30 || l.Chunks != 10 {
			t.Errorf("%s: %d reps in %d chunks, want the maximum 30 in 10", l.Leg, l.Reps, l.Chunks)
		}
	}
	var text strings.Builder
	study.WriteReport(&text, rep)
	if !strings.Contains(text.String(), "stopped at the maximum: precision not reached") || !strings.Contains(text.String(), "precision not reached, CI ±") {
		t.Errorf("show:\n%s", text.String())
	}
}

// TestAdaptiveResumeAfterKillEndsAtTheSameCount kills the process in the middle of a chunk
// (the notebook marks it interrupted), runs again, and ends with exactly the chunks, the order
// and the repetition counts of an uninterrupted run given the same samples.
func TestAdaptiveResumeAfterKillEndsAtTheSameCount(t *testing.T) {
	whole := newHarness(t, adaptivePlan)
	whole.bench.samples = (&seededSamples{n: map[string]int{}, cv: 0.012}).draw
	if _, err := whole.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := chunkTrail(t, whole)

	h := newHarness(t, adaptivePlan)
	h.bench.samples = (&seededSamples{n: map[string]int{}, cv: 0.012}).draw
	seen := make(chan struct{})
	e := h.engine()
	started := 0
	e.Start = func(ctx context.Context, spec runner.QueueSpec) QueueRun {
		if started++; started != 7 {
			return h.bench.start(ctx, spec)
		}
		close(seen)
		return &fakeQueue{events: make(chan runner.Event)} // the process is gone mid-chunk
	}
	go e.Run(context.Background(), h.id) // abandoned: it is the process that dies
	<-seen
	legs, _ := h.rec.Legs(context.Background(), h.id)
	h.rec.interrupt(legs[len(legs)-1].ID)
	if _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := chunkTrail(t, h)
	if !slices.Equal(got, want) {
		t.Fatalf("resumed chunks\n%q\nwant the uninterrupted run's\n%q", got, want)
	}
	rw, _ := study.Show(context.Background(), whole.rec, whole.id)
	rh, _ := study.Show(context.Background(), h.rec, h.id)
	for i := range rw.Adaptive.Legs {
		if rw.Adaptive.Legs[i].Reps != rh.Adaptive.Legs[i].Reps || !rh.Adaptive.Met {
			t.Errorf("%s: %d reps resumed, %d uninterrupted", rw.Adaptive.Legs[i].Leg, rh.Adaptive.Legs[i].Reps, rw.Adaptive.Legs[i].Reps)
		}
	}
	if n := len(legs); n != 7 || legs[6].State != study.LegRunning {
		t.Errorf("at the kill: %d legs, last %+v", n, legs[n-1])
	}
}

// TestAdaptiveProgressCountsRoundsAndChunks: every chunk's progress line says its round, its
// place among the round's chunks and its leg's repetitions, never "leg 1/N" (the plan legs all
// stay open until the rule stops them); no ETA is claimed for a run whose length the samples
// decide.
func TestAdaptiveProgressCountsRoundsAndChunks(t *testing.T) {
	h := newHarness(t, adaptivePlan)
	h.bench.samples = (&seededSamples{n: map[string]int{}, cv: 0.08}).draw // never met: 10 rounds
	if _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	legs := len(mustLegs(t, h))
	var got []string
	for _, e := range h.events {
		if e.Progress.ETA != -1 {
			t.Errorf("%s event with ETA %v: an adaptive run's length is not known", e.Kind, e.Progress.ETA)
		}
		if e.Kind != study.EventLegStarted || e.Role != study.RoleLeg {
			continue
		}
		c := e.Chunk
		if c == nil {
			t.Fatalf("a chunk started without its progress: %+v", e)
		}
		got = append(got, fmt.Sprintf("%d %d/%d chunk %d reps %d-%d/%d", c.Round, c.InRound, c.RoundChunks, c.Chunk, c.RepsBefore+1, c.RepsBefore+c.Reps, c.MaxReps))
		line := study.EventText(e)
		want := fmt.Sprintf("round %d, chunk %d/%d: leg %s chunk %d (reps %d–%d of at most 30) started: ", c.Round, c.InRound, c.RoundChunks, e.Leg, c.Chunk, c.RepsBefore+1, c.RepsBefore+c.Reps)
		if !strings.HasPrefix(line, want) || strings.Contains(line, "leg 1/") {
			t.Errorf("progress line %q, want it to start %q", line, want)
		}
	}
	var want []string
	for round := 1; round <= 10; round++ {
		for i := 1; i <= legs; i++ {
			want = append(want, fmt.Sprintf("%d %d/%d chunk %d reps %d-%d/30", round, i, legs, round, 3*round-2, 3*round))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("chunks started:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
