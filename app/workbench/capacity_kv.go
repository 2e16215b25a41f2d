package workbench

import (
	"context"
	"fmt"
	"slices"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/app/study/kvquality"
	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
	"sparkbench/store"
)

// The KV cache quality check of capacity and concurrency studies: once a study's cells are
// assembled, each KV arm (capacity.KVArms: a candidate whose cache type is not f16, beside an
// f16 candidate on the same model) gets the KL divergence of its cache type from an f16 cache
// on that model (kvquality.RunTargets, journaled as a throughput study's are), shown beside the
// speed its cache type bought by `capacity show` and the receipt.

// CapacityKVRequest runs the KV cache quality check of capacity study ID: llama-perplexity from
// LlamaDir ("": the plan's build.dir, else the usual search), the corpus and base logits under
// DataDir ("": the user's data folder), each step's line told to Say (nil: nowhere).
type CapacityKVRequest struct {
	ID       int64
	LlamaDir string
	DataDir  string
	Say      func(line string)
}

// capacityKV is study id as registered, its plan (defaults filled in) and the journaled KV
// cache checks; arms is false, with nothing loaded, when the plan has no KV arm.
func capacityKV(ctx context.Context, nb *store.Notebook, id int64) (st capacity.StoredStudy, p *capacity.Plan, checks []study.KVCheck, arms bool, err error) {
	if st, err = (store.CapacityRecorder{N: nb}).Study(ctx, id); err != nil {
		return st, nil, nil, false, err
	}
	if p, err = capacity.Decode(fmt.Sprintf("study %d plan", id), st.PlanJSON); err != nil {
		return st, nil, nil, false, err
	}
	p.Defaults()
	if len(capacity.KVArms(p)) == 0 {
		return st, p, nil, false, nil
	}
	checks, err = kvquality.Load(ctx, nb, id)
	return st, p, checks, err == nil, err
}

// CapacityKVQuality runs the check for the study's KV arms that have none journaled yet and
// returns how many arms had none, and how many checks it journaled. A study without KV arms, or with every arm checked, runs
// nothing; a build without llama-perplexity is said and skipped (no error); a llama-perplexity
// run that fails is a leg with its class and no entry (the next run tries again).
func CapacityKVQuality(ctx context.Context, nb *store.Notebook, req CapacityKVRequest) (pending, journaled int, err error) {
	say := func(s string) {
		if req.Say != nil {
			req.Say(s)
		}
	}
	st, p, checks, arms, err := capacityKV(ctx, nb, req.ID)
	if err != nil || !arms {
		return 0, 0, err
	}
	_, todo := capacity.KVQualityOf(p, nil, checks)
	if len(todo) == 0 {
		return 0, 0, nil
	}
	pending = len(todo)
	dir := req.LlamaDir
	if dir == "" && p.Build.Dir != "" {
		dir = study.ResolvePath(st.PlanDir, p.Build.Dir)
	}
	loc, err := llamacpp.Locate(dir)
	if err != nil {
		say(fmt.Sprintf("kv quality: not checked: %v", err))
		return pending, 0, nil
	}
	tool, err := runner.PerplexityToolPath(loc)
	if err != nil {
		say(fmt.Sprintf("kv quality: not checked: %v", err))
		return pending, 0, nil
	}
	data, err := DataDirOr(req.DataDir)
	if err != nil {
		say(fmt.Sprintf("kv quality: not checked: %v", err))
		return pending, 0, nil
	}
	var targets []kvquality.Target
	for _, a := range todo {
		i := slices.IndexFunc(targets, func(t kvquality.Target) bool { return t.Model == a.Model })
		if i < 0 {
			targets = append(targets, kvquality.Target{Model: a.Model, Path: study.ResolvePath(st.PlanDir, a.Path), Threads: a.Threads})
			i = len(targets) - 1
		}
		if !slices.Contains(targets[i].KVs, a.KV) {
			targets[i].KVs = append(targets[i].KVs, a.KV)
		}
	}
	journaled, err = kvquality.RunTargets(ctx, nb, req.ID, targets, kvquality.Options{Perplexity: tool, DataDir: data, Threads: 1,
		Event: say, Env: p.Build.EnvList(), Gate: p.KVQuality})
	return pending, journaled, err
}

// capacityKVLines are the study's KV arms as `capacity run` ends by saying them: each checked
// arm's speed change beside its KL divergence (KVQualityLine), each unchecked arm said so; and
// how many arms are unchecked.
func capacityKVLines(ctx context.Context, nb *store.Notebook, id int64, res *capacity.Result) ([]string, int, error) {
	_, p, checks, arms, err := capacityKV(ctx, nb, id)
	if err != nil || !arms {
		return nil, 0, err
	}
	qs, pending := capacity.KVQualityOf(p, res, checks)
	var out []string
	for _, q := range qs {
		out = append(out, "  "+capacity.KVQualityLine(q))
	}
	for _, a := range pending {
		out = append(out, fmt.Sprintf("  %s (%s KV) vs %s: KL divergence not checked (run the study again to check it)", a.Candidate, a.KVName(), a.Base))
	}
	return out, len(pending), nil
}

// attachCapacityKV puts study id's KV cache checks in its report (nothing for a plan without
// KV arms).
func attachCapacityKV(ctx context.Context, nb *store.Notebook, id int64, rep *capacity.Report) error {
	_, p, checks, arms, err := capacityKV(ctx, nb, id)
	if err != nil || !arms {
		return err
	}
	capacity.AttachKVQuality(rep, p, checks)
	return nil
}
