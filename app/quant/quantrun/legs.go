package quantrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"sparkbench/app/quant"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamacpp"
	"sparkbench/store"
)

// legLimits bound every process of a ladder: a first output within two minutes, no silence
// longer than ten, an hour at most.
var legLimits = runner.Limits{Start: 2 * time.Minute, Idle: 10 * time.Minute, Total: time.Hour, Grace: 5 * time.Second}

// openLeg is a leg recorded from before its process starts (its argv as planned) until finish.
type openLeg struct {
	id int64
	sw *store.SampleWriter
}

// startLeg records a leg as started, before its process runs: its times are the process's.
func (e *engine) startLeg(ctx context.Context, label, kind string, argv []string) (*openLeg, error) {
	l, sw, err := e.nb.StartLeg(ctx, store.LegSpec{StudyID: e.study.ID, Label: label, Kind: kind, Argv: argv})
	if err != nil {
		return nil, err
	}
	return &openLeg{l.ID, sw}, nil
}

// finish records how the leg's process ended: its bench rows (if any), its transcript and its
// outcome.
func (e *engine) finish(ctx context.Context, l *openLeg, x runner.Exit, tr *runner.Transcript, rows []benchfmt.Result) error {
	if len(rows) > 0 {
		if err := l.sw.AddBench(rows...); err != nil {
			return err
		}
	}
	if err := l.sw.Flush(ctx); err != nil {
		return err
	}
	out := store.LegOutcome{Class: string(x.Class), Reason: x.Reason, Signal: x.Signal, PeakRSSBytes: x.PeakRSS}
	if tr != nil {
		out.Transcript = tr.Bytes()
	}
	_, _, err := e.nb.FinishLeg(context.WithoutCancel(ctx), l.id, out)
	e.legs++
	return err
}

// drain reads a process's events until it ends, saying its progress now and then.
func (e *engine) drain(label string, events <-chan runner.Event) {
	last := time.Time{}
	for ev := range events {
		if ev.Type == runner.EventProgress && ev.Progress != nil && time.Since(last) > 2*time.Second {
			last = time.Now()
			e.say(fmt.Sprintf("%s: %d of %d", label, ev.Progress.Done, ev.Progress.Total))
		}
	}
}

