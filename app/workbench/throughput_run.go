package workbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sparkbench/app/study"
	"sparkbench/store"
)

// runThroughputKind is the throughput kind's Run: RunThroughput with its events shown through
// ThroughputView, and what the run did in the words `study run` prints.
func runThroughputKind(ctx context.Context, nb *store.Notebook, s store.Study, req RunRequest) (*RunDone, error) {
	id := s.ID
	view := ThroughputView(req.Terminal, req.Event, req.Bar)
	sum, err := RunThroughput(ctx, nb, ThroughputRunRequest{ID: id, LlamaDir: req.LlamaDir, Retry: req.Retry, OnEvent: view, Hash: req.Hash, Say: req.Event, TrustCache: req.TrustCache})
	var retryErr *study.RetryError
	switch {
	case errors.Is(err, study.ErrStopped):
		return nil, fmt.Errorf("%w; run `sparkbench study run %d` to resume at the first unfinished leg", err, id)
	case errors.As(err, &retryErr):
		return nil, badInput(err)
	case err != nil:
		return nil, err
	}
	done := &RunDone{Status: sum.Status}
	switch {
	case sum.Halted:
		done.Lines = []string{
			fmt.Sprintf("study %d halted after %d/%d legs: %s", id, sum.LegsDone, sum.LegsTotal, sum.Reason),
			fmt.Sprintf("fix the cause, then `sparkbench study run %d` resumes at the first unfinished leg and runs again the legs that ended without results", id)}
	case len(sum.Incomplete) > 0:
		done.Notes = incompleteNotes(id, sum)
	default:
		done.Complete = true
		done.Lines = []string{fmt.Sprintf("study %d %s: %d/%d legs (%d run now, %d before), %d verdict(s) journaled, %s; see `sparkbench study show %d`",
			id, sum.Status, sum.LegsDone, sum.LegsTotal, sum.LegsRun, sum.LegsSkipped, len(sum.Verdicts), sum.Elapsed.Round(10*time.Millisecond), id)}
	}
	return done, nil
}

// incompleteNotes say which legs have no results, why, and what the next run does with each.
func incompleteNotes(id int64, sum study.RunSummary) []string {
	notes := []string{fmt.Sprintf("sparkbench study run: study %d incomplete: %d of %d legs have no results (%d run now, %d verdict(s) journaled)",
		id, len(sum.Incomplete), sum.LegsTotal, sum.LegsRun, len(sum.Verdicts))}
	var retryable, final []string
	for _, st := range sum.Incomplete {
		why := st.Last.Class
		if st.Last.Reason != "" {
			why += ": " + st.Last.Reason
		}
		if st.Attempts == 0 {
			why = "not run"
		}
		if st.Final {
			notes = append(notes, fmt.Sprintf("  %s: %s (attempt %d; %d of %d attempts failed: final, its predictions are decided without it)",
				st.Leg, why, st.Last.Attempt, st.Failed, st.MaxAttempts))
			final = append(final, st.Leg)
		} else {
			notes = append(notes, fmt.Sprintf("  %s: %s (attempt %d; %d more attempt(s) allowed)", st.Leg, why, st.Last.Attempt, st.RetriesLeft()))
			retryable = append(retryable, st.Leg)
		}
	}
	if len(retryable) > 0 {
		notes = append(notes, fmt.Sprintf("fix the cause, then `sparkbench study run %d` runs %s again; predictions that read %s wait for it",
			id, strings.Join(retryable, ", "), map[bool]string{true: "it", false: "them"}[len(retryable) == 1]))
	}
	for _, leg := range final {
		notes = append(notes, fmt.Sprintf("`sparkbench study run %d --retry %s` forces one more attempt of %s", id, leg, leg))
	}
	return notes
}

// ThroughputView shows a throughput run's events: on a terminal a status line redrawn in
// place (legs done/total, the current leg and its tests, ETA; at most every 100 ms but for
// the events that change it) with finished legs and verdicts as lines; else one line per
// event worth one. line and bar may be nil.
func ThroughputView(terminal bool, line func(string), bar func(text string, done bool)) func(study.Event) {
	if line == nil {
		line = func(string) {}
	}
	if bar == nil {
		bar = func(string, bool) {}
	}
	var last time.Time
	drawBar := func(pr study.Progress, force, done bool) {
		if !terminal || (!force && time.Since(last) < 100*time.Millisecond) {
			return
		}
		last = time.Now()
		bar(progressText(pr), done)
	}
	return func(e study.Event) {
		pr := e.Progress
		switch e.Kind {
		case study.EventLegSkipped, study.EventLine, study.EventLegProgress, study.EventProgress:
			// the bar (on a terminal) says enough; the leg's own output is in its transcript
		case study.EventLegStarted, study.EventSample:
			if !terminal { // a terminal shows the running leg in the bar
				line(study.EventText(e))
			}
		case study.EventHalted:
			line(study.EventText(e))
			return
		case study.EventDone:
			drawBar(pr, true, true)
			return
		default:
			if text := study.EventText(e); text != "" {
				line(text)
			}
		}
		drawBar(pr, e.Kind != study.EventSample && e.Kind != study.EventLegProgress, false)
	}
}

// progressText is a run's status line: "[####....] 1/4 legs · tiny/d128 (test 1/2) · 3s · ETA 9s".
func progressText(pr study.Progress) string {
	const width = 24
	filled := 0
	if pr.LegsTotal > 0 {
		filled = width * pr.LegsDone / pr.LegsTotal
	}
	s := fmt.Sprintf("[%s%s] %d/%d legs", strings.Repeat("#", filled), strings.Repeat(".", width-filled), pr.LegsDone, pr.LegsTotal)
	if pr.Current != "" {
		s += " · " + pr.Current
		if pr.LegTests > 0 {
			s += fmt.Sprintf(" (test %d/%d)", min(pr.LegTest+1, pr.LegTests), pr.LegTests)
		}
	}
	s += " · " + pr.Elapsed.Round(time.Second).String()
	if pr.ETA >= 0 {
		s += " · ETA " + pr.ETA.Round(time.Second).String()
	}
	return s
}
