package studyrun

import (
	"context"
	"fmt"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/hashing"
)

// modelFile is a model as this run read it before its first leg: the file's identity (path,
// size, mtime, device, inode, ctime) and what llama-bench reports of it (model_size, the sum
// of its tensors' bytes, from the GGUF header; model_type, as the first leg reported it).
type modelFile struct {
	id, path    string
	key         hashing.Key
	stat        bool // key was read (not for models on a bench host: Engine.RemoteModels)
	tensorBytes int64
	modelType   string
}

// noteModelFiles keeps each hashed model's identity, right after prepare read the files.
func (r *run) noteModelFiles() error {
	r.files = map[string]*modelFile{}
	for id, info := range r.models {
		if info.SHA256 == "" {
			continue
		}
		f := &modelFile{id: id, path: info.Path}
		if !r.e.RemoteModels {
			k, err := hashing.KeyOf(info.Path)
			if err != nil {
				return fmt.Errorf("model %s: %w", id, err)
			}
			f.key, f.stat = k, true
		}
		if info.Header != nil {
			f.tensorBytes = int64(info.Header.TensorBytes())
		}
		r.files[id] = f
	}
	return nil
}

// modelChanged says how a model of the leg is no longer the file this run read ("" when each
// is): a stat per model, cheap enough before and after every leg.
func (r *run) modelChanged(models []string) string {
	for _, id := range models {
		f := r.files[id]
		if f == nil || !f.stat {
			continue
		}
		d, err := hashing.Moved(f.key)
		if err != nil {
			return fmt.Sprintf("model %s: %v", id, err)
		}
		if d != "" {
			return fmt.Sprintf("model %s: %s changed since this run read it and checked its SHA-256 (%s)", id, f.path, d)
		}
	}
	return ""
}

// modelBeforeLeg is the halt of a leg whose model changed since the run read it: the leg is
// not started (it would measure another file than the one registered).
func (r *run) modelBeforeLeg(lp study.LegPlan) *runner.QueueStatus {
	if why := r.modelChanged(lp.Models); why != "" {
		return r.modelHalt(why)
	}
	return nil
}

func (r *run) modelHalt(why string) *runner.QueueStatus {
	return &runner.QueueStatus{Halted: true, Class: runner.Class(study.CodeModelChanged),
		Reason: fmt.Sprintf("%s: %s; put the registered file back (or amend the plan) and run `sparkbench study run %d` again", study.CodeModelChanged, why, r.l.St.ID)}
}

// modelGate checks a leg after it ran: its models are still the files the run read, and
// llama-bench's rows report each model's tensor bytes as its GGUF header holds them and the
// model type the run's first leg of it reported. Otherwise the leg's rows are flagged (they
// measured another file), a model:changed gate is recorded, and the run halts after the leg.
func (r *run) modelGate(ctx context.Context, res *runner.LegResult, ls study.LegStart, legID int64, end *study.LegEnd) error {
	if ls.Role != study.RoleLeg || r.files == nil {
		return nil
	}
	models := r.legModels(ls.PlanLeg)
	why := r.modelChanged(models)
	byPath := map[string]*modelFile{}
	for _, id := range models {
		if f := r.files[id]; f != nil {
			byPath[f.path] = f
		}
	}
	for _, row := range res.Rows {
		if why != "" {
			break
		}
		got := row.Sample.Result
		f := byPath[got.ModelFilename]
		if f == nil && len(byPath) == 1 {
			for _, only := range byPath {
				f = only
			}
		}
		switch {
		case f == nil:
		case f.tensorBytes > 0 && got.ModelSize > 0 && got.ModelSize != f.tensorBytes:
			why = fmt.Sprintf("model %s: llama-bench loaded %d bytes of tensors (model_type %q), the file this run read holds %d", f.id, got.ModelSize, got.ModelType, f.tensorBytes)
		case got.ModelType == "":
		case f.modelType == "":
			f.modelType = got.ModelType
		case got.ModelType != f.modelType:
			why = fmt.Sprintf("model %s: llama-bench reported model_type %q, earlier legs of this run %q", f.id, got.ModelType, f.modelType)
		}
	}
	if why == "" {
		return nil
	}
	if err := r.e.Rec.RecordGate(ctx, study.GateRecord{StudyID: r.l.St.ID, LegID: legID, Name: "model", Code: study.CodeModelChanged,
		Detail: map[string]any{"reason": why}}); err != nil {
		return err
	}
	for i, s := range end.RowStatus {
		if runner.RowStatus(s) == runner.RowResult {
			end.RowStatus[i] = string(runner.RowFlagged)
		}
	}
	end.Class, end.Reason = string(runner.ClassFlagged), study.CodeModelChanged+": "+why
	r.modelHalted = r.modelHalt(why)
	return nil
}

// legModels are the models of a plan leg.
func (r *run) legModels(planLeg string) []string {
	for _, lp := range r.l.Legs {
		if lp.ID == planLeg {
			return lp.Models
		}
	}
	return nil
}
