package studyrun

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"sparkbench/app/study"
	"sparkbench/runner"
)

// chunkRun is one chunk of an adaptive leg: its own repetitions, its place in the rounds.
type chunkRun struct {
	chunk   int // 1-based, among the leg's chunks with results
	round   int // 1-based
	reps    int
	attempt int // 1 + the leg's failed attempts so far
	// Where it stands, for the progress line: its place among the round's chunks, the round's
	// chunks, the leg's repetitions before it and the plan's maximum.
	inRound, roundChunks, repsBefore, maxReps int
}

// progress is the chunk as its leg_started event reports it.
func (c *chunkRun) progress() *study.ChunkProgress {
	return &study.ChunkProgress{Round: c.round, InRound: c.inRound, RoundChunks: c.roundChunks, Chunk: c.chunk,
		RepsBefore: c.repsBefore, Reps: c.reps, MaxReps: c.maxReps}
}

func (c *chunkRun) label(leg string) string {
	s := fmt.Sprintf("%s chunk %d", leg, c.chunk)
	if c.attempt > 1 {
		s += fmt.Sprintf(" (attempt %d)", c.attempt)
	}
	return s
}

// args are the leg's arguments with the chunk's -r.
func (c *chunkRun) args(legArgs []string) []string {
	out := slices.Clone(legArgs)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "-r" {
			out[i+1] = strconv.Itoa(c.reps)
		}
	}
	return out
}

// runAdaptive runs an adaptive plan's chunks, one at a time, until the stopping rule stops
// every leg. Before each chunk the state is read back from the notebook and the rule applied
// to it, so a run resumed after a kill continues exactly where the samples say: the next chunk
// is the first, in the round's order (from the plan's seed), of the legs with the fewest
// chunks. A leg whose chunk ends without results is left for the next run (it counts toward
// the plan's retry limit); halted reports a stop by a gate or the user.
func (r *run) runAdaptive(ctx context.Context, sum *study.RunSummary) (halted bool, err error) {
	l := r.l
	a := l.Plan.Adaptive
	ids := make([]string, len(l.Legs))
	byID := map[string]study.LegPlan{}
	for i, lp := range l.Legs {
		ids[i], byID[lp.ID] = lp.ID, lp
	}
	failedHere := map[string]bool{}
	for {
		st := study.NewAdaptiveState(l.Plan, l.St.PlanDir, l.Legs, l.Stored, l.Rows)
		r.adaptiveFinal = st.Finished()
		r.progress.LegsDone = len(r.adaptiveFinal)
		if st.Stop {
			return false, r.noteAdaptive(ctx, st)
		}
		leg, ch := nextChunk(a, st, ids, failedHere)
		if ch == nil {
			return false, nil // every leg that could run failed in this run: the next run retries
		}
		if ctx.Err() != nil {
			return true, r.halt(ctx, leg, string(runner.ClassStoppedByUser), "stopped by the user before "+ch.label(leg), sum)
		}
		if l.Plan.Canary != nil && r.baseline == nil {
			if err := r.canaryBaseline(ctx); err != nil {
				return false, err
			}
		}
		ch.attempt = 1 + attemptsSinceResults(l.Stored, leg)
		out, err := r.runLeg(ctx, byID[leg], ch)
		if err != nil {
			return false, err
		}
		if out.results == 0 {
			failedHere[leg] = true
		}
		if out.halted != nil {
			return true, r.halt(ctx, leg, string(out.halted.Class), out.halted.Reason, sum)
		}
	}
}

// nextChunk picks the next chunk: among the legs still running (not failed for good, not
// failed in this run, below the maximum), those with the fewest chunks make the round; the
// first of them in the round's order runs.
func nextChunk(a *study.Adaptive, st *study.AdaptiveState, ids []string, failedHere map[string]bool) (string, *chunkRun) {
	rule := a.Rule()
	round := -1
	open := map[string]study.AdaptiveLeg{}
	for _, l := range st.Legs {
		if l.Failed || failedHere[l.Leg] || rule.NextChunk(l.Reps) == 0 {
			continue
		}
		open[l.Leg] = l
		if round < 0 || l.Chunks < round {
			round = l.Chunks
		}
	}
	// The round's chunks: those run in it already (legs one chunk ahead) and those to run.
	done, pending := 0, 0
	for _, l := range st.Legs {
		_, isOpen := open[l.Leg]
		if !l.Failed && l.Chunks == round+1 {
			done++
		} else if isOpen && l.Chunks == round {
			pending++
		}
	}
	for _, id := range a.RoundOrder(ids, round+1) {
		if l, ok := open[id]; ok && l.Chunks == round {
			return id, &chunkRun{chunk: l.Chunks + 1, round: round + 1, reps: rule.NextChunk(l.Reps),
				inRound: done + 1, roundChunks: done + pending, repsBefore: l.Reps, maxReps: a.MaxReps}
		}
	}
	return "", nil
}

// noteAdaptive journals how the stopping rule ended (once per run that ends it or finds it
// ended): each leg's reps and each cell's words ("precision not reached, CI ±x%").
func (r *run) noteAdaptive(ctx context.Context, st *study.AdaptiveState) error {
	var legs []map[string]any
	for _, l := range st.Legs {
		var cells []string
		for _, c := range l.Cells {
			cells = append(cells, fmt.Sprintf("%s @ d%d: %s", c.Test, c.Depth, c.Words(l.Reps)))
		}
		legs = append(legs, map[string]any{"leg": l.Leg, "chunks": l.Chunks, "reps": l.Reps, "met": l.Met, "cells": cells})
	}
	return r.e.Rec.Note(context.WithoutCancel(ctx), r.l.St.ID, study.NoteAdaptive, map[string]any{
		"rule": r.l.Plan.Adaptive.RuleWords(), "met": st.Met, "legs": legs, "order": study.ChunkOrder(r.l.Legs, r.l.Stored)})
}

// attemptsSinceResults counts a plan leg's chunks that ended without results (failed,
// stopped, interrupted) since its last chunk with results: the next one is attempt n+1.
func attemptsSinceResults(stored []study.StoredLeg, leg string) int {
	n := 0
	for _, s := range stored {
		if s.Role != study.RoleLeg || s.PlanLeg != leg {
			continue
		}
		if study.HasResults(s) {
			n = 0
		} else {
			n++
		}
	}
	return n
}
