package main

import (
	"context"
	"errors"
	"path/filepath"

	"sparkbench/app/quant"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
	"sparkbench/ui"
)

// quantService is ui.QuantService over the notebook and the registered ladder kind: the same
// calls `study validate|register|run|show FILE/ID` and `quant handoff` make.
type quantService struct {
	nb       *store.Notebook
	llamaDir string        // --llama-dir, or "" for the plan's build.dir / default search
	folder   func() string // the window's llama.cpp folder, as studyService.folder
	dataDir  string        // where plans, the corpus and the derived models go ("" = the user's data folder)
}

var _ ui.QuantService = quantService{}

func (s quantService) dir() string {
	if s.folder != nil {
		return s.folder()
	}
	return s.llamaDir
}

// BuildDir is the window's folder, absolute (the plan's build.dir; "" for the default search).
func (s quantService) BuildDir() string {
	d := s.dir()
	if d == "" {
		return ""
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

func (s quantService) QuantTypes(ctx context.Context) ([]string, error) {
	return workbench.QuantTypes(ctx, s.dir(), nil)
}

func (s quantService) DefaultCorpus(context.Context) (string, error) {
	return workbench.QuantCorpus(s.dataDir)
}

// ValidateQuant is the kind's Validate (as `study validate`), against the window's build.
func (s quantService) ValidateQuant(ctx context.Context, p *quant.Plan) ([]study.Problem, error) {
	v, err := workbench.ValidateQuantPlan(ctx, p, s.dir())
	if err != nil {
		return nil, err
	}
	return v.Problems, nil
}

func (s quantService) EstimateQuant(ctx context.Context, p *quant.Plan) (string, error) {
	e, err := workbench.EstimateQuant(ctx, s.nb, p)
	if err != nil {
		return "", err
	}
	return e.String(), nil
}

// RegisterQuant writes the plan to the data folder's plans/ and registers that file as `study
// register FILE` does.
func (s quantService) RegisterQuant(ctx context.Context, p *quant.Plan) (ui.QuantRegistration, error) {
	reg, err := workbench.RegisterQuantPlan(ctx, s.nb, workbench.QuantRegisterRequest{Plan: p, DataDir: s.dataDir})
	if err != nil {
		return ui.QuantRegistration{}, err
	}
	return ui.QuantRegistration{StudyID: reg.StudyID, Name: reg.Name, PlanSHA256: reg.PlanSHA256, File: reg.File}, reg.CacheErr
}

func (s quantService) ShowQuant(ctx context.Context, id int64) (*ui.QuantStudy, error) {
	l, err := workbench.ShowQuantLadder(ctx, s.nb, id)
	if err != nil {
		return nil, err
	}
	return &ui.QuantStudy{ID: l.Study.ID, Name: l.Study.Name, Status: l.Study.Status, PlanSHA256: l.PlanSHA256, Plan: l.Plan, Result: l.Result}, nil
}

// RunQuant is `study run ID` of a ladder: its lines (and, when it halted, why) and each
// candidate's record as soon as it is measured.
func (s quantService) RunQuant(ctx context.Context, id int64, onLine func(string), onRecord func(quant.Record)) (ui.QuantRunDone, error) {
	done, err := workbench.RunQuantLadder(ctx, s.nb, workbench.QuantRunRequest{ID: id, LlamaDir: s.dir(), Event: onLine, Record: onRecord})
	if err != nil {
		var refused *study.RefusedError
		if errors.As(err, &refused) && len(refused.Problems) > 0 {
			return ui.QuantRunDone{}, errors.New(refused.Problems[0].String())
		}
		return ui.QuantRunDone{}, err
	}
	return ui.QuantRunDone{Status: done.Status, Complete: done.Complete, Lines: append(append([]string(nil), done.Lines...), done.Notes...)}, nil
}

func (s quantService) HandOff(ctx context.Context, id int64, out string, h quant.HandOff) (string, error) {
	return workbench.QuantHandOff(ctx, s.nb, workbench.QuantHandOffRequest{ID: id, Out: out, HandOff: h})
}

func (s quantService) DerivedModels(context.Context) ([]ui.DerivedModel, error) {
	list, err := workbench.DerivedModels(s.dataDir)
	if err != nil {
		return nil, err
	}
	out := make([]ui.DerivedModel, 0, len(list))
	for _, d := range list {
		out = append(out, ui.DerivedModel{Path: d.Path, Parent: d.Parent, Type: d.Type, Imatrix: d.Imatrix, Build: d.Build,
			SHA256: d.SHA256, Bytes: d.Bytes, Argv: d.Argv, CreatedAt: d.CreatedAt})
	}
	return out, nil
}
