// Package kvquality checks what a study's cheaper KV cache types cost in output quality (a
// throughput study's kv_types, a capacity or concurrency study's candidates that differ from
// an f16 candidate by their cache type): for each model and each non-f16 KV type measured, the KL divergence of the
// model's output with that cache (llama-perplexity -ctk/-ctv --kl-divergence) from the same
// model with an f16 cache (its base logits), on the project's corpus. Each llama-perplexity run
// is a leg of the study in the notebook; each result a journal entry, read back into the
// study's report (Attach) beside the speed the cache type bought. It is process code.
package kvquality

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sparkbench/app/study"
	"sparkbench/assets"
	"sparkbench/runner"
	"sparkbench/runner/quantfmt"
	"sparkbench/store"
)

// Entry is one check as journaled (study.EntryKVKLD).
type Entry = study.KVCheck

// The check's settings: chunks of ctx tokens of the project corpus.
const (
	ctx    = 128
	chunks = 8
)

// Needed are the plan's KV types other than f16/f16, in plan order.
func Needed(p *study.Plan) []study.KVType {
	var out []study.KVType
	for _, kv := range p.Axes.KV {
		if kv != (study.KVType{K: "f16", V: "f16"}) {
			out = append(out, kv)
		}
	}
	return out
}

// Options are how the check runs: the build's folder, the data folder (the corpus and the
// base logits go under it), the threads, and where each step's line goes. Env is the
// environment every llama-perplexity runs with (the plan's device variables) and Gate the
// plan's mean KLD limit (nil: none), which each result's line judges.
type Options struct {
	Perplexity string
	DataDir    string
	Threads    int
	Event      func(string)
	Env        []string
	Gate       *study.KVQualityGate
}

// Target is one model to check: its name in leg labels and journal entries, its file, and the
// KV types to check against f16 in order; Threads, when above 0, replaces Options.Threads.
type Target struct {
	Model   string
	Path    string
	KVs     []study.KVType
	Threads int
}

var limits = runner.Limits{Start: 2 * time.Minute, Idle: 10 * time.Minute, Total: time.Hour, Grace: 5 * time.Second}

// Run checks every model × non-f16 KV type of throughput study id that has no check journaled
// yet (RunTargets).
func Run(c context.Context, nb *store.Notebook, id int64, p *study.Plan, planDir string, o Options) (int, error) {
	kvs := Needed(p)
	if len(kvs) == 0 {
		return 0, nil
	}
	var targets []Target
	for _, m := range p.Models {
		targets = append(targets, Target{Model: m.ID, Path: study.ResolvePath(planDir, m.Path), KVs: kvs})
	}
	o.Env, o.Gate = p.Build.EnvList(), p.KVQuality
	return RunTargets(c, nb, id, targets, o)
}

