package workbench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/capacity/caprun"
	"sparkbench/app/demo"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/remote"
	"sparkbench/runner/telemetry/live"
	"sparkbench/store"
)

// The capacity and concurrency kinds' calls: register, run (or resume) and show a study in the
// notebook. The CLI's `capacity` verbs and the window's capacity service both make them.

// FindCapacity resolves a capacity or concurrency study by id or name.
func FindCapacity(ctx context.Context, nb *store.Notebook, ref string) (int64, error) {
	s, err := nb.FindStudy(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("%w; `sparkbench capacity register PLAN` prints a new study's id", err)
	}
	if s.Kind != store.StudyCapacity && s.Kind != store.StudyConcurrency {
		return 0, fmt.Errorf("study %d (%s) is a %s study; this command works on capacity and concurrency studies (`sparkbench study …` for throughput)", s.ID, s.Name, s.Kind)
	}
	return s.ID, nil
}

// CapacityValidation is `capacity validate --json`: a plan file's check.
type CapacityValidation struct {
	File      string              `json:"file"`
	Valid     bool                `json:"valid"`
	Kind      string              `json:"kind,omitempty"`
	SHA256    string              `json:"plan_sha256,omitempty"`
	Problems  []study.Problem     `json:"problems"`
	Lifetimes []capacity.Lifetime `json:"lifetimes,omitempty"`
	// Plan is the plan as checked (its defaults filled in); FlagsNotChecked says why its
	// server_flags were not checked against a llama-server (nil: they were).
	Plan            *capacity.Plan `json:"-"`
	FlagsNotChecked error          `json:"-"`
}

// ServerFlags lists the flags the llama-server of the build in llamaDir ("" = the usual
// search) accepts (llamacpp.HelpFlags, cached per binary) and that binary's path: what capacity
// plans' server_flags are checked against.
func ServerFlags(ctx context.Context, llamaDir string) (map[string]bool, string, error) {
	loc, err := llamacpp.Locate(llamaDir)
	if err != nil {
		return nil, "", err
	}
	known, err := llamacpp.HelpFlags(ctx, loc.Server)
	if err != nil {
		return nil, "", err
	}
	return known, loc.Server, nil
}

// ValidateCapacity checks a capacity or concurrency plan file without writing anything: strict
// JSON, every rule of docs/capacity.md, model and prompt-plan files hashed against the plan
// (hash nil: not hashed), server_flags against the --help of the llama-server in llamaDir
// (else the plan's build.dir, else the usual search; none: not checked). An error: the plan
// cannot be read at all.
func ValidateCapacity(ctx context.Context, file string, hash study.HashFunc, llamaDir string) (*CapacityValidation, error) {
	p, err := capacity.Load(file)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	opts := capacity.ValidateOptions{PlanDir: filepath.Dir(file), Hash: hash}
	dir := llamaDir
	if dir == "" && p.Build.Dir != "" {
		dir = study.ResolvePath(filepath.Dir(file), p.Build.Dir)
	}
	v := &CapacityValidation{File: file, Plan: p}
	if known, bin, err := ServerFlags(ctx, dir); err != nil {
		v.FlagsNotChecked = err
	} else {
		opts.ServerFlags, opts.ServerBinary = known, bin
	}
	v.Problems = capacity.Validate(p, opts)
	v.Valid = len(study.Errors(v.Problems)) == 0
	if v.Problems == nil {
		v.Problems = []study.Problem{}
	}
	if v.Valid {
		v.Kind = kinds.Capacity
		if p.Concurrency() {
			v.Kind = kinds.Concurrency
		}
		v.SHA256, _, _ = p.SHA256()
		v.Lifetimes = capacity.Schedule(p, opts.PlanDir)
	}
	return v, nil
}

// FlagsRefusedError is a plan refused because its server_flags hold flags the build's
// llama-server does not list in its --help.
type FlagsRefusedError struct{ Problems []study.Problem }

func (e *FlagsRefusedError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, pr := range e.Problems {
		msgs[i] = pr.String()
	}
	return "plan refused: " + strings.Join(msgs, "; ")
}

// CapacityRegisterRequest registers a capacity or concurrency plan: a plan file (File), or a
// plan built in the window (Plan), first written to DataDir/plans/NAME-SHA.json with the
// built-in prompt plan beside it when it names that, and its quality case list's SHA-256
// filled in.
type CapacityRegisterRequest struct {
	File string
	Plan *capacity.Plan
	// LlamaDir holds the llama-server whose --help the server_flags are checked against ("": a
	// plan file's build.dir, else the usual search).
	LlamaDir string
	DataDir  string
	Hash     HashShow
}

// CapacityRegistered is a frozen capacity plan: the registration, the plan, why its
// server_flags were not checked (nil: they were), and an error of the hash cache.
type CapacityRegistered struct {
	capacity.Registration
	Plan *capacity.Plan
	// FlagsNotChecked: no llama-server could be found or asked (the plan was registered).
	FlagsNotChecked error
	CacheErr        error
}

