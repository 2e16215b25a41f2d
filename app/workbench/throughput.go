package workbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sparkbench/app/demo"
	"sparkbench/app/energy"
	"sparkbench/app/energy/energyrun"
	"sparkbench/app/hostlist"
	"sparkbench/app/kinds"
	"sparkbench/app/overview"
	"sparkbench/app/study"
	"sparkbench/app/study/kvquality"
	"sparkbench/app/study/studyrun"
	"sparkbench/runner"
	"sparkbench/runner/fsread"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/remote"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/live"
	"sparkbench/store"
)

// The throughput kind's calls: validate, register, run (or resume), show and compare. The CLI's
// `study` verbs and the window's study service both make them; they print nothing.

// ThroughputValidation is `study validate --json`: a plan file's check.
type ThroughputValidation struct {
	File     string          `json:"file"`
	Valid    bool            `json:"valid"`
	SHA256   string          `json:"plan_sha256,omitempty"`
	Problems []study.Problem `json:"problems"`
	Legs     []study.LegPlan `json:"legs,omitempty"`
	// Planner is the repetition planner's answer per model and test, from the notebook's
	// history (absent without a notebook).
	Planner []study.RepPlan `json:"planner,omitempty"`
	// Plan is the plan as checked (its defaults filled in).
	Plan *study.Plan `json:"-"`
}

// LoadPlan decodes a throughput plan from data (the file's bytes, already read), or reads
// file when data is nil (and says why it cannot be read).
func LoadPlan(file string, data []byte) (*study.Plan, error) {
	if data == nil {
		return study.Load(file)
	}
	return study.Decode(file, data)
}

// ReadPlanFile reads a plan file once: its bytes (nil when it cannot be read: LoadPlan then
// says why) and its "schema" ("" when the bytes are not a JSON object).
func ReadPlanFile(file string) (data []byte, schema string) {
	data, err := fsread.ReadFile(file, study.MaxPlanBytes, "plan")
	if err != nil {
		return nil, ""
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &head) != nil {
		return data, ""
	}
	return data, head.Schema
}

// ValidateThroughput checks a throughput plan file (data: its bytes, or nil) without writing
// anything: strict JSON, every rule of the plan format, the model files hashed against the
// plan (hash nil: not hashed), extra_args and devices against the build in llamaDir (else
// the plan's build.dir, else the usual search). An error: the plan cannot be read at all.
func ValidateThroughput(ctx context.Context, file string, data []byte, hash study.HashFunc, llamaDir string) (*ThroughputValidation, error) {
	return ValidateThroughputWith(ctx, PlanCheck{File: file, Data: data, Hash: hash, LlamaDir: llamaDir})
}

// ValidateThroughputWith is ValidateThroughput with the notebook's history of the plan's
// models (req.Notebook): the repetition planner's answers and its warnings.
func ValidateThroughputWith(ctx context.Context, req PlanCheck) (*ThroughputValidation, error) {
	file, hash, llamaDir := req.File, req.Hash, req.LlamaDir
	p, err := LoadPlan(file, req.Data)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	opts := study.ValidateOptions{PlanDir: filepath.Dir(file), Hash: hash}
	if opts.History, err = PlanHistory(ctx, req.Notebook, p, opts.PlanDir); err != nil {
		return nil, err
	}
	var unchecked *study.Problem
	opts.BenchFlags, unchecked = benchFlagsFor(ctx, p, llamaDir)
	var devProbs []study.Problem
	opts.Devices, devProbs = devicesFor(ctx, p, llamaDir)
	probs, _ := study.Validate(p, opts)
	probs = append(probs, devProbs...)
	if unchecked != nil {
		probs = append(probs, *unchecked)
	}
	v := &ThroughputValidation{File: file, Valid: len(study.Errors(probs)) == 0, Problems: probs, Plan: p}
	if v.Problems == nil {
		v.Problems = []study.Problem{}
	}
	if v.Valid {
		v.SHA256, _, _ = p.SHA256()
		v.Legs, _ = study.Expand(p, opts.PlanDir)
		if opts.History != nil {
			v.Planner = study.PlanRepetitions(p, opts.History, req.Effect)
		}
	}
	return v, nil
}

