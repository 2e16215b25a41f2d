package workbench

import (
	"context"
	"path/filepath"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// EstimateThroughput is how long a throughput plan's legs take, from the notebook's llama-bench
// history of its models (found by their SHA-256, or the one cached for their files: a model
// never hashed has no history).
func EstimateThroughput(ctx context.Context, nb *store.Notebook, p *study.Plan) (study.Estimate, error) {
	hist, err := PlanHistory(ctx, nb, p, "")
	if err != nil {
		return study.Estimate{}, err
	}
	return study.EstimateDuration(p, "", hist)
}

// PlanHistory is the notebook's llama-bench history of each model of a throughput plan (by
// model ID), found as modelHistory finds it (relative model paths from planDir); nil without
// a notebook.
func PlanHistory(ctx context.Context, nb *store.Notebook, p *study.Plan, planDir string) (map[string]study.BenchHistory, error) {
	if nb == nil {
		return nil, nil
	}
	hist := map[string]study.BenchHistory{}
	for _, m := range p.Models {
		path := m.Path
		if planDir != "" && !filepath.IsAbs(path) {
			path = filepath.Join(planDir, path)
		}
		h, err := modelHistory(ctx, nb, path, m.SHA256)
		if err != nil {
			return nil, err
		}
		hist[m.ID] = h
	}
	return hist, nil
}

// EstimateCapacity is how long a capacity or concurrency plan's run takes, from the notebook's
// llama-bench history of its candidates' models (found as EstimateThroughput finds them).
func EstimateCapacity(ctx context.Context, nb *store.Notebook, p *capacity.Plan) (capacity.Estimate, error) {
	hist := map[string]study.BenchHistory{}
	for _, c := range p.Candidates {
		h, err := modelHistory(ctx, nb, c.Model.Path, c.Model.SHA256)
		if err != nil {
			return capacity.Estimate{}, err
		}
		hist[c.ID] = h
	}
	return capacity.EstimateDuration(p, hist), nil
}

// modelHistory is the notebook's llama-bench history of a model file, found by its SHA-256
// (sha, or the one cached for the file at path; a file never hashed has none).
func modelHistory(ctx context.Context, nb *store.Notebook, path, sha string) (study.BenchHistory, error) {
	if sha == "" {
		if k, err := hashing.KeyOf(path); err == nil {
			if cached, ok, err := (HashCache{NB: nb}).Lookup(ctx, k); err == nil && ok {
				sha = cached
			}
		}
	}
	if sha == "" {
		return study.BenchHistory{}, nil
	}
	return nb.BenchHistory(ctx, sha, 20)
}
