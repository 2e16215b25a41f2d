package caprun

import (
	"fmt"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner/hashing"
)

// CodeModelChanged is a lifetime whose candidate's model file is no longer the one the run
// read and checked against the plan's SHA-256 (another size, inode or ctime): the lifetime
// has no results and the run halts (the same code as a throughput leg's, study.CodeModelChanged).
const CodeModelChanged = study.CodeModelChanged

// ModelChangedError halts a run whose model changed under it.
type ModelChangedError struct{ Why string }

func (e *ModelChangedError) Error() string {
	return CodeModelChanged + ": " + e.Why + "; put the registered file back (or write a new plan) and run the study again: it measures this lifetime again"
}

// noteModels keeps each candidate's model identity (path, size, mtime, device, inode, ctime)
// right after the run hashed the files; a run whose servers start on a bench host checks
// nothing here (its files are there, and were hashed there).
func (r *Run) noteModels(p *capacity.Plan, planDir string) error {
	if r.spec.Host != nil {
		return nil
	}
	r.models = map[string]hashing.Key{}
	for _, c := range p.Candidates {
		k, err := hashing.KeyOf(study.ResolvePath(planDir, c.Model.Path))
		if err != nil {
			return capacity.Refuse("candidate %s: model: %v", c.ID, err)
		}
		r.models[c.ID] = k
	}
	return nil
}

// modelChanged says how candidate's model is no longer the file the run read ("" when it is):
// one stat, before and after each lifetime.
func (r *Run) modelChanged(candidate string) string {
	k, ok := r.models[candidate]
	if !ok {
		return ""
	}
	d, err := hashing.Moved(k)
	if err != nil {
		return fmt.Sprintf("the model of candidate %s: %v", candidate, err)
	}
	if d != "" {
		return fmt.Sprintf("the model of candidate %s, %s, changed since this run read it and checked its SHA-256 (%s)", candidate, k.Path, d)
	}
	return ""
}