// ThroughputRegisterRequest registers a throughput plan: a plan file (File, with its bytes in
// Data or nil to read it), or a plan built in the window (Plan), which is first written to
// DataDir/plans/NAME-SHA.json ("" DataDir: the user's data folder).
type ThroughputRegisterRequest struct {
	File string
	Data []byte
	Plan *study.Plan
	// LlamaDir is the build whose llama-bench checks extra_args and devices ("": the plan's
	// build.dir, else the usual search).
	LlamaDir string
	DataDir  string
	// Hash shows the model files being hashed (nil: nothing shown).
	Hash HashShow
}

// ThroughputRegistered is a frozen plan: the registration, the plan, and an error of the hash
// cache (the study is registered; its files are hashed again by the next command).
type ThroughputRegistered struct {
	study.Registration
	File     string
	Plan     *study.Plan
	CacheErr error
}

// RegisterThroughput checks the plan against the build (a *study.RefusedError lists what it
// says), freezes it into the notebook with its predictions (idempotent: the same plan is
// Existing), and caches the models' hashes only once it is accepted. A plan file that cannot
// be read or decoded is a *RequestError.
func RegisterThroughput(ctx context.Context, nb *store.Notebook, req ThroughputRegisterRequest) (*ThroughputRegistered, error) {
	// New hashes reach the notebook's cache only when the plan is accepted: a refused plan
	// writes nothing.
	hash, commit := RegistrationHash(ctx, nb, req.Hash)
	out, err := registerThroughput(ctx, nb, req, hash)
	if err != nil {
		return out, err
	}
	out.CacheErr = commit(ctx)
	return out, nil
}

