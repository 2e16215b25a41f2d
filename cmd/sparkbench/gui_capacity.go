package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sparkbench/runner/llamacpp"

	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/plots"
	"sparkbench/runner/hashing"
	"sparkbench/store"
	"sparkbench/ui"
)

// capacityService is ui.CapacityService over the notebook and llama-server: the same calls the
// capacity register, show and run commands make.
type capacityService struct {
	nb       *store.Notebook
	llamaDir string        // --llama-dir, or "" for the plan's build.dir / default search
	folder   func() string // the window's llama.cpp folder, as studyService.folder
	dataDir  string        // where plans and run folders go ("" = the user's data folder)
}

var _ ui.CapacityService = capacityService{}

// RegisterCapacity writes the plan beside the notebook (data folder/plans/NAME-SHA.json), with
// the built-in prompt plan there when the plan names it, fills in the quality case list's
// SHA-256, and registers it as `capacity register` does.
func (s capacityService) RegisterCapacity(ctx context.Context, p *capacity.Plan) (capacity.Registration, error) {
	plans, err := plansDir(s.dataDir)
	if err != nil {
		return capacity.Registration{}, err
	}
	if p.PromptPlan == capacity.DefaultPromptPlanRef() {
		if _, err := capacity.WriteDefaultPromptPlan(plans); err != nil {
			return capacity.Registration{}, err
		}
	}
	if q := p.QualityCases; q != nil && q.SHA256 == "" {
		path := q.Path
		if !filepath.IsAbs(path) {
			return capacity.Registration{}, fmt.Errorf("quality cases %q: give the file's full path (the plan is written to %s)", path, plans)
		}
		sum, err := hashing.File(ctx, path, nil)
		if err != nil {
			return capacity.Registration{}, fmt.Errorf("quality cases: %w", err)
		}
		p.QualityCases = &capacity.FileRef{Path: path, SHA256: sum}
	}
	p.Defaults()
	sum, _, err := p.SHA256()
	if err != nil {
		return capacity.Registration{}, err
	}
	// server_flags the window's build does not know are refused before anything is written
	// (every server lifetime would fail to start); a build that cannot be asked checks nothing.
	dir := s.llamaDir
	if s.folder != nil {
		dir = s.folder()
	}
	if loc, err := llamacpp.Locate(dir); err == nil {
		if known, err := llamacpp.HelpFlags(ctx, loc.Server); err == nil {
			if probs := capacity.CheckServerFlags(p, known, loc.Server); len(probs) > 0 {
				return capacity.Registration{}, &study.RefusedError{Problems: probs}
			}
		}
	}
	file, err := writePlanFile(s.dataDir, p.Name, sum, p)
	if err != nil {
		return capacity.Registration{}, err
	}
	// New hashes reach the notebook's cache only when the plan is accepted.
	hash, commit := registrationHash(ctx, s.nb, io.Discard)
	reg, err := capacity.Register(ctx, store.CapacityRecorder{N: s.nb}, p, file, hash)
	if err != nil {
		return reg, err
	}
	return reg, commit(ctx)
}

// ShowCapacity is `capacity show`, the registered plan, and the assembled result's charts.
func (s capacityService) ShowCapacity(ctx context.Context, id int64) (*ui.CapacityStudy, error) {
	rec := store.CapacityRecorder{N: s.nb}
	rep, err := capacity.Show(ctx, rec, id)
	if err != nil {
		return nil, err
	}
	st, err := rec.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	plan, err := capacity.Decode(fmt.Sprintf("study %d plan", id), st.PlanJSON)
	if err != nil {
		return nil, err
	}
	plan.Defaults()
	cs := &ui.CapacityStudy{Report: rep, Plan: plan}
	if rep.Run != nil && rep.Trusted && rep.Run.Result != nil {
		if c, err := receipt.CapacityChart(rep.Run.Result, plots.KindSlots, ""); err == nil {
			cs.Charts = append(cs.Charts, c)
		}
		for _, cand := range rep.Run.Result.Candidates {
			if c, err := receipt.CapacityChart(rep.Run.Result, plots.KindEnvelope, cand.ID); err == nil {
				cs.Charts = append(cs.Charts, c)
			}
		}
	}
	return cs, nil
}

// RunCapacity is `capacity run ID`: the run folder under the data folder, every lifetime a leg
// of the notebook, study.json and the verdicts journaled.
func (s capacityService) RunCapacity(ctx context.Context, id int64, onEvent func(capacity.RunEvent)) (*capacity.RunSummary, error) {
	dir := s.llamaDir
	if s.folder != nil {
		dir = s.folder()
	}
	e, _, _, err := capacityEngine(ctx, s.nb, id, dir, true, io.Discard)
	if err != nil {
		return nil, err
	}
	if s.dataDir != "" {
		e.DataDir = s.dataDir
	}
	e.OnEvent = onEvent
	return e.Run(ctx, id, "")
}

// EstimateCapacity is ui.CapacityEstimator: the plan's duration from this notebook's
// llama-bench history of its candidates' models (found by the SHA-256 cached for their files).
func (s capacityService) EstimateCapacity(ctx context.Context, p *capacity.Plan) (capacity.Estimate, error) {
	hist := map[string]study.BenchHistory{}
	for _, c := range p.Candidates {
		h, err := modelHistory(ctx, s.nb, c.Model.Path, c.Model.SHA256)
		if err != nil {
			return capacity.Estimate{}, err
		}
		hist[c.ID] = h
	}
	return capacity.EstimateDuration(p, hist), nil
}