// RunTargets checks every target's KV types that have no check journaled yet under study id:
// once per model the f16 base logits, then each KV type's KL divergence from them. It returns
// how many it journaled; a llama-perplexity run that fails is a leg with its class and no
// entry (the next run tries again).
func RunTargets(c context.Context, nb *store.Notebook, id int64, targets []Target, o Options) (int, error) {
	if len(targets) == 0 {
		return 0, nil
	}
	done, err := Load(c, nb, id)
	if err != nil {
		return 0, err
	}
	say := func(format string, a ...any) {
		if o.Event != nil {
			o.Event(fmt.Sprintf(format, a...))
		}
	}
	corpus, err := writeCorpus(o.DataDir)
	if err != nil {
		return 0, err
	}
	work := filepath.Join(o.DataDir, "runs", fmt.Sprintf("kv-quality-%d-%s", id, time.Now().UTC().Format("20060102-150405")))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return 0, err
	}
	n := 0
	for _, m := range targets {
		var todo []study.KVType
		for _, kv := range m.KVs {
			if !slices.ContainsFunc(done, func(e Entry) bool { return e.Model == m.Model && e.KV == kv.K+"/"+kv.V }) {
				todo = append(todo, kv)
			}
		}
		if len(todo) == 0 {
			continue
		}
		threads := []string{"-t", strconv.Itoa(max(o.Threads, 1))}
		if m.Threads > 0 {
			threads[1] = strconv.Itoa(m.Threads)
		}
		base := filepath.Join(work, m.Model+"-f16.kld")
		res, _, err := leg(c, nb, id, study.KVLegPrefix+m.Model+"/f16 base", runner.PerplexitySpec{Tool: o.Perplexity, Model: m.Path, Mode: runner.PerplexityBase,
			Corpus: corpus, Base: base, Ctx: ctx, Chunks: chunks, Args: threads, Env: o.Env, Limits: limits, NoFingerprint: true})
		if err != nil {
			return n, err
		}
		if res.Exit.Class != runner.ClassOK || res.Base == nil {
			say("kv quality %s: the f16 base logits failed (%s: %s); the check is left for the next run", m.Model, res.Exit.Class, res.Exit.Reason)
			continue
		}
		for _, kv := range todo {
			name := kv.K + "/" + kv.V
			label := fmt.Sprintf("%s%s/%s", study.KVLegPrefix, m.Model, strings.ReplaceAll(name, "/", "-"))
			args := append(slices.Clone(threads), "-ctk", kv.K, "-ctv", kv.V)
			res, label, err := leg(c, nb, id, label, runner.PerplexitySpec{Tool: o.Perplexity, Model: m.Path, Mode: runner.PerplexityKLD, Base: base,
				Args: args, Env: o.Env, Limits: limits, NoFingerprint: true})
			if err != nil {
				return n, err
			}
			s := res.KLD
			ok := res.Exit.Class == runner.ClassOK && s != nil
			var p99 quantfmt.Figure
			if ok {
				p99, ok = s.KLDPercentile(99)
			}
			if !ok {
				say("kv quality %s %s: llama-perplexity %s: %s; left for the next run", m.Model, name, res.Exit.Class, res.Exit.Reason)
				continue
			}
			e := Entry{Study: id, Model: m.Model, KV: name, Leg: label, MeanKLD: s.MeanKLD.Value, P99KLD: p99.Value, SameTopP: s.SameTopP.Value / 100,
				Lines: []int{s.MeanKLD.Line, p99.Line, s.SameTopP.Line}, Ctx: ctx, Chunks: chunks}
			if _, err := nb.AppendJournal(c, study.EntryKVKLD, e, store.ForStudy(id)); err != nil {
				return n, err
			}
			n++
			gate := ""
			if g := o.Gate; g != nil {
				gate = fmt.Sprintf("; gate (mean KLD <= %g): %s", g.KLDMeanMax, study.KVGateOutcome(e.MeanKLD, g))
			}
			say("kv quality %s: %s against f16: mean KLD %.6f, 99%% %.6f, same top p %.2f%%%s", m.Model, name, e.MeanKLD, e.P99KLD, e.SameTopP*100, gate)
		}
	}
	return n, nil
}

// leg runs one llama-perplexity as a leg of the study, recorded from before it starts to after
// it ends (again, once, when it ended without its figures for no reason the tool gave: its last
// lines lost at exit).
func leg(c context.Context, nb *store.Notebook, id int64, label string, spec runner.PerplexitySpec) (*runner.PerplexityResult, string, error) {
	var res *runner.PerplexityResult
	l := label
	for attempt := 1; attempt <= 2; attempt++ {
		l = label
		if attempt > 1 {
			l += " (attempt 2)"
		}
		lg, sw, err := nb.StartLeg(c, store.LegSpec{StudyID: id, Label: l, Kind: "other", Argv: spec.Argv(spec.Base),
			Detail: json.RawMessage(`{"role":"kv-quality"}`)})
		if err != nil {
			return res, l, err
		}
		run := runner.StartPerplexity(c, spec)
		for range run.Events() {
		}
		res = run.Result()
		if err := sw.Flush(c); err != nil {
			return res, l, err
		}
		out := store.LegOutcome{Class: string(res.Exit.Class), Reason: res.Exit.Reason, PeakRSSBytes: res.Exit.PeakRSS}
		if res.Transcript != nil {
			out.Transcript = res.Transcript.Bytes()
		}
		if _, _, err := nb.FinishLeg(context.WithoutCancel(c), lg.ID, out); err != nil {
			return res, l, err
		}
		if res.Exit.Class == runner.ClassOK || res.Err != nil || c.Err() != nil {
			break
		}
	}
	return res, l, c.Err()
}

// writeCorpus puts the project corpus in the data folder (once) and returns its path.
func writeCorpus(dataDir string) (string, error) {
	dir := filepath.Join(dataDir, "corpus")
	path := filepath.Join(dir, assets.CorpusName)
	if b, err := os.ReadFile(path); err == nil && string(b) == string(assets.Corpus) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, assets.Corpus, 0o644)
}

// Load reads study id's journaled checks, the last of each model and KV type.
func Load(c context.Context, nb *store.Notebook, id int64) ([]Entry, error) {
	entries, err := nb.Journal(c, id, 0, 0)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, je := range entries {
		if je.Kind != study.EntryKVKLD {
			continue
		}
		var e Entry
		if err := json.Unmarshal(je.Payload, &e); err != nil {
			return nil, fmt.Errorf("journal entry %d: %w", je.Seq, err)
		}
		out = append(out, e)
	}
	return study.LatestKVChecks(out), nil
}