// registerThroughput is RegisterThroughput hashing through hash; the caller caches the hashes.
func registerThroughput(ctx context.Context, nb *store.Notebook, req ThroughputRegisterRequest, hash study.HashFunc) (*ThroughputRegistered, error) {
	p, file := req.Plan, req.File
	if p == nil {
		var err error
		if p, err = LoadPlan(file, req.Data); err != nil {
			return nil, badInput(err)
		}
	} else {
		p.Defaults()
		if _, _, err := p.SHA256(); err != nil {
			return nil, err
		}
	}
	// extra_args the build does not know, devices it does not have and RPC endpoints that do
	// not answer are refused before anything is hashed or written.
	if err := buildRefusal(ctx, p, req.LlamaDir); err != nil {
		return nil, err
	}
	if req.Plan != nil {
		sum, _, _ := p.SHA256()
		var err error
		if file, err = WritePlanFile(req.DataDir, p.Name, sum, p); err != nil {
			return nil, err
		}
	}
	hist, err := PlanHistory(ctx, nb, p, filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	reg, err := study.RegisterWith(ctx, store.StudyRecorder{N: nb}, p, file, study.RegisterOptions{Hash: hash, History: hist})
	return &ThroughputRegistered{Registration: reg, File: file, Plan: p}, err
}

// ThroughputRunRequest runs (or resumes) registered throughput study ID.
type ThroughputRunRequest struct {
	ID int64
	// LlamaDir holds llama-bench ("": the plan's build.dir, else the usual search).
	LlamaDir string
	// Retry names plan legs to run once more although their failures reached the plan's retries.
	Retry   []string
	OnEvent func(study.Event)
	Hash    HashShow
	// Say is told the KV quality check's lines (nil: nowhere).
	Say func(line string)
	// Telemetry says where the samplers of a plan with a telemetry block read (nil: this
	// machine's; tests give fake trees and a fake NVML); the interval is the plan's.
	Telemetry *live.Config
	// LiveTelemetry also hands OnEvent each sampler reading as it is taken (EventTelemetry:
	// the window's timeline and machine card), from the samplers' goroutines; off, the events
	// are what they were (the CLI's --json lines).
	LiveTelemetry bool
	// TrustCache: RunRequest.TrustCache.
	TrustCache bool
}

// RunThroughput runs the study's unfinished legs. A llama-bench that cannot be found is a
// *RequestError; study.ErrStopped, a *study.RetryError and a *study.RefusedError come from the
// engine. Once every leg has results, a plan with a KV cache type other than f16 gets its
// quality check (kvquality.Run: the KL divergence of each such type from an f16 cache).
func RunThroughput(ctx context.Context, nb *store.Notebook, req ThroughputRunRequest) (study.RunSummary, error) {
	rec := store.StudyRecorder{N: nb}
	st, err := rec.Study(ctx, req.ID)
	if err != nil {
		return study.RunSummary{}, err
	}
	dir := req.LlamaDir
	plan, perr := study.Decode("plan", st.PlanJSON)
	if dir == "" && perr == nil {
		dir = plan.Build.Dir
	}
	loc, err := llamacpp.Locate(dir)
	if err != nil {
		return study.RunSummary{}, badInput(err)
	}
	// One run per study at a time, the KV quality check after the legs included.
	release, err := rec.Lease(ctx, req.ID)
	if err != nil {
		return study.RunSummary{StudyID: req.ID}, err
	}
	defer release()
	hash, err := RunHash(ctx, nb, req.ID, req.Hash, req.TrustCache)
	if err != nil {
		return study.RunSummary{StudyID: req.ID}, err
	}
	e := &studyrun.Engine{Rec: rec, Bench: loc.Bench, Hash: hash, OnEvent: req.OnEvent, Retry: req.Retry, Leased: true}
	e.RPCHosts = func() (*remote.HostsFile, error) { // $SPARKBENCH_HOSTS, the notebook's hosts, hosts.json
		f, err := hostlist.Resolve("", func() ([]store.Host, error) { return nb.Hosts(ctx) }, nb.Path())
		if err != nil {
			return nil, fmt.Errorf("rpc_servers: %w", err)
		}
		return f.Hosts, nil
	}
	if perr == nil && plan.Telemetry != nil {
		hook, closeSamplers := samplerHook(ctx, nb, plan.Telemetry, req.Telemetry)
		defer closeSamplers()
		if req.LiveTelemetry && req.OnEvent != nil {
			hook.OnSample = func(legID int64, s telemetry.Sample) { req.OnEvent(study.TelemetryEvent(req.ID, legID, s)) }
		}
		e.Telemetry = hook
	}
	sum, err := e.Run(ctx, req.ID)
	if err == nil && sum.Status == study.StatusComplete {
		err = kvQuality(ctx, nb, rec, req, loc)
	}
	// The study's overview summary (docs/overview.md), so the next overview need not read its
	// rows: written whatever the run's end (a study with a running leg has none); failing to
	// write it only costs that.
	_ = overview.Summarize(context.WithoutCancel(ctx), nb, req.ID)
	return sum, err
}

// kvQuality runs the KV cache quality check of a complete study whose plan has a cache type
// other than f16 (a build without llama-perplexity: said, and skipped).
func kvQuality(ctx context.Context, nb *store.Notebook, rec store.StudyRecorder, req ThroughputRunRequest, loc llamacpp.Location) error {
	l, err := study.LoadStudy(ctx, rec, req.ID)
	if err != nil || len(kvquality.Needed(l.Plan)) == 0 {
		return err
	}
	say := func(s string) {
		if req.Say != nil {
			req.Say(s)
		}
	}
	tool, err := runner.PerplexityToolPath(loc)
	if err != nil {
		say(fmt.Sprintf("kv quality: not checked: %v", err))
		return nil
	}
	data, err := DataDirOr("")
	if err != nil {
		say(fmt.Sprintf("kv quality: not checked: %v", err))
		return nil
	}
	threads := 1
	if len(l.Plan.Axes.Threads) > 0 {
		threads = l.Plan.Axes.Threads[0]
	}
	_, err = kvquality.Run(ctx, nb, req.ID, l.Plan, l.St.PlanDir, kvquality.Options{Perplexity: tool, DataDir: data, Threads: threads, Event: say})
	return err
}

// ShowThroughput is a throughput study's report: every figure with the stored rows it came from.
func ShowThroughput(ctx context.Context, nb *store.Notebook, id int64) (*study.Report, error) {
	if s, err := nb.Study(ctx, id); err == nil && s.Kind == kinds.Quant {
		return nil, fmt.Errorf("study %d (%s) is a quantization ladder: the window does not show ladders yet; `sparkbench study show %d` does", id, s.Name, id)
	}
	rep, err := study.Show(ctx, store.StudyRecorder{N: nb}, id)
	if err != nil {
		return rep, err
	}
	checks, err := kvquality.Load(ctx, nb, id)
	if err != nil {
		return rep, err
	}
	var gate *study.KVQualityGate
	if st, err := (store.StudyRecorder{N: nb}).Study(ctx, id); err == nil {
		if p, err := study.Decode("plan", st.PlanJSON); err == nil {
			gate = p.KVQuality
		}
	}
	study.AttachKVQuality(rep, study.KVQualityOf(checks), gate)
	return rep, nil
}

// CompareThroughput compares two throughput studies cell by cell (benchstat style) at alpha,
// with the default statistics (benchmath when a study has adaptive repetitions, else Welch);
// study.ErrNotComparable: they share no model, no cell, or have too few reps.
func CompareThroughput(ctx context.Context, nb *store.Notebook, baseline, newer int64, alpha float64) (*study.StudyComparison, error) {
	return CompareThroughputWith(ctx, nb, baseline, newer, study.CompareOptions{Alpha: alpha})
}

// CompareThroughputWith is CompareThroughput with the statistics chosen (`study compare
// --stats`) and, with o.AA, the A/A control of both studies.
func CompareThroughputWith(ctx context.Context, nb *store.Notebook, baseline, newer int64, o study.CompareOptions) (*study.StudyComparison, error) {
	return study.CompareStudiesWith(ctx, store.StudyRecorder{N: nb}, baseline, newer, o)
}

// ThroughputAAControl is the A/A control of one throughput study (`study compare --aa ID`).
type ThroughputAAControl struct {
	Study study.ComparedStudy `json:"study"`
	AA    *study.AAControl    `json:"aa_control"`
}

// AAControlThroughput compares every cell of study id with itself, split in halves
// (study.AAControlOf), and reports the false-positive rate.
func AAControlThroughput(ctx context.Context, nb *store.Notebook, id int64, o study.CompareOptions) (*ThroughputAAControl, error) {
	aa, s, err := study.AAControlOf(ctx, store.StudyRecorder{N: nb}, id, o)
	if err != nil {
		return nil, err
	}
	return &ThroughputAAControl{Study: s, AA: aa}, nil
}

// devicesFor asks the build that would run the plan for its devices, with the plan's env and
// RPC endpoints, when the plan has device axes or env (nil otherwise). An RPC endpoint that
// refuses or does not answer is an error problem at axes.rpc; a build that cannot be found or
// asked, a warning that the devices were not checked.
func devicesFor(ctx context.Context, p *study.Plan, llamaDir string) (*study.BuildDevices, []study.Problem) {
	if !p.NeedsDevices() {
		return nil, nil
	}
	return ListDevices(ctx, p, llamaDir)
}

// ListDevices is devicesFor whether or not the plan has device axes (the window's New study
// form lists the build's devices to offer them).
func ListDevices(ctx context.Context, p *study.Plan, llamaDir string) (*study.BuildDevices, []study.Problem) {
	if llamaDir == "" {
		llamaDir = p.Build.Dir
	}
	loc, err := llamacpp.Locate(llamaDir)
	if err != nil {
		return nil, []study.Problem{{Path: "axes.devices", Severity: study.SevWarning,
			Msg: fmt.Sprintf("not checked against a build (%v); pass --llama-dir with the build that will run the plan", err)}}
	}
	devs, err := studyrun.ListDevices(ctx, loc.Bench, p)
	if err != nil {
		return nil, []study.Problem{{Path: "axes.rpc", Severity: study.SevError, Msg: err.Error()}}
	}
	if devs != nil && !devs.Listed {
		return nil, []study.Problem{{Path: "axes.devices", Severity: study.SevWarning,
			Msg: fmt.Sprintf("not checked: %s --list-devices did not run", loc.Bench)}}
	}
	return devs, nil
}

// buildRefusal is what the build says against registering the plan: extra_args it does not
// know, devices it does not have, RPC endpoints that do not answer (nil: nothing).
func buildRefusal(ctx context.Context, p *study.Plan, llamaDir string) error {
	var probs []study.Problem
	if flags, _ := benchFlagsFor(ctx, p, llamaDir); flags != nil {
		probs = append(probs, study.CheckBenchFlags(p, flags)...)
	}
	devs, devProbs := devicesFor(ctx, p, llamaDir)
	probs = append(probs, study.Errors(devProbs)...)
	if devs != nil {
		probs = append(probs, study.Errors(study.CheckDevices(p, *devs))...)
	}
	if len(probs) > 0 {
		return &study.RefusedError{Problems: probs}
	}
	return nil
}

// benchFlagsFor lists the flags of the llama-bench that would run the plan, when the plan has
// extra_args to check (nil otherwise); a build that cannot be found or asked gives a warning
// saying the extra_args were not checked.
func benchFlagsFor(ctx context.Context, p *study.Plan, llamaDir string) (map[string]bool, *study.Problem) {
	if len(p.Axes.ExtraArgs) == 0 {
		return nil, nil
	}
	if llamaDir == "" {
		llamaDir = p.Build.Dir
	}
	loc, err := llamacpp.Locate(llamaDir)
	if err == nil {
		var flags map[string]bool
		if flags, err = llamacpp.HelpFlags(ctx, loc.Bench); err == nil {
			return flags, nil
		}
	}
	return nil, &study.Problem{Path: "axes.extra_args", Severity: study.SevWarning,
		Msg: fmt.Sprintf("not checked against a llama-bench (%v); pass --llama-dir with the build that will run the plan", err)}
}

// DataDirOr is dir, or the user's sparkbench data folder when dir is "".
func DataDirOr(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return demo.DataDir()
}

// PlansDir is the folder plans built in the window are written to (DATA/plans), created.
func PlansDir(dataDir string) (string, error) {
	dir, err := DataDirOr(dataDir)
	if err != nil {
		return "", err
	}
	plans := filepath.Join(dir, "plans")
	return plans, os.MkdirAll(plans, 0o755)
}

// WritePlanFile writes plan p (indented JSON) as DATA/plans/NAME-SHA.json, named by its name
// and the first 12 digits of its SHA-256, and returns the file's path.
func WritePlanFile(dataDir, name, sum string, p any) (string, error) {
	plans, err := PlansDir(dataDir)
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

// samplerHook finds the samplers of a plan's telemetry block once per run (docs/telemetry.md):
// where cfg says (nil: this machine's; tests give fake trees and a fake NVML), at the plan's
// interval, with its gates.
func samplerHook(ctx context.Context, nb *store.Notebook, tp *energy.Plan, cfg *live.Config) (*energyrun.Hook, func() error) {
	c := live.Config{}
	if cfg != nil {
		c = *cfg
	}
	c.Interval = tp.Interval()
	return energyrun.New(ctx, nb, c, tp.Gates)
}