// RegisterCapacity checks the plan's server_flags against the build (a *FlagsRefusedError),
// freezes it into the notebook (idempotent), and caches the models' hashes once it is
// accepted. A plan file that cannot be read is a *RequestError. The result, when not nil, says
// whether the flags were checked, also with an error.
func RegisterCapacity(ctx context.Context, nb *store.Notebook, req CapacityRegisterRequest) (*CapacityRegistered, error) {
	// New hashes reach the notebook's cache only when the plan is accepted: a refused plan
	// writes nothing.
	hash, commit := RegistrationHash(ctx, nb, req.Hash)
	out, err := registerCapacity(ctx, nb, req, hash)
	if err != nil {
		return out, err
	}
	out.CacheErr = commit(ctx)
	return out, nil
}

// registerCapacity is RegisterCapacity hashing through hash; the caller caches the hashes.
func registerCapacity(ctx context.Context, nb *store.Notebook, req CapacityRegisterRequest, hash study.HashFunc) (*CapacityRegistered, error) {
	out := &CapacityRegistered{Plan: req.Plan}
	file, dir := req.File, req.LlamaDir
	if req.Plan == nil {
		p, err := capacity.Load(file)
		if err != nil {
			return nil, badInput(err)
		}
		out.Plan = p
		if dir == "" && p.Build.Dir != "" {
			dir = study.ResolvePath(filepath.Dir(file), p.Build.Dir)
		}
	} else if err := prepareCapacityPlan(ctx, req.Plan, req.DataDir); err != nil {
		return nil, err
	}
	p := out.Plan
	if known, bin, err := ServerFlags(ctx, dir); err != nil {
		out.FlagsNotChecked = err
	} else if probs := capacity.CheckServerFlags(p, known, bin); len(probs) > 0 {
		return out, &FlagsRefusedError{Problems: probs}
	}
	if req.Plan != nil {
		sum, _, _ := p.SHA256()
		var err error
		if file, err = WritePlanFile(req.DataDir, p.Name, sum, p); err != nil {
			return out, err
		}
	}
	reg, err := capacity.Register(ctx, store.CapacityRecorder{N: nb}, p, file, hash)
	out.Registration = reg
	return out, err
}

// prepareCapacityPlan readies a plan built in the window: the built-in prompt plan written to
// DATA/plans when the plan names it, the quality case list hashed, the defaults filled in.
func prepareCapacityPlan(ctx context.Context, p *capacity.Plan, dataDir string) error {
	plans, err := PlansDir(dataDir)
	if err != nil {
		return err
	}
	if p.PromptPlan == capacity.DefaultPromptPlanRef() {
		if _, err := capacity.WriteDefaultPromptPlan(plans); err != nil {
			return err
		}
	}
	if q := p.QualityCases; q != nil && q.SHA256 == "" {
		path := q.Path
		if !filepath.IsAbs(path) {
			return fmt.Errorf("quality cases %q: give the file's full path (the plan is written to %s)", path, plans)
		}
		sum, err := hashing.File(ctx, path, nil)
		if err != nil {
			return fmt.Errorf("quality cases: %w", err)
		}
		p.QualityCases = &capacity.FileRef{Path: path, SHA256: sum}
	}
	p.Defaults()
	_, _, err = p.SHA256()
	return err
}

// CapacityRunRequest runs (or resumes) registered capacity study ID.
type CapacityRunRequest struct {
	ID int64
	// LlamaDir holds llama-server ("": the plan's build.dir, else the usual search).
	LlamaDir string
	// Out is a new run folder ("": the study's last run folder is resumed, else one is made
	// under DataDir/runs); Fresh starts a new one instead of resuming.
	Out   string
	Fresh bool
	// DataDir is where run folders go ("": the user's data folder).
	DataDir                             string
	StartTimeout, RequestTimeout, Grace time.Duration
	QualityCases                        string
	// Batched is candidate ID -> a llama-batched-bench output file, for the server tax
	// (checked before anything runs, copied into the run folder).
	Batched map[string]string
	OnEvent func(capacity.RunEvent)
	// Warn is told what was not checked or fingerprinted (nil: nothing).
	Warn func(msg string)
	Hash HashShow
	// TrustCache: RunRequest.TrustCache.
	TrustCache bool
	// Telemetry says where the samplers of a plan with a telemetry block read (nil: this
	// machine's; tests give fake trees and a fake NVML); the interval is the plan's.
	Telemetry *live.Config
	// On names a bench host of Hosts: every llama-server runs there over ssh, the load
	// generator here against a forwarded port (docs/fleet.md); "": this machine.
	On    string
	Hosts *remote.HostsFile
	// Leased says the caller holds the study's run lease (store.Notebook.LeaseStudy); unset,
	// the engine takes it.
	Leased bool
}

