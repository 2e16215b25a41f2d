package main

import (
	"context"
	"strconv"
	"strings"

	"sparkbench/app/demo"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
	"sparkbench/ui"
)

// studyService is ui.StudyService over the notebook and the runner: the same calls the
// study and demo commands make.
type studyService struct {
	nb       *store.Notebook
	llamaDir string // --llama-dir, or "" for the plan's build.dir / default search
	// folder, when set, is the window's llama.cpp folder (the Bench section's choice, else
	// --llama-dir); "" from it falls back to the plan's build.dir and the default search.
	folder  func() string
	dataDir string // where the demo's models and plan go
}

var _ ui.StudyService = studyService{}

func (s studyService) List(ctx context.Context) ([]ui.StudySummary, error) {
	list, err := s.nb.Studies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ui.StudySummary, 0, len(list))
	for _, st := range list {
		out = append(out, ui.StudySummary{ID: st.ID, Name: st.Name, Kind: st.Kind, Status: st.Status, Legs: st.Legs, Predictions: st.Predictions})
	}
	return out, nil
}

func (s studyService) Show(ctx context.Context, id int64) (*study.Report, error) {
	return workbench.ShowThroughput(ctx, s.nb, id)
}

func (s studyService) dir() string {
	if s.folder != nil {
		return s.folder()
	}
	return s.llamaDir
}

func (s studyService) Run(ctx context.Context, id int64, onEvent func(study.Event)) (study.RunSummary, error) {
	// LiveTelemetry: a plan with a telemetry block sends its readings as they are taken (the
	// timeline under the live chart, the Bench machine card).
	return workbench.RunThroughput(ctx, s.nb, workbench.ThroughputRunRequest{ID: id, LlamaDir: s.dir(), OnEvent: onEvent, LiveTelemetry: true})
}

func (s studyService) EnsureDemo(ctx context.Context) (int64, error) {
	dir, err := workbench.DataDirOr(s.dataDir)
	if err != nil {
		return 0, err
	}
	return demo.Ensure(ctx, store.StudyRecorder{N: s.nb}, dir)
}

// Register writes the plan beside the notebook (data folder/plans/NAME-SHA.json) and registers
// it as `study register` does, hashing the models through the notebook's cache.
func (s studyService) Register(ctx context.Context, p *study.Plan) (study.Registration, error) {
	reg, err := workbench.RegisterThroughput(ctx, s.nb, workbench.ThroughputRegisterRequest{Plan: p, LlamaDir: s.dir(), DataDir: s.dataDir})
	if reg == nil {
		return study.Registration{}, err
	}
	if err == nil {
		err = reg.CacheErr
	}
	return reg.Registration, err
}

var _ ui.DeviceLister = studyService{}

// BuildDevices lists the devices of the window's build (the Bench section's folder, else the
// plan's build.dir and the default search) with the plan's env and RPC endpoints, for the New
// study form: the listing Register checks the plan against.
func (s studyService) BuildDevices(ctx context.Context, p *study.Plan) (*study.BuildDevices, []study.Problem) {
	return workbench.ListDevices(ctx, p, s.dir())
}

func (s studyService) HumanVerdict(ctx context.Context, id int64, h study.HumanVerdict) error {
	return workbench.RecordVerdict(ctx, s.nb, id, h)
}

func (s studyService) AddFinding(ctx context.Context, id int64, f study.FindingRequest) (string, error) {
	return workbench.AddFinding(ctx, s.nb, id, f)
}

// Receipt writes study id's receipt bundle to out through the same call `sparkbench receipt`
// makes, on the window's notebook connection.
func (s studyService) Receipt(ctx context.Context, id int64, out string) (ui.ReceiptExport, error) {
	x, err := workbench.ExportReceipt(ctx, s.nb, workbench.ReceiptRequest{Study: strconv.FormatInt(id, 10), Out: out})
	if err != nil {
		return ui.ReceiptExport{}, err
	}
	text := workbench.ReceiptText(x)
	if x.RecordErr != nil {
		text += "the bundle is written, but the notebook could not record it: " + x.RecordErr.Error() + "\n"
	}
	return ui.ReceiptExport{Summary: strings.TrimSpace(text), Files: x.Files}, nil
}

// EstimateStudy is ui.Estimator (workbench.EstimateThroughput).
func (s studyService) EstimateStudy(ctx context.Context, p *study.Plan) (study.Estimate, error) {
	return workbench.EstimateThroughput(ctx, s.nb, p)
}

// PlanRepetitions is ui.RepetitionPlanner: the repetition planner `study validate` prints
// (workbench.RepetitionPlanner, worded by PlannerLines), from this notebook's history.
func (s studyService) PlanRepetitions(ctx context.Context, p *study.Plan) ([]string, error) {
	plans, err := workbench.RepetitionPlanner(ctx, s.nb, p, "", 0)
	return workbench.PlannerLines(plans), err
}
