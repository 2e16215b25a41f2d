package workbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sparkbench/runner/telemetry/live"
	"strings"
	"time"

	"sparkbench/app/kinds"
	"sparkbench/app/quant"
	"sparkbench/app/quant/quantrun"
	"sparkbench/assets"
	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
	"sparkbench/store"
)

// The calls the window's quantization ladder form and study view make (the CLI has its own
// verbs over the same kind): the build's quant types, the project corpus, the kind's
// Validate, Register and Run on a plan built in the form, a ladder's plan and result, the
// derived-model cache and a rough duration estimate.

// QuantTypes are the quant types the build's llama-quantize lists (llamaDir: the folder, ""
// the usual search; env: the plan's build.env), in its order.
func QuantTypes(ctx context.Context, llamaDir string, env []string) ([]string, error) {
	loc, err := llamacpp.Locate(llamaDir)
	if err != nil {
		return nil, err
	}
	tool, err := runner.QuantizeToolPath(loc)
	if err != nil {
		return nil, err
	}
	types, err := runner.QuantizeTypes(ctx, tool, env)
	if err != nil {
		return nil, err
	}
	return types.Names(), nil
}

// QuantCorpus is the project's own quality corpus (assets.Corpus) as a file of the data folder
// (DATA/corpus/NAME, written once; a copy that differs is written again), the default corpus
// of a ladder made in the window.
func QuantCorpus(dataDir string) (string, error) {
	dir, err := DataDirOr(dataDir)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "corpus", assets.CorpusName)
	if b, err := os.ReadFile(path); err == nil && string(b) == string(assets.Corpus) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, assets.Corpus, 0o644)
}

// quantKind is the registered ladder kind.
func quantKind() (*Kind, error) {
	k := KindOf(kinds.Quant)
	if k == nil || k.Validate == nil || k.Register == nil || k.Run == nil {
		return nil, fmt.Errorf("the quantization ladder kind is not registered")
	}
	return k, nil
}

// formPlanFile names a plan built in the window in the kind's messages.
const formPlanFile = "the New study form"

// ValidateQuantPlan checks a plan built in the window through the kind's Validate (as `study
// validate` checks a file): its JSON, the files it names by absolute path, not hashed (Register
// hashes them), against the build in llamaDir ("": the plan's build.dir, else the usual search).
func ValidateQuantPlan(ctx context.Context, p *quant.Plan, llamaDir string) (*Validated, error) {
	k, err := quantKind()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return k.Validate(ctx, PlanCheck{File: formPlanFile, Data: data, LlamaDir: llamaDir})
}

// QuantRegisterRequest freezes a plan built in the window: it is written as
// DATA/plans/NAME-SHA.json and that file is registered as `study register FILE` registers it.
type QuantRegisterRequest struct {
	Plan    *quant.Plan
	DataDir string
	Hash    HashShow
}

// QuantRegistered is a frozen ladder: the registration, the plan file, and an error of the
// hash cache (the study is registered; its files are hashed again by the next command).
type QuantRegistered struct {
	*Registered
	File     string
	CacheErr error
}

// RegisterQuantPlan writes the plan (defaults filled in) to the data folder's plans/ and
// registers that file through the kind's Register, with the notebook's hash cache, which keeps
// the new hashes only once the plan is accepted. A refused plan is a *study.RefusedError.
func RegisterQuantPlan(ctx context.Context, nb *store.Notebook, req QuantRegisterRequest) (*QuantRegistered, error) {
	k, err := quantKind()
	if err != nil {
		return nil, err
	}
	p := *req.Plan
	p.Defaults()
	sum, _, err := p.SHA256()
	if err != nil {
		return nil, err
	}
	file, err := WritePlanFile(req.DataDir, p.Name, sum, &p)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	hash, commit := RegistrationHash(ctx, nb, req.Hash)
	reg, err := k.Register(ctx, nb, file, data, hash)
	if err != nil {
		return nil, err
	}
	return &QuantRegistered{Registered: reg, File: file, CacheErr: commit(ctx)}, nil
}

// QuantLadder is a ladder study as the window shows it: the study, its registered plan and
// SHA-256, and the result assembled from the records its last run journaled (every candidate
// "not run" before a run).
type QuantLadder struct {
	Study      store.Study
	Plan       *quant.Plan
	PlanSHA256 string
	Result     *quant.Result
}

// ShowQuantLadder is study id's plan and result (as `study show` assembles it).
func ShowQuantLadder(ctx context.Context, nb *store.Notebook, id int64) (*QuantLadder, error) {
	s, err := nb.Study(ctx, id)
	if err != nil {
		return nil, badInput(err)
	}
	if s.Kind != kinds.Quant {
		return nil, badInput(fmt.Errorf("study %d (%s) is a %s study, not a quantization ladder", s.ID, s.Name, s.Kind))
	}
	pl, _, res, err := quantResult(ctx, nb, s)
	if err != nil {
		return nil, err
	}
	p, err := quant.Decode(fmt.Sprintf("study %d plan", s.ID), pl.JSON)
	if err != nil {
		return nil, err
	}
	return &QuantLadder{Study: s, Plan: p, PlanSHA256: pl.SHA256, Result: res}, nil
}

