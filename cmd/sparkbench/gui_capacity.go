package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/plots"
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

var (
	_ ui.CapacityService  = capacityService{}
	_ ui.ServerFlagLister = capacityService{}
	_ ui.DeviceLister     = capacityService{}
)

// RegisterCapacity writes the plan beside the notebook (data folder/plans/NAME-SHA.json), with
// the built-in prompt plan there when the plan names it, fills in the quality case list's
// SHA-256, and registers it as `capacity register` does.
func (s capacityService) RegisterCapacity(ctx context.Context, p *capacity.Plan) (capacity.Registration, error) {
	reg, err := workbench.RegisterCapacity(ctx, s.nb, workbench.CapacityRegisterRequest{Plan: p, LlamaDir: s.dir(), DataDir: s.dataDir})
	var flags *workbench.FlagsRefusedError
	if errors.As(err, &flags) {
		// server_flags the window's build does not know: every server lifetime would fail to start.
		return capacity.Registration{}, &study.RefusedError{Problems: flags.Problems}
	}
	if reg == nil {
		return capacity.Registration{}, err
	}
	if err == nil {
		err = reg.CacheErr
	}
	return reg.Registration, err
}

func (s capacityService) dir() string {
	if s.folder != nil {
		return s.folder()
	}
	return s.llamaDir
}

// ShowCapacity is `capacity show`, the registered plan, and the assembled result's charts.
func (s capacityService) ShowCapacity(ctx context.Context, id int64) (*ui.CapacityStudy, error) {
	rep, err := workbench.ShowCapacity(ctx, s.nb, id)
	if err != nil {
		return nil, err
	}
	plan, err := workbench.CapacityPlan(ctx, s.nb, id)
	if err != nil {
		return nil, err
	}
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
		if plan.Serving != nil { // the receipt's open-loop charts
			for _, k := range []plots.Kind{plots.KindServingLatency, plots.KindServingGoodput, plots.KindServingSearch} {
				if c, err := receipt.CapacityChart(rep.Run.Result, k, ""); err == nil {
					cs.ServingCharts = append(cs.ServingCharts, c)
				}
			}
		}
	}
	return cs, nil
}

// RunCapacity is `capacity run ID`: the run folder under the data folder, every lifetime a leg
// of the notebook, study.json and the verdicts journaled; a complete run then gets the KV cache
// quality check of the study's KV arms (as `capacity run` ends), and a complete study whose arms
// lack it gets the check alone. The check's steps and each arm's line go to onLine.
func (s capacityService) RunCapacity(ctx context.Context, id int64, onEvent func(capacity.RunEvent), onLine func(string)) (*capacity.RunSummary, error) {
	sum, _, err := workbench.RunCapacity(ctx, s.nb, workbench.CapacityRunRequest{ID: id, LlamaDir: s.dir(), DataDir: s.dataDir, OnEvent: onEvent})
	var ns *workbench.NotStartedError
	switch {
	case errors.As(err, &ns):
		return nil, ns.Err
	case err == nil && sum != nil && sum.Status == capacity.StatusComplete:
		_, kerr := s.kvQuality(ctx, id, onLine)
		return sum, kerr
	case errors.Is(err, capacity.ErrAlreadyAssembled):
		pending, kerr := s.kvQuality(ctx, id, onLine)
		if pending == 0 && kerr == nil {
			return nil, err // nothing left to run
		}
		return &capacity.RunSummary{StudyID: id, Status: capacity.StatusComplete}, kerr
	}
	return sum, err
}

// kvQuality runs the KV cache check of complete study id (workbench.CapacityKVQuality: the
// window's build, the data folder's corpus and base logits) and tells onLine each KV arm's
// line as `capacity run` ends: its speed change beside its KL divergence, or that it is not
// checked. pending is how many arms lacked a check before; a check that failed, or left arms
// unchecked (no llama-perplexity: said, not an error of the CLI), is a *ui.KVCheckError.
func (s capacityService) kvQuality(ctx context.Context, id int64, onLine func(string)) (int, error) {
	why := ""
	say := func(line string) {
		if r, ok := strings.CutPrefix(line, "kv quality: not checked: "); ok {
			why = " (" + r + ")"
		}
		if onLine != nil {
			onLine(line)
		}
	}
	pending, _, err := workbench.CapacityKVQuality(ctx, s.nb, workbench.CapacityKVRequest{ID: id, LlamaDir: s.dir(), DataDir: s.dataDir, Say: say})
	if err != nil {
		return pending, &ui.KVCheckError{Err: err}
	}
	rep, err := workbench.ShowCapacity(ctx, s.nb, id)
	if err != nil {
		return pending, &ui.KVCheckError{Err: err}
	}
	if len(rep.KVQuality)+len(rep.KVUnchecked) > 0 {
		say(fmt.Sprintf("study %d KV cache types: speed against quality (KL divergence from an f16 cache on the same model):", id))
	}
	for _, q := range rep.KVQuality {
		say("  " + capacity.KVQualityLine(q))
	}
	for _, c := range rep.KVUnchecked {
		say(fmt.Sprintf("  %s: KL divergence not checked (Run checks it)", c))
	}
	if n := len(rep.KVUnchecked); n > 0 {
		return pending, &ui.KVCheckError{Err: fmt.Errorf("%d KV arm(s) not checked%s", n, why)}
	}
	return pending, nil
}

// EstimateCapacity is ui.CapacityEstimator (workbench.EstimateCapacity).
func (s capacityService) EstimateCapacity(ctx context.Context, p *capacity.Plan) (capacity.Estimate, error) {
	return workbench.EstimateCapacity(ctx, s.nb, p)
}

// ServerFlags is ui.ServerFlagLister: the flags the window's build's llama-server accepts, as
// `capacity validate` and `capacity register` check them (workbench.ServerFlags).
func (s capacityService) ServerFlags(ctx context.Context) (map[string]bool, string, error) {
	return workbench.ServerFlags(ctx, s.dir())
}

// BuildDevices is ui.DeviceLister: the window's build's devices (workbench.ListDevices, as the
// throughput form lists them), offered in the capacity form's Device fields.
func (s capacityService) BuildDevices(ctx context.Context, p *study.Plan) (*study.BuildDevices, []study.Problem) {
	return workbench.ListDevices(ctx, p, s.dir())
}
