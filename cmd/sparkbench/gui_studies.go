package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"sparkbench/app/demo"
	"sparkbench/app/study"
	"sparkbench/app/study/studyrun"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamacpp"
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
	return study.Show(ctx, store.StudyRecorder{N: s.nb}, id)
}

func (s studyService) dir() string {
	if s.folder != nil {
		return s.folder()
	}
	return s.llamaDir
}

func (s studyService) Run(ctx context.Context, id int64, onEvent func(study.Event)) (study.RunSummary, error) {
	rec := store.StudyRecorder{N: s.nb}
	dir := s.dir()
	if dir == "" {
		if st, err := rec.Study(ctx, id); err == nil {
			if p, err := study.Decode("plan", st.PlanJSON); err == nil {
				dir = p.Build.Dir
			}
		}
	}
	loc, err := llamacpp.Locate(dir)
	if err != nil {
		return study.RunSummary{}, err
	}
	e := &studyrun.Engine{Rec: rec, Bench: loc.Bench, Hash: cachedHash(ctx, s.nb, io.Discard), OnEvent: onEvent}
	return e.Run(ctx, id)
}

func (s studyService) EnsureDemo(ctx context.Context) (int64, error) {
	dir, err := dataDirOr(s.dataDir)
	if err != nil {
		return 0, err
	}
	return demo.Ensure(ctx, store.StudyRecorder{N: s.nb}, dir)
}

// Register writes the plan beside the notebook (data folder/plans/NAME-SHA.json) and registers
// it as `study register` does, hashing the models through the notebook's cache.
func (s studyService) Register(ctx context.Context, p *study.Plan) (study.Registration, error) {
	p.Defaults()
	sum, _, err := p.SHA256()
	if err != nil {
		return study.Registration{}, err
	}
	// extra_args the window's build does not know, devices it does not have and RPC endpoints
	// that do not answer are refused before anything is written.
	if err := buildRefusal(ctx, p, s.dir()); err != nil {
		return study.Registration{}, err
	}
	file, err := writePlanFile(s.dataDir, p.Name, sum, p)
	if err != nil {
		return study.Registration{}, err
	}
	// New hashes reach the notebook's cache only when the plan is accepted: a refused plan
	// writes nothing.
	hash, commit := registrationHash(ctx, s.nb, io.Discard)
	reg, err := study.Register(ctx, store.StudyRecorder{N: s.nb}, p, file, hash)
	if err != nil {
		return reg, err
	}
	return reg, commit(ctx)
}

var _ ui.DeviceLister = studyService{}

// BuildDevices lists the devices of the window's build (the Bench section's folder, else the
// plan's build.dir and the default search) with the plan's env and RPC endpoints, for the New
// study form: the listing Register checks the plan against.
func (s studyService) BuildDevices(ctx context.Context, p *study.Plan) (*study.BuildDevices, []study.Problem) {
	return listDevicesFor(ctx, p, s.dir())
}

// dataDirOr is dir, or the user's sparkbench data folder when dir is "".
func dataDirOr(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return demo.DataDir()
}

// plansDir is the folder plans built in the window are written to (DATA/plans), created.
func plansDir(dataDir string) (string, error) {
	dir, err := dataDirOr(dataDir)
	if err != nil {
		return "", err
	}
	plans := filepath.Join(dir, "plans")
	return plans, os.MkdirAll(plans, 0o755)
}

// writePlanFile writes plan p (indented JSON) as DATA/plans/NAME-SHA.json, named by its name
// and the first 12 digits of its SHA-256, and returns the file's path.
func writePlanFile(dataDir, name, sum string, p any) (string, error) {
	plans, err := plansDir(dataDir)
	if err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	slug := strings.Trim(planSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	file := filepath.Join(plans, fmt.Sprintf("%s-%s.json", slug, sum[:12]))
	return file, os.WriteFile(file, append(data, '\n'), 0o644)
}

var planSlug = regexp.MustCompile(`[^a-z0-9]+`)

func (s studyService) HumanVerdict(ctx context.Context, id int64, h study.HumanVerdict) error {
	if h.Author == "" {
		h.Author = currentUser()
	}
	return study.RecordHumanVerdict(ctx, store.StudyRecorder{N: s.nb}, id, h)
}

func (s studyService) AddFinding(ctx context.Context, id int64, f study.FindingRequest) (string, error) {
	return study.AddFinding(ctx, store.StudyRecorder{N: s.nb}, id, f)
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

// EstimateStudy is ui.Estimator: the plan's duration from this notebook's history of its
// models (found by the SHA-256 cached for their files; a model never hashed has no history).
func (s studyService) EstimateStudy(ctx context.Context, p *study.Plan) (study.Estimate, error) {
	hist := map[string]study.BenchHistory{}
	for _, m := range p.Models {
		h, err := modelHistory(ctx, s.nb, m.Path, m.SHA256)
		if err != nil {
			return study.Estimate{}, err
		}
		hist[m.ID] = h
	}
	return study.EstimateDuration(p, "", hist)
}

// modelHistory is the notebook's llama-bench history of a model file, found by its SHA-256
// (sha, or the one cached for the file at path; a file never hashed has none).
func modelHistory(ctx context.Context, nb *store.Notebook, path, sha string) (study.BenchHistory, error) {
	if sha == "" {
		if st, err := (notebookLibrary{nb}).Status(ctx, path); err == nil {
			sha = st.SHA256
		}
	}
	if sha == "" {
		return study.BenchHistory{}, nil
	}
	return nb.BenchHistory(ctx, sha, 20)
}
