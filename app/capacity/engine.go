package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
)

// Capacity and concurrency studies in the notebook (docs/capacity.md, "In the notebook").
//
// The engine registers a plan (idempotently, by its SHA-256), runs it through StartRun,
// records every server lifetime as a notebook leg of kind "server" with its request records
// and server log, journals where the assembled study.json is and its SHA-256
// (NoteAssembled), journals each prediction's verdict once and sets the study's status. It
// talks to the notebook through Recorder (store.CapacityRecorder implements it), so this
// package never imports the store.

// Journal kinds the engine writes under the study (besides the store's own).
const (
	NoteAssembled = "capacity.assembled" // {"run_dir","study_file","study_sha256","plan_sha256","selected":[…]}
	NoteRun       = "capacity.run"       // {"run_dir","plan_file","started_at"[,"not_resumed"]}
	// NoteNetwork is a server lifetime on a bench host: {"lifetime","network":RunNetwork}.
	NoteNetwork = "capacity.network"
	// NoteRPCServer is one of the plan's ggml-rpc-servers started, refused or stopped
	// (study.RPCServerNote, as a throughput study's study.rpc_server).
	NoteRPCServer = "capacity.rpc_server"
	// NoteRPCSplit is an RPC candidate's lifetime's split among the servers, as its log says
	// ({"lifetime", "devices", "local_layers", "layers_logged"}).
	NoteRPCSplit = "capacity.rpc_split"
	// NoteResumed: a run resumed the run folder of the study's last run (RunSpec.Resume):
	// {"run_dir","plan_file","resumed_at","lifetimes_skipped","lifetimes_total","guards_skipped",
	// "rerun":[folders run again: a guard's emptied, a lifetime's kept with its earlier
	// attempt's files],"previous":how the run before ended}.
	NoteResumed = "capacity.resumed"
	// NoteIncomplete: the run ended with server lifetimes without results (IncompleteError):
	// {"run_dir","lifetimes":[{"key","class","reason"}],"total","study_file"}; no assembled
	// result and no verdict is journaled, and the next run measures those lifetimes again.
	NoteIncomplete = "capacity.incomplete"
	NoteHalted     = study.NoteHalted     // {"reason","run_dir"}
	NotePlanSource = study.NotePlanSource // {"plan_dir","plan_file"}
)

// Study statuses the engine sets (the store's names).
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusHalted   = "halted"
	// StatusIncomplete: the run is over but server lifetimes ended without results.
	StatusIncomplete = "incomplete"
)

// NewStudy is a study to register: the canonical plan, its SHA-256 and its predictions.
type NewStudy struct {
	Name, Kind, Description string
	PlanJSON                []byte // canonical JSON of the plan with defaults
	PlanSHA256              string
	PlanDir, PlanFile       string // absolute; model paths resolve against PlanDir
	Predictions             []Prediction
}

// StoredStudy is a registered capacity or concurrency study as the notebook holds it.
type StoredStudy struct {
	ID                int64
	Name, Kind        string
	Status            string
	PlanSHA256        string
	PlanJSON          []byte
	PlanDir, PlanFile string
	// Verdicts are the latest computed verdict per prediction key (absent: none journaled).
	Verdicts map[string]study.StoredVerdict
	// Notes are the study's journal entries of kinds "study.*" and "capacity.*", in order.
	Notes []study.StoredNote
}

// StoredLeg is one recorded server lifetime.
type StoredLeg struct {
	ID              int64     `json:"id"`
	Label           string    `json:"label"` // PASS/CANDIDATE/pP
	State           string    `json:"state"`
	Class           string    `json:"class"`
	Reason          string    `json:"reason,omitempty"`
	Argv            []string  `json:"argv"`
	PeakRSSBytes    int64     `json:"peak_rss_bytes"`
	RequestRows     int64     `json:"request_rows"`
	TranscriptBytes int64     `json:"transcript_bytes"`
	StartedAt       time.Time `json:"started_at"`
	EndedAt         time.Time `json:"ended_at"`
}

// LegStart is a server lifetime about to be recorded.
type LegStart struct {
	StudyID int64
	Label   string // the lifetime key, PASS/CANDIDATE/pP
	Argv    []string
	Detail  map[string]any // pass, candidate, slots, clients, port, pid, run_dir, …
}