// QuantRunRequest runs ladder study ID through the kind's Run: each progress line to Event,
// each candidate's record to Record as soon as it is measured.
type QuantRunRequest struct {
	ID       int64
	LlamaDir string
	Event    func(line string)
	Record   func(quant.Record)
	// Telemetry says where a telemetry block's samplers read (nil: this machine's).
	Telemetry *live.Config
}

// RunQuantLadder runs a registered ladder (`study run ID`).
func RunQuantLadder(ctx context.Context, nb *store.Notebook, req QuantRunRequest) (*RunDone, error) {
	k, err := quantKind()
	if err != nil {
		return nil, err
	}
	s, err := nb.Study(ctx, req.ID)
	if err != nil {
		return nil, badInput(err)
	}
	if s.Kind != kinds.Quant {
		return nil, badInput(fmt.Errorf("study %d (%s) is a %s study, not a quantization ladder", s.ID, s.Name, s.Kind))
	}
	return k.Run(ctx, nb, s, RunRequest{LlamaDir: req.LlamaDir, Event: req.Event, JSON: func(ev any) {
		if r, ok := ev.(quant.Record); ok && req.Record != nil {
			req.Record(r)
		}
	}, Options: &QuantRunOptions{Telemetry: req.Telemetry}})
}

// DerivedModels lists the derived-model cache of the data folder ("": the user's) with each
// file's provenance (quantrun.ListDerived).
func DerivedModels(dataDir string) ([]quantrun.DerivedModel, error) {
	dir, err := DataDirOr(dataDir)
	if err != nil {
		return nil, err
	}
	return quantrun.ListDerived(dir)
}

// QuantEstimate is a rough duration of a ladder: from the legs of earlier ladders of the same
// reference in the notebook (Studies of them), else from a stated per-candidate constant.
type QuantEstimate struct {
	Total        time.Duration
	PerCandidate time.Duration
	Base         time.Duration // the reference's base logits
	Studies      int           // earlier ladders measured (0: the constant)
}

// GuessPerCandidate is the per-candidate time a ladder is estimated with when the notebook
// has no earlier ladder of its reference: a guess for a small model (quantize, KLD and the
// speed legs), stated as such.
const GuessPerCandidate = 2 * time.Minute

func (e QuantEstimate) String() string {
	if e.Studies == 0 {
		return fmt.Sprintf("about %s (a guess: %s per candidate; no earlier ladder of this reference in the notebook)", e.Total.Round(time.Second), GuessPerCandidate)
	}
	return fmt.Sprintf("about %s (%s per candidate and %s for the base logits, measured on %d earlier ladder(s) of this reference; derived models in the cache take less)",
		e.Total.Round(time.Second), e.PerCandidate.Round(time.Second), e.Base.Round(time.Second), e.Studies)
}

// EstimateQuant is how long plan p's ladder takes, roughly: the mean time per candidate (its
// quantize, kld and bench legs) and of the base logits (kld-base) in the notebook's earlier
// ladders of the same reference (by SHA-256, else by path), times p's candidates.
func EstimateQuant(ctx context.Context, nb *store.Notebook, p *quant.Plan) (QuantEstimate, error) {
	list, err := nb.Studies(ctx)
	if err != nil {
		return QuantEstimate{}, err
	}
	var cand, base time.Duration
	var cands, bases, studies int
	for _, s := range list {
		if s.Kind != kinds.Quant || s.PlanSHA256 == "" {
			continue
		}
		pl, err := nb.Plan(ctx, s.ID)
		if err != nil {
			continue
		}
		q, err := quant.Decode("plan", pl.JSON)
		if err != nil || !sameReference(q.Reference, p.Reference) {
			continue
		}
		legs, err := nb.LegTimeline(ctx, s.ID)
		if err != nil {
			return QuantEstimate{}, err
		}
		measured := map[string]bool{}
		for _, l := range legs {
			d := l.Duration()
			switch kind, rest, _ := strings.Cut(l.Label, "/"); {
			case d <= 0:
			case l.Label == "kld-base" || strings.HasPrefix(l.Label, "kld-base#"):
				base += d
				bases++
			case kind == "quantize" || kind == "kld" || kind == "bench":
				typ, _, _ := strings.Cut(strings.SplitN(rest, "#", 2)[0], "/")
				cand += d
				measured[typ] = true
			}
		}
		if len(measured) > 0 {
			cands += len(measured)
			studies++
		}
	}
	n := time.Duration(len(p.Quants))
	if studies == 0 {
		return QuantEstimate{Total: n * GuessPerCandidate, PerCandidate: GuessPerCandidate}, nil
	}
	e := QuantEstimate{PerCandidate: cand / time.Duration(cands), Studies: studies}
	if bases > 0 {
		e.Base = base / time.Duration(bases)
	}
	e.Total = e.Base + n*e.PerCandidate
	return e, nil
}

func sameReference(a, b quant.FileRef) bool {
	if a.SHA256 != "" && b.SHA256 != "" {
		return a.SHA256 == b.SHA256
	}
	return a.Path != "" && a.Path == b.Path
}