// CapacityEngine is the engine that runs study req.ID: llama-server from req.LlamaDir, else the
// plan's build.dir, else the usual search; the plan's server_flags checked against its --help
// (a *RequestError when it does not know one: nothing is recorded); the build fingerprinted;
// files hashed through the notebook's cache. With req.On none of the local build is located or
// checked: RunCapacity readies the host (capacityOnHost). A *RequestError is bad input (no build, a refused
// plan, no data folder when req.Out is ""); other errors come from the notebook.
func CapacityEngine(ctx context.Context, nb *store.Notebook, req CapacityRunRequest) (*caprun.Engine, capacity.StoredStudy, error) {
	warn := req.Warn
	if warn == nil {
		warn = func(string) {}
	}
	rec := store.CapacityRecorder{N: nb}
	st, err := rec.Study(ctx, req.ID)
	if err != nil {
		return nil, st, err
	}
	plan, err := capacity.Decode("registered plan", st.PlanJSON)
	if err != nil {
		return nil, st, err
	}
	dataDir, err := demo.DataDir()
	if req.DataDir != "" {
		dataDir, err = req.DataDir, nil
	}
	if err != nil && req.Out == "" {
		return nil, st, badInput(fmt.Errorf("%v; give --out DIR", err))
	}
	hash, err := RunHash(ctx, nb, req.ID, req.Hash, req.TrustCache)
	if err != nil {
		return nil, st, err
	}
	e := &caprun.Engine{Rec: rec, Hash: hash, DataDir: dataDir}
	e.StartTimeout, e.RequestTimeout, e.Grace, e.QualityCases, e.Fresh = req.StartTimeout, req.RequestTimeout, req.Grace, req.QualityCases, req.Fresh
	e.Batched = req.Batched
	e.OnEvent = req.OnEvent
	e.Leased = req.Leased
	if req.On != "" { // the host's llama-server, checked by capacityOnHost
		return e, st, nil
	}
	dir := req.LlamaDir
	if dir == "" && plan.Build.Dir != "" {
		dir = study.ResolvePath(st.PlanDir, plan.Build.Dir)
	}
	loc, err := llamacpp.Locate(dir)
	if err != nil {
		return nil, st, badInput(err)
	}
	// A registered plan whose server_flags this llama-server does not know would fail every
	// lifetime: refused before anything runs (nothing is recorded).
	if known, herr := llamacpp.HelpFlags(ctx, loc.Server); herr != nil {
		warn(fmt.Sprintf("warning: server_flags not checked against llama-server: %v", herr))
	} else if probs := capacity.CheckServerFlags(plan, known, loc.Server); len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, pr := range probs {
			msgs[i] = pr.String()
		}
		return nil, st, badInput(fmt.Errorf("study %d's plan refused: %s; register a plan without it", req.ID, strings.Join(msgs, "; ")))
	}
	build, err := llamacpp.Inspect(ctx, loc)
	if err != nil {
		warn(fmt.Sprintf("warning: %v (the build is not fingerprinted in run.json)", err))
		build = nil
	}
	e.Server, e.Build = loc.Server, build
	return e, st, nil
}

// NotStartedError is a run that did not start (nothing was recorded): Err says why (a
// *RequestError: bad input).
type NotStartedError struct{ Err error }

func (e *NotStartedError) Error() string { return e.Err.Error() }

func (e *NotStartedError) Unwrap() error { return e.Err }

// RunCapacity runs the study's unfinished server lifetimes (CapacityEngine, then its run): the
// summary (also with an error, when the run began) and the stored study. An engine that cannot
// be had is a *NotStartedError.
func RunCapacity(ctx context.Context, nb *store.Notebook, req CapacityRunRequest) (*capacity.RunSummary, capacity.StoredStudy, error) {
	e, st, err := CapacityEngine(ctx, nb, req)
	if err != nil {
		return nil, st, &NotStartedError{err}
	}
	if req.On != "" {
		plan, perr := capacity.Decode("registered plan", st.PlanJSON)
		if perr != nil {
			return nil, st, &NotStartedError{perr}
		}
		closeHost, herr := capacityOnHost(ctx, e, st, plan, req)
		if herr != nil {
			return nil, st, &NotStartedError{herr}
		}
		defer closeHost()
	}
	if plan, perr := capacity.Decode("registered plan", st.PlanJSON); perr == nil && plan.Telemetry != nil {
		hook, closeSamplers := samplerHook(ctx, nb, plan.Telemetry, req.Telemetry)
		defer closeSamplers()
		e.Telemetry = hook
	}
	sum, err := e.Run(ctx, req.ID, req.Out)
	return sum, st, err
}

// ShowCapacity is a capacity or concurrency study's report.
// With KV arms (capacity.KVArms), each arm's KL divergence from an f16 cache is shown beside
// the speed its cache type bought.
func ShowCapacity(ctx context.Context, nb *store.Notebook, id int64) (*capacity.Report, error) {
	rep, err := capacity.Show(ctx, store.CapacityRecorder{N: nb}, id)
	if err != nil {
		return rep, err
	}
	return rep, attachCapacityKV(ctx, nb, id, rep)
}

// CapacityPlan is study id's registered plan, its defaults filled in.
func CapacityPlan(ctx context.Context, nb *store.Notebook, id int64) (*capacity.Plan, error) {
	st, err := store.CapacityRecorder{N: nb}.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	plan, err := capacity.Decode(fmt.Sprintf("study %d plan", id), st.PlanJSON)
	if err != nil {
		return nil, err
	}
	plan.Defaults()
	return plan, nil
}
