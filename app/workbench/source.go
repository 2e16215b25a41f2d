package workbench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"sparkbench/app/bundle"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/store"
)

// ThroughputSource gathers a throughput study from the notebook: the journal excerpt from the
// study's first entry to its last (receipts exported since left out), the plan, every leg
// with its rows (and their statuses) and transcript, and the model artefacts the legs used.
func ThroughputSource(ctx context.Context, nb *store.Notebook, s store.Study) (bundle.ThroughputSource, error) {
	src := bundle.ThroughputSource{Notebook: receipt.NotebookRecord{StudyID: s.ID, Name: s.Name, Kind: s.Kind, Status: s.Status}}
	plan, err := nb.Plan(ctx, s.ID)
	if err != nil {
		return src, fmt.Errorf("study %d (%s) has no registered plan: %w", s.ID, s.Name, err)
	}
	src.PlanJSON = plan.JSON
	preds, err := nb.Predictions(ctx, s.ID)
	if err != nil {
		return src, err
	}
	for _, p := range preds {
		src.Notebook.Predictions = append(src.Notebook.Predictions, receipt.PredictionKey{ID: p.ID, Key: p.Key})
	}
	st, err := nb.Stats(ctx)
	if err != nil {
		return src, err
	}
	src.Notebook.Head = receipt.ChainPoint{Seq: st.JournalSeq, Hash: st.JournalHead}
	var planDir string
	if src.Journal, planDir, err = JournalExcerpt(ctx, nb, s.ID); err != nil {
		return src, err
	}
	legs, err := nb.LegTimeline(ctx, s.ID)
	if err != nil {
		return src, err
	}
	if src.Legs, err = sourceLegs(ctx, nb, s.ID, legs); err != nil {
		return src, err
	}
	if src.Builds, src.Machines, err = sourceBuildsMachines(ctx, nb, legs); err != nil {
		return src, err
	}
	p, err := study.Decode("registered plan", plan.JSON)
	if err != nil {
		return src, err
	}
	src.Models, err = sourceModels(ctx, nb, p, planDir, legs)
	return src, err
}

// sourceLegs are the study's legs (timeline order) with their rows (and their statuses) and
// transcripts.
func sourceLegs(ctx context.Context, nb *store.Notebook, studyID int64, legs []store.Leg) ([]bundle.SourceLeg, error) {
	rows, err := store.StudyRecorder{N: nb}.Rows(ctx, studyID)
	if err != nil {
		return nil, err
	}
	byLeg := map[int64][]bundle.SourceRow{}
	for _, r := range rows {
		js, err := r.Result.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("leg %d row %d: %w", r.LegID, r.Seq, err)
		}
		byLeg[r.LegID] = append(byLeg[r.LegID], bundle.SourceRow{Seq: r.Seq, Status: r.Status, JSON: js})
	}
	var out []bundle.SourceLeg
	for _, l := range legs {
		var d struct {
			PlanLeg string `json:"plan_leg"`
			Role    string `json:"role"`
			Attempt int    `json:"attempt"`
		}
		_ = json.Unmarshal(l.Detail, &d)
		rec := receipt.LegRecord{ID: l.ID, Label: l.Label, Kind: l.Kind, PlanLeg: d.PlanLeg, Role: d.Role, Attempt: d.Attempt,
			State: l.State, Class: l.Class, Reason: l.Reason, ExitCode: l.ExitCode, Signal: l.Signal, Argv: l.Argv, Env: l.Env,
			Conditions: l.Conditions, StartedAt: store.FormatTime(l.StartedAt), Fingerprint: l.Fingerprint, PeakRSSBytes: l.PeakRSSBytes,
			MachineID: l.MachineID, BuildID: l.BuildID, ArtefactID: l.ArtefactID, TempBeforeC: l.TempBeforeC, TempAfterC: l.TempAfterC}
		if !l.EndedAt.IsZero() {
			rec.EndedAt = store.FormatTime(l.EndedAt)
		}
		tr, err := nb.Transcript(ctx, l.ID)
		if err != nil {
			return nil, fmt.Errorf("leg %d transcript: %w", l.ID, err)
		}
		tel, err := nb.TelemetryJSONL(ctx, l.ID)
		if err != nil {
			return nil, fmt.Errorf("leg %d telemetry: %w", l.ID, err)
		}
		out = append(out, bundle.SourceLeg{Record: rec, Rows: byLeg[l.ID], Transcript: tr, Telemetry: tel})
	}
	return out, nil
}