// retry runs attempt up to tries times, each attempt its own leg (label, then label#2, …),
// while it says to run again (a run that ended incomplete for no reason the tool gave: its
// last lines lost at exit; or a speed leg the CV gate flagged); why says the last attempt's
// reason.
func (e *engine) retry(ctx context.Context, label string, tries int, why func() string, attempt func(id string) (again bool, err error)) error {
	for i := 1; i <= tries; i++ {
		id := label
		if i > 1 {
			id = fmt.Sprintf("%s#%d", label, i)
			e.say(fmt.Sprintf("%s: again (attempt %d of %d): %s", id, i, tries, why()))
		}
		again, err := attempt(id)
		if err != nil || !again || ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// derive reuses the cached candidate of r.Type or makes it with llama-quantize.
func (e *engine) derive(ctx context.Context, r *quant.Record) error {
	p := e.plan
	key := quant.CacheKey(p.Reference.SHA256, r.Type, e.imatrix.sha, e.build)
	r.Key = key
	d, ok, err := e.cached(ctx, key, r.Type)
	if err != nil {
		return err
	}
	path, _ := cachePaths(e.cacheDir, key)
	if ok {
		e.reused++
		r.Reused = true
		e.say(fmt.Sprintf("%s: reused %s (cache key %s)", r.Type, path, key[:12]))
	} else {
		spec := runner.QuantizeSpec{ID: "quantize/" + r.Type, Tool: e.qtool, Input: p.Reference.Path, Output: path,
			Type: r.Type, IMatrix: e.imatrix.path, Threads: p.Speed.Threads, Env: e.env, Limits: legLimits, NoFingerprint: true}
		var res *runner.QuantizeResult
		// A run that ended incomplete for no reason the tool gave (its last lines lost at
		// exit; nothing was put in place) runs again, each attempt its own leg.
		err := e.retry(ctx, "quantize/"+r.Type, perplexityAttempts, func() string { return res.Exit.Reason }, func(id string) (bool, error) {
			l, err := e.startLeg(ctx, id, "other", spec.Argv(path))
			if err != nil {
				return false, err
			}
			run := runner.StartQuantize(ctx, spec)
			e.drain("quantize "+r.Type, run.Events())
			res = run.Result()
			if err := e.finish(ctx, l, res.Exit, res.Transcript, nil); err != nil {
				return false, err
			}
			return res.Exit.Class == runner.ClassIncomplete && res.Err == nil, nil
		})
		if err != nil {
			return err
		}
		if res.Exit.Class != runner.ClassOK {
			if res.Err != nil {
				return fmt.Errorf("quantize %s: %w", r.Type, res.Err)
			}
			e.note(r, "quantize/"+r.Type, "quantize: %s: %s", res.Exit.Class, res.Exit.Reason)
			return nil
		}
		sum, err := e.hash(path)
		if err != nil {
			return err
		}
		d = Derived{Schema: schemaDerived, Key: key, Parent: p.Reference.SHA256, Type: r.Type, Imatrix: e.imatrix.sha, Build: e.build, SHA256: sum,
			Bytes: res.Bytes, Argv: res.Argv, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
		if err := e.record(d); err != nil {
			return err
		}
		e.say(fmt.Sprintf("%s: quantized in %s, %d MiB, sha256 %s", r.Type, res.End.Sub(res.Start).Round(10*time.Millisecond), res.Bytes>>20, sum[:12]))
	}
	r.File, r.SHA256, r.Bytes, r.Quantize, r.Imatrix = path, d.SHA256, d.Bytes, d.Argv, d.Imatrix
	e.noteFile(path)
	if h, err := gguf.ReadFile(path); err == nil {
		r.Bits = bitsPerWeight(h)
	}
	return nil
}

// bitsPerWeight is the file's tensor bytes × 8 over its weights, from its tensor table.
func bitsPerWeight(h *gguf.File) float64 {
	var bytes, weights float64
	for _, t := range h.Tensors {
		bytes += float64(t.Size)
		weights += float64(t.Elements())
	}
	if weights == 0 {
		return 0
	}
	return math.Round(bytes*8/weights*1000) / 1000
}

// benchAttempts bounds the runs of one speed leg the CV gate flags.
const benchAttempts = 3

// perplexityAttempts bounds the runs of one llama-perplexity leg: a run that ends without its
// statistics block or final estimate for no reason the tool gave (its last lines lost at exit,
// seen about once in fifteen runs here) is run again, each attempt its own leg.
const perplexityAttempts = 3

// perplexity runs spec, again when it ended incomplete for no typed reason; each attempt is
// recorded as a leg (label, then label#2, …). The last result is returned.
func (e *engine) perplexity(ctx context.Context, label string, spec runner.PerplexitySpec, done func(*runner.PerplexityResult) bool) (*runner.PerplexityResult, error) {
	var res *runner.PerplexityResult
	err := e.retry(ctx, label, perplexityAttempts, func() string { return res.Exit.Reason }, func(id string) (bool, error) {
		spec.ID = id
		lg, err := e.startLeg(ctx, id, "other", spec.Argv(spec.Base))
		if err != nil {
			return false, err
		}
		run := runner.StartPerplexity(ctx, spec)
		e.drain(id, run.Events())
		res = run.Result()
		if err := e.finish(ctx, lg, res.Exit, res.Transcript, nil); err != nil {
			return false, err
		}
		return !done(res) && res.Err == nil, nil
	})
	if err == nil {
		err = ctx.Err()
	}
	return res, err
}

// baseLogits writes the reference's logits on the corpus once per run.
func (e *engine) baseLogits(ctx context.Context, base string) error {
	q := e.plan.Quality
	res, err := e.perplexity(ctx, "kld-base", runner.PerplexitySpec{Tool: e.ptool, Model: e.plan.Reference.Path, Mode: runner.PerplexityBase,
		Corpus: q.Corpus.Path, Base: base, Ctx: q.Ctx, Chunks: q.Chunks, Args: []string{"-t", strconv.Itoa(e.plan.Speed.Threads)},
		Env: e.env, Limits: legLimits, NoFingerprint: true}, func(r *runner.PerplexityResult) bool { return r.Exit.Class == runner.ClassOK && r.Base != nil })
	if err != nil {
		return err
	}
	if res.Exit.Class != runner.ClassOK || res.Base == nil {
		if res.Err != nil {
			return fmt.Errorf("base logits: %w", res.Err)
		}
		return fmt.Errorf("base logits: llama-perplexity %s: %s", res.Exit.Class, res.Exit.Reason)
	}
	e.say(fmt.Sprintf("base logits: %d chunks of %d tokens, %d MiB", res.Base.Header.NChunk, res.Base.Header.NCtx, res.Base.Bytes>>20))
	return nil
}

// kld measures the candidate's KL divergence against the base logits.
func (e *engine) kld(ctx context.Context, r *quant.Record, base string) error {
	label := "kld/" + r.Label()
	res, err := e.perplexity(ctx, label, runner.PerplexitySpec{Tool: e.ptool, Model: r.File, Mode: runner.PerplexityKLD, Base: base,
		Args: append([]string{"-t", strconv.Itoa(e.plan.Speed.Threads)}, kvArgs(r)...), Env: e.env, Limits: legLimits, NoFingerprint: true},
		func(r *runner.PerplexityResult) bool { return r.Exit.Class == runner.ClassOK && r.KLD != nil })
	if err != nil {
		return err
	}
	s := res.KLD
	if res.Exit.Class != runner.ClassOK || s == nil {
		e.note(r, "kld/"+r.Label(), "kld: llama-perplexity %s: %s", res.Exit.Class, res.Exit.Reason)
		return nil
	}
	label = res.ID
	p99, ok := s.KLDPercentile(99)
	if !ok {
		e.note(r, "kld/"+r.Label(), "kld: no 99.0%% KLD line")
		return nil
	}
	r.KLD = &quant.KLD{Mean: s.MeanKLD.Value, P99: p99.Value, Max: s.MaxKLD.Value, SameTopP: s.SameTopP.Value / 100, PPLRatio: s.MeanPPLRatio.Value}
	r.KLDLeg = label
	r.KLDLines = []int{s.MeanKLD.Line, p99.Line, s.MaxKLD.Line, s.SameTopP.Line, s.MeanPPLRatio.Line}
	e.say(fmt.Sprintf("%s: mean KLD %.6f, 99%% %.6f, same top p %.2f%%", label, r.KLD.Mean, r.KLD.P99, s.SameTopP.Value))
	return nil
}

// kvArgs are the KV cache flags of a candidate that runs with a KV type of the plan's kv_types
// (none: the tools' default f16 cache, as the reference's base logits were made).
func kvArgs(r *quant.Record) []string {
	if r.KV == nil {
		return nil
	}
	return []string{"-ctk", r.KV.K, "-ctv", r.KV.V}
}

// project asks llama-fit-params for the candidate's memory at the plan's memory_ctx (a plan
// without one: nothing). The tool reads the model's metadata only; its line is kept.
func (e *engine) project(ctx context.Context, r *quant.Record) error {
	if e.ftool == "" {
		return nil
	}
	pr, err := llamacpp.ProjectMemory(ctx, e.ftool, r.File, e.env, e.plan.MemoryCtx, kvArgs(r)...)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.note(r, "memory/"+r.Label(), "memory projection: %v", err)
		return nil
	}
	r.Projected = &quant.Projection{MiB: pr.MiB, Of: pr.Of, Line: pr.Line}
	e.say(fmt.Sprintf("%s: llama-fit-params projects %d MiB of %s memory at -c %d", r.Label(), pr.MiB, pr.Of, e.plan.MemoryCtx))
	return nil
}

// bench runs llama-bench on the candidate at each depth of the plan but those kept from the
// last run: one leg per depth, its rows in the notebook, a cell per test; the peak RSS is the
// largest of its legs'.
func (e *engine) bench(ctx context.Context, r *quant.Record, kept map[int]bool) error {
	sp := e.plan.Speed
	bench := e.loc.Bench
	for _, d := range sp.Depths {
		if kept[d] {
			continue
		}
		label := fmt.Sprintf("bench/%s/d%d", r.Label(), d)
		// The file must be the one the run hashed, before the leg (else it is not run) and
		// after it (else its rows do not count): the candidate stays incomplete.
		if why := e.fileChanged(r.File, nil); why != "" {
			e.note(r, label, "%s: %s; put the file back (or run the ladder again: it quantizes anew what no longer hashes as recorded)", codeModelChanged, why)
			return nil
		}
		args := append([]string{"-m", r.File, "-p", strconv.Itoa(sp.NPrompt), "-n", strconv.Itoa(sp.NGen), "-d", strconv.Itoa(d),
			"-r", strconv.Itoa(sp.Reps), "-t", strconv.Itoa(sp.Threads)}, kvArgs(r)...)
		var res *runner.LegResult
		var rows []benchfmt.Result
		var sampled benchEnergy
		var changed string // the file changed during the attempt (modelcheck.go)
		// A leg the CV gate or a machine-state gate flagged (the machine was noisy, hot or
		// throttled) runs again, as a throughput study's legs do; each attempt is its own leg.
		err := e.retry(ctx, label, benchAttempts, func() string { return res.Exit.Reason + sampled.why() }, func(id string) (bool, error) {
			label = id
			spec := runner.LegSpec{ID: id, Bench: bench, Args: args, Env: e.env, Limits: legLimits, NoFingerprint: true,
				CVGate: runner.CVGate{TG: sp.Gates.CVTG, PPDepth: sp.Gates.CVPPDepth, PP: sp.Gates.CVPPD0, Count: sp.Gates.CountsFlagged()}}
			lg, err := e.startLeg(ctx, id, "bench", spec.Argv())
			if err != nil {
				return false, err
			}
			tel := e.beginTelemetry(ctx, lg.id)
			leg := runner.StartLeg(ctx, spec)
			for ev := range leg.Events() {
				if tel != nil && ev.Type == runner.EventSample {
					tel.Row()
				}
			}
			res = leg.Result()
			rows = rows[:0]
			for _, s := range res.Results() {
				rows = append(rows, s.Result)
			}
			if sampled, err = e.endTelemetry(ctx, tel, lg.id, rows); err != nil {
				return false, err
			}
			changed = e.fileChanged(r.File, rows)
			end := res.Exit
			if changed != "" && end.Class == runner.ClassOK {
				end.Class, end.Reason = runner.ClassFlagged, codeModelChanged+": "+changed
			}
			if err := e.finish(ctx, lg, end, res.Transcript, rows); err != nil {
				return false, err
			}
			r.PeakRSS = max(r.PeakRSS, res.Exit.PeakRSS)
			return changed == "" && (res.Exit.Class == runner.ClassFlagged || len(sampled.breaches) > 0), nil
		})
		if err != nil {
			return err
		}
		if changed != "" {
			e.note(r, label, "%s: %s; put the file back (or run the ladder again: it quantizes anew what no longer hashes as recorded)", codeModelChanged, changed)
			return nil
		}
		if sampled.leg != nil {
			sampled.leg.Leg = label
			r.Energy = append(r.Energy, *sampled.leg)
		}
		if res.Exit.Class != runner.ClassOK || len(sampled.breaches) > 0 {
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			e.note(r, fmt.Sprintf("bench/%s/d%d", r.Label(), d), "%s: llama-bench %s: %s%s", label, res.Exit.Class, res.Exit.Reason, sampled.why())
			continue
		}
		for i, row := range rows {
			test := string(row.Kind())
			c := quant.BenchCell{Test: test, Depth: d, Mean: row.AvgTs, SD: row.StddevTs, N: len(row.SamplesTs), Leg: label, Row: i + 1}
			if f, ok := sampled.rows[i]; ok && f.JPerToken > 0 {
				c.JPerToken, c.TokensPerJ = f.JPerToken, f.TokensPerJ
			}
			r.Bench = append(r.Bench, c)
			e.say(fmt.Sprintf("%s: %s %.2f ± %.2f t/s", label, test, row.AvgTs, row.StddevTs))
		}
	}
	return nil
}