// LegRequests are a lifetime's request records (its requests.jsonl), with what turns their
// per-pass clock into wall-clock times: Origin is the pass's clock origin (approximated by the
// moment its first lifetime started, within microseconds).
type LegRequests struct {
	Key      LifetimeKey
	Arm      string
	Origin   time.Time
	NPredict int
	Records  []RequestRecord
}

// LegEnd is how a lifetime ended.
type LegEnd struct {
	Class, Reason string
	PeakRSSBytes  int64
	Transcript    []byte // the server log
}

// LegSink takes a running leg's rows.
type LegSink interface {
	AddRequests(LegRequests) error
}

// Recorder is the notebook as the capacity engine sees it.
type Recorder interface {
	// Register creates the study, freezes the plan, journals its source and registers every
	// prediction, in one transaction; or, when a capacity or concurrency study is registered
	// with this plan SHA-256 already, returns that study's id and existing (nothing written).
	// The lookup is inside the transaction: two registrations at once make one study.
	Register(ctx context.Context, s NewStudy) (id int64, existing bool, err error)
	// Lease takes the study's run lease (one run per study at a time, decided by the
	// notebook); release gives it back. While another live process holds it: an error that
	// wraps ErrBusy and names the holder.
	Lease(ctx context.Context, id int64) (release func(), err error)
	Study(ctx context.Context, id int64) (StoredStudy, error)
	SetStatus(ctx context.Context, id int64, status string) error
	Note(ctx context.Context, id int64, kind string, payload any) error
	StartLeg(ctx context.Context, l LegStart) (int64, LegSink, error)
	FinishLeg(ctx context.Context, legID int64, end LegEnd) error
	RecordVerdict(ctx context.Context, id int64, v study.Verdict) error
	Legs(ctx context.Context, id int64) ([]StoredLeg, error)
}

// Registration is what Register did.
type Registration struct {
	StudyID    int64           `json:"study_id"`
	Name       string          `json:"name"`
	Kind       string          `json:"kind"`
	PlanSHA256 string          `json:"plan_sha256"`
	Existing   bool            `json:"existing"` // the plan was already registered
	Warnings   []study.Problem `json:"warnings,omitempty"`
}

// Register validates the plan (model and prompt-plan files hashed with hash, which may be
// nil to skip) and registers it, or finds the study already registered with the same plan
// SHA-256. A refused plan is a *study.RefusedError.
func Register(ctx context.Context, rec Recorder, p *Plan, planFile string, hash study.HashFunc) (Registration, error) {
	p, err := ClonePlan(p)
	if err != nil {
		return Registration{}, err
	}
	p.Defaults()
	abs, err := filepath.Abs(planFile)
	if err != nil {
		return Registration{}, err
	}
	planDir := filepath.Dir(abs)
	probs := Validate(p, ValidateOptions{PlanDir: planDir, Hash: hash})
	if errs := study.Errors(probs); len(errs) > 0 {
		return Registration{}, &study.RefusedError{Problems: probs}
	}
	sum, data, err := p.SHA256()
	if err != nil {
		return Registration{}, err
	}
	reg := Registration{Name: p.Name, Kind: planKind(p), PlanSHA256: sum}
	for _, pr := range probs {
		if pr.Severity != study.SevError {
			reg.Warnings = append(reg.Warnings, pr)
		}
	}
	id, existing, err := rec.Register(ctx, NewStudy{Name: p.Name, Kind: reg.Kind, Description: p.Description, PlanJSON: data,
		PlanSHA256: sum, PlanDir: planDir, PlanFile: abs, Predictions: p.Predictions})
	if err != nil {
		return reg, err
	}
	st, err := rec.Study(ctx, id)
	if err != nil {
		return reg, err
	}
	reg.StudyID, reg.Name, reg.Existing = id, st.Name, existing
	return reg, nil
}

func planKind(p *Plan) string {
	if p.Concurrency() {
		return kinds.Concurrency
	}
	return kinds.Capacity
}

// ErrAlreadyAssembled refuses to run a study whose assembled result is already journaled.
var ErrAlreadyAssembled = errors.New("the study is complete: its assembled study.json is journaled")

// ErrBusy refuses to run a study one of whose legs is running: another process runs it (the
// notebook marks the legs of a dead process interrupted when it opens).
var ErrBusy = errors.New("the study is being run by another process")

