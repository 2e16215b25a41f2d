package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"sparkbench/app/study"
	"sparkbench/app/textsafe"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// studyRun: sparkbench study run ID|FILE [--llama-dir D] [--notebook P].
func studyRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study run", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	llamaDir := fs.String("llama-dir", "", "folder holding llama-bench (default: the plan's build.dir, $SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)")
	var retry multiFlag
	fs.Var(&retry, "retry", "run this plan leg once more although its failures reached the plan's retries (repeatable); only a leg without results")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench study run: want one study id (or name) or one plan file\n")
		return 2
	}
	nb, code := openStudyNotebook("study run", *nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	var id int64
	ref := pos[0]
	if st, err := os.Stat(ref); err == nil && !st.IsDir() {
		_, sid, code := registerAnyFile(ctx, nb, "study", ref, stdout, stderr)
		if code != 0 {
			return code
		}
		id, ref = sid, fmt.Sprint(sid)
	}
	if k, s := sharedKind(ctx, nb, ref, takesRun); k != nil {
		return runKind(ctx, nb, k, s, *llamaDir, stdout, stderr)
	}
	if id == 0 {
		if id, err = findStudy(ctx, nb, ref); err != nil {
			fprintf(stderr, "sparkbench study run: %v\n", err)
			return 2
		}
	}
	return runStudy(ctx, nb, id, *llamaDir, retry, stdout, stderr)
}

// runStudy runs (or resumes) a registered study with progress on stdout.
func runStudy(ctx context.Context, nb *store.Notebook, id int64, llamaDir string, retry []string, stdout, stderr io.Writer) int {
	pr := newRunPrinter(stdout)
	sum, err := workbench.RunThroughput(ctx, nb, workbench.ThroughputRunRequest{ID: id, LlamaDir: llamaDir, Retry: retry, OnEvent: pr.event, Hash: hashShow(stderr)})
	pr.close()
	var bad *workbench.RequestError
	if errors.As(err, &bad) {
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	}
	var retryErr *study.RetryError
	switch {
	case errors.Is(err, study.ErrStopped):
		fprintf(stderr, "sparkbench study run: %v; run `sparkbench study run %d` to resume at the first unfinished leg\n", err, id)
		return 1
	case errors.As(err, &retryErr):
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	case err != nil:
		return reportRefusal("study run", err, stderr)
	}
	if sum.Halted {
		fprintf(stdout, "study %d halted after %d/%d legs: %s\n", id, sum.LegsDone, sum.LegsTotal, sum.Reason)
		fprintf(stdout, "fix the cause, then `sparkbench study run %d` resumes at the first unfinished leg and runs again the legs that ended without results\n", id)
		return 1
	}
	if len(sum.Incomplete) > 0 {
		printIncomplete(stderr, id, sum)
		return 1
	}
	fprintf(stdout, "study %d %s: %d/%d legs (%d run now, %d before), %d verdict(s) journaled, %s; see `sparkbench study show %d`\n",
		id, sum.Status, sum.LegsDone, sum.LegsTotal, sum.LegsRun, sum.LegsSkipped, len(sum.Verdicts), sum.Elapsed.Round(10*time.Millisecond), id)
	return 0
}

// printIncomplete says which legs have no results, why, and what the next run does with each.
func printIncomplete(w io.Writer, id int64, sum study.RunSummary) {
	fprintf(w, "sparkbench study run: study %d incomplete: %d of %d legs have no results (%d run now, %d verdict(s) journaled)\n",
		id, len(sum.Incomplete), sum.LegsTotal, sum.LegsRun, len(sum.Verdicts))
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
			fprintf(w, "  %s: %s (attempt %d; %d of %d attempts failed: final, its predictions are decided without it)\n",
				st.Leg, why, st.Last.Attempt, st.Failed, st.MaxAttempts)
			final = append(final, st.Leg)
		} else {
			fprintf(w, "  %s: %s (attempt %d; %d more attempt(s) allowed)\n", st.Leg, why, st.Last.Attempt, st.RetriesLeft())
			retryable = append(retryable, st.Leg)
		}
	}
	if len(retryable) > 0 {
		fprintf(w, "fix the cause, then `sparkbench study run %d` runs %s again; predictions that read %s wait for it\n",
			id, strings.Join(retryable, ", "), map[bool]string{true: "it", false: "them"}[len(retryable) == 1])
	}
	for _, leg := range final {
		fprintf(w, "`sparkbench study run %d --retry %s` forces one more attempt of %s\n", id, leg, leg)
	}
}

// runPrinter shows a run: on a terminal a progress bar redrawn in place (legs done/total, the
// current leg and its tests, ETA) with finished legs and verdicts scrolling above it; else one
// plain line per event.
type runPrinter struct {
	w      io.Writer
	tty    bool
	last   time.Time
	barLen int
}

func newRunPrinter(w io.Writer) *runPrinter { return &runPrinter{w: w, tty: isTerminal(w)} }

func (p *runPrinter) line(format string, a ...any) {
	if p.tty && p.barLen > 0 {
		fprintf(p.w, "\r\033[K")
		p.barLen = 0
	}
	// Recorded text (a model path, llama-bench's own output) reaches the terminal escaped.
	fprintf(p.w, "%s\n", textsafe.Escape(fmt.Sprintf(format, a...)))
}

func (p *runPrinter) bar(pr study.Progress, force bool) {
	if !p.tty || (!force && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
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
	fprintf(p.w, "\r\033[K%s", s)
	p.barLen = len(s)
}

func (p *runPrinter) event(e study.Event) {
	pr := e.Progress
	switch e.Kind {
	case study.EventLegSkipped, study.EventLine, study.EventLegProgress, study.EventProgress:
		// the bar (on a terminal) says enough; the leg's own output is in its transcript
	case study.EventLegStarted, study.EventSample:
		if !p.tty { // a terminal shows the running leg in the bar
			p.line("%s", study.EventText(e))
		}
	case study.EventHalted:
		p.line("%s", study.EventText(e))
		return
	case study.EventDone:
		if p.tty {
			p.bar(pr, true)
			fprintf(p.w, "\n")
			p.barLen = 0
		}
		return
	default:
		if text := study.EventText(e); text != "" {
			p.line("%s", text)
		}
	}
	p.bar(pr, e.Kind != study.EventSample && e.Kind != study.EventLegProgress)
}

func (p *runPrinter) close() {
	if p.tty && p.barLen > 0 {
		fprintf(p.w, "\n")
	}
}