// sourceBuildsMachines are the notebook's build and machine records the legs name (never the
// machine's host name), by id.
func sourceBuildsMachines(ctx context.Context, nb *store.Notebook, legs []store.Leg) ([]receipt.NotebookBuild, []receipt.NotebookMachine, error) {
	builds, machines := map[int64]bool{}, map[int64]bool{}
	for _, l := range legs {
		if l.BuildID != 0 {
			builds[l.BuildID] = true
		}
		if l.MachineID != 0 {
			machines[l.MachineID] = true
		}
	}
	var bs []receipt.NotebookBuild
	for _, id := range sortedInt64(builds) {
		b, err := nb.Build(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		bins := b.Binaries
		if bins == nil {
			bins = map[string]string{}
		}
		bs = append(bs, receipt.NotebookBuild{ID: b.ID, Fingerprint: b.Fingerprint, Dir: b.Dir, VersionLine: b.VersionLine,
			BuildNumber: b.BuildNumber, Commit: b.Commit, Backends: b.Backends, Binaries: bins, RecordedAt: store.FormatTime(b.CreatedAt)})
	}
	var ms []receipt.NotebookMachine
	for _, id := range sortedInt64(machines) {
		m, err := nb.Machine(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		ms = append(ms, receipt.NotebookMachine{ID: m.ID, Fingerprint: m.Fingerprint, CPUModel: m.CPUModel, Cores: m.Cores,
			RAMBytes: m.RAMBytes, OS: m.OS, Kernel: m.Kernel, GPU: m.GPU, Driver: m.Driver, MemBandwidthGBs: m.MemBandwidthGBs,
			RecordedAt: store.FormatTime(m.CreatedAt)})
	}
	return bs, ms, nil
}

// sourceModels are each plan model with the notebook's artefact record of its file (the one
// whose hash matches the plan, else the newest), then any other artefact a leg names.
func sourceModels(ctx context.Context, nb *store.Notebook, p *study.Plan, planDir string, legs []store.Leg) ([]bundle.SourceModel, error) {
	all, err := nb.Artefacts(ctx)
	if err != nil {
		return nil, err
	}
	record := func(a store.Artefact, model string) receipt.ModelRecord {
		return receipt.ModelRecord{ArtefactID: a.ID, Model: model, Path: a.Path, Bytes: a.Size, SHA256: a.SHA256, ExpectedSHA256: a.ExpectedSHA256,
			Status: a.Status, Name: a.Name, Architecture: a.Architecture, Quant: a.Quant, NParams: a.NParams, Source: a.Source, Revision: a.Revision}
	}
	var out []bundle.SourceModel
	used := map[int64]bool{}
	for _, m := range p.Models {
		path := study.ResolvePath(planDir, m.Path)
		var found *store.Artefact
		for i := range all {
			a := &all[i]
			if a.Path == path && (found == nil || a.SHA256 == m.SHA256 && found.SHA256 != m.SHA256) {
				found = a
			}
		}
		if found == nil {
			out = append(out, bundle.SourceModel{Record: receipt.ModelRecord{Model: m.ID, Path: path, ExpectedSHA256: m.SHA256,
				Status: "not recorded"}, File: path})
			continue
		}
		used[found.ID] = true
		out = append(out, bundle.SourceModel{Record: record(*found, m.ID), File: found.Path})
	}
	artefacts := map[int64]bool{}
	for _, l := range legs {
		if l.ArtefactID != 0 {
			artefacts[l.ArtefactID] = true
		}
	}
	for _, id := range sortedInt64(artefacts) {
		if used[id] {
			continue
		}
		a, err := nb.Artefact(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, bundle.SourceModel{Record: record(a, "")})
	}
	return out, nil
}

// capacityPromptPlan is the path of a capacity study's prompt plan: the registered plan's
// prompt_plan.path resolved against the plan's folder (as capacity run resolves it).
func capacityPromptPlan(ctx context.Context, nb *store.Notebook, studyID int64, planDir string) (string, error) {
	reg, err := nb.Plan(ctx, studyID)
	if err != nil {
		return "", fmt.Errorf("no registered plan: %w", err)
	}
	p, err := capacity.Decode("registered plan", reg.JSON)
	if err != nil {
		return "", err
	}
	if p.PromptPlan.Path == "" {
		return "", fmt.Errorf("the registered plan names no prompt plan")
	}
	if planDir == "" && !filepath.IsAbs(p.PromptPlan.Path) {
		return "", fmt.Errorf("the journal names no plan folder, so the prompt plan %q cannot be found", p.PromptPlan.Path)
	}
	return study.ResolvePath(planDir, p.PromptPlan.Path), nil
}

// JournalExcerpt is a study's journal excerpt for its bundle (throughput and capacity alike):
// every entry from the study's first to its last, with their hashes (receipts exported are
// left out at the end, so a re-export holds the same excerpt; other studies' entries in
// between are included, so the chain can be re-walked); and the plan folder its
// study.plan_source entry names.
func JournalExcerpt(ctx context.Context, nb *store.Notebook, studyID int64) ([]receipt.JournalLine, string, error) {
	own, err := nb.Journal(ctx, studyID, 0, 0)
	if err != nil {
		return nil, "", err
	}
	var first, last int64
	planDir := ""
	for _, e := range own {
		if e.Kind == store.KindReceiptExported {
			continue
		}
		if first == 0 {
			first = e.Seq
		}
		last = e.Seq
		if e.Kind == study.NotePlanSource {
			var ps struct {
				Dir string `json:"plan_dir"`
			}
			_ = json.Unmarshal(e.Payload, &ps)
			planDir = ps.Dir
		}
	}
	if first == 0 {
		return nil, "", fmt.Errorf("study %d has no journal entries", studyID)
	}
	entries, err := nb.Journal(ctx, 0, first-1, int(last-first+1))
	if err != nil {
		return nil, "", err
	}
	var out []receipt.JournalLine
	for _, e := range entries {
		jl := receipt.JournalLine{Seq: e.Seq, Kind: e.Kind, At: store.FormatTime(e.At), Payload: e.Payload, PrevHash: e.PrevHash, Hash: e.Hash}
		if e.StudyID != 0 {
			id := e.StudyID
			jl.Study = &id
		}
		out = append(out, jl)
	}
	return out, planDir, nil
}

func sortedInt64(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