// AssembledNote is the payload of the NoteAssembled journal entry.
type AssembledNote struct {
	RunDir      string          `json:"run_dir"`    // absolute
	StudyFile   string          `json:"study_file"` // relative to RunDir
	StudySHA256 string          `json:"study_sha256"`
	PlanSHA256  string          `json:"plan_sha256"`
	Selected    []SelectedPoint `json:"selected"`
}

// SelectedPoint is one candidate's selected operating point (nil fields: none selected).
type SelectedPoint struct {
	Candidate      string   `json:"candidate"`
	Slots          *int     `json:"slots"`
	Clients        *int     `json:"clients"`
	GenerationRate *float64 `json:"generation_rate"`
	Gain           *float64 `json:"gain_vs_base"`
	BaseSlots      int      `json:"base_slots"`
	BaseClients    int      `json:"base_clients"`
	Note           string   `json:"note,omitempty"`
}

// SelectedPoints are r's selected operating points as the NoteAssembled entry journals them
// (receipts hold a bundle's re-assembled result to the journaled entry).
func SelectedPoints(r *Result) []SelectedPoint { return selectedPoints(r) }

func selectedPoints(r *Result) []SelectedPoint {
	out := []SelectedPoint{}
	for _, c := range r.Candidates {
		sp := SelectedPoint{Candidate: c.ID, BaseSlots: c.Base.Slots, BaseClients: c.Base.Clients, Note: c.SelectionNote}
		if s := c.Selected; s != nil {
			slots, clients, rate := s.Slots, s.Clients, s.GenerationRate
			sp.Slots, sp.Clients, sp.GenerationRate, sp.Gain = &slots, &clients, &rate, s.Gain
		}
		out = append(out, sp)
	}
	return out
}

func LatestNote(notes []study.StoredNote, kind string) (study.StoredNote, bool) {
	for i := len(notes) - 1; i >= 0; i-- {
		if notes[i].Kind == kind {
			return notes[i], true
		}
	}
	return study.StoredNote{}, false
}

// AssembledStudy is a study's assembled result as the notebook vouches for it.
type AssembledStudy struct {
	Note AssembledNote `json:"note"`
	// Path is the study.json read; FileSHA256 what it hashes to now ("" when unreadable).
	Path       string `json:"path"`
	FileSHA256 string `json:"file_sha256"`
	// Problem says why the file is not trusted (missing, SHA-256 mismatch, unreadable);
	// Result is nil then.
	Problem string  `json:"problem,omitempty"`
	Result  *Result `json:"-"`
}

// ErrNotAssembled: the study has no journaled assembled result (not run, or halted).
var ErrNotAssembled = errors.New("no assembled result is journaled for this study (run it: `sparkbench capacity run ID`)")

// LoadAssembled reads the assembled capacity.Result of study id: the run folder and
// SHA-256 journaled as NoteAssembled, and the study.json there, which must hash to that
// SHA-256. A file that is missing or differs is reported in AssembledStudy.Problem (Result nil),
// never trusted; ErrNotAssembled when nothing was journaled. For plots (envelope, slots,
// latency), receipts and the GUI:
//
//	a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, id)
//	if err == nil && a.Result != nil { … a.Result.Candidates … }
func LoadAssembled(ctx context.Context, rec Recorder, id int64) (*AssembledStudy, error) {
	st, err := rec.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	return loadAssembled(st)
}

func loadAssembled(st StoredStudy) (*AssembledStudy, error) {
	n, ok := LatestNote(st.Notes, NoteAssembled)
	if !ok {
		return nil, ErrNotAssembled
	}
	a := &AssembledStudy{}
	if err := json.Unmarshal(n.Payload, &a.Note); err != nil {
		return nil, fmt.Errorf("journal %s: %w", NoteAssembled, err)
	}
	file := a.Note.StudyFile
	if file == "" {
		file = RunStudyFile
	}
	a.Path = filepath.Join(a.Note.RunDir, file)
	data, err := os.ReadFile(a.Path)
	if err != nil {
		a.Problem = fmt.Sprintf("study.json cannot be read: %v", err)
		return a, nil
	}
	a.FileSHA256 = canon.SHA256Hex(data)
	if a.FileSHA256 != a.Note.StudySHA256 {
		a.Problem = fmt.Sprintf("%s hashes to %s, not the journaled %s: it changed after the run; not trusted", a.Path, a.FileSHA256, a.Note.StudySHA256)
		return a, nil
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		a.Problem = fmt.Sprintf("%s: %v", a.Path, err)
		return a, nil
	}
	a.Result = &res
	return a, nil
}
