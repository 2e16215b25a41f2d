package study

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/vocab"
)

// Recorder is the lab notebook as the study engine needs it. store.StudyRecorder implements it
// over the SQLite notebook; tests use fakes. Each write is one durable step, so a process that
// dies loses at most the leg it was running (the notebook marks that leg interrupted when it is
// next opened, and Run starts it again).
type Recorder interface {
	RecordReader
	RecordWriter
}

// RecordWriter is the notebook as the engine and the registration write it (and the one
// lookup registration makes: the study a plan already registered).
type RecordWriter interface {
	// Register creates a throughput study, freezes its plan and registers every prediction, as
	// one journaled step, and returns the study's id; or, when a study is registered with this
	// plan SHA-256 already (the plan's identity), that study's id and existing (nothing
	// written). The lookup and the insert are one transaction: two registrations of a plan at
	// once make one study.
	Register(ctx context.Context, s NewStudy) (studyID int64, existing bool, err error)
	// Lease takes the study's run lease (one run per study at a time, decided by the
	// notebook); release gives it back. While another live process holds it: an error that
	// names the holder.
	Lease(ctx context.Context, studyID int64) (release func(), err error)

	SetStatus(ctx context.Context, studyID int64, status string) error
	// Note journals an engine entry (kinds start with "study.", see the Note* constants).
	Note(ctx context.Context, studyID int64, kind string, payload any) error
	// Environment records the machine and the build a run uses.
	Environment(ctx context.Context, env Environment) (machineID, buildID int64, err error)
	// Model records a model file with its computed and expected SHA-256.
	Model(ctx context.Context, m ModelRecord) (artefactID int64, err error)

	StartLeg(ctx context.Context, l LegStart) (legID int64, rows RowSink, err error)
	// FinishLeg freezes a leg with its outcome, transcript and the status of every row.
	FinishLeg(ctx context.Context, legID int64, end LegEnd) error
	RecordGate(ctx context.Context, g GateRecord) error

	RecordVerdict(ctx context.Context, studyID int64, v Verdict) error
	RecordHumanVerdict(ctx context.Context, studyID int64, h HumanVerdict) error
	AddAmendment(ctx context.Context, studyID int64, a AmendmentRecord) error
	AddDeviation(ctx context.Context, studyID int64, d DeviationRecord) error
	AddFinding(ctx context.Context, studyID int64, f FindingRecord) (label string, err error)
}

// RecordReader is the part of the notebook that reading a study needs (Show, CompareStudies,
// and a receipt bundle's read-only notebook): nothing is written through it.
type RecordReader interface {
	// Study reads a registered study with its amendments, deviations, findings, latest verdicts
	// and the engine's notes.
	Study(ctx context.Context, studyID int64) (StoredStudy, error)
	// Legs lists the study's legs in the order they started.
	Legs(ctx context.Context, studyID int64) ([]StoredLeg, error)
	// Rows lists every llama-bench row of the study's legs with its status.
	Rows(ctx context.Context, studyID int64) ([]StoredRow, error)
}

// RowSink takes a running leg's rows, in order: the first row added is seq 0.
type RowSink interface {
	AddBench(rows ...benchfmt.Result) error
}

// Study statuses (the notebook's).
const (
	StatusRegistered = "registered"
	StatusRunning    = "running"
	StatusComplete   = "complete"
	StatusHalted     = "halted"
	// StatusIncomplete: the run is over but some plan legs have no results (listed in the
	// study.incomplete note); the next run retries those below the plan's retry limit.
	StatusIncomplete = "incomplete"
)

// Leg states (the notebook's).
const (
	LegRunning     = "running"
	LegFinished    = "finished"
	LegInterrupted = "interrupted"
)

// Leg roles: a plan leg, a canary run after a crash, the canary's baseline run.
const (
	RoleLeg            = "leg"
	RoleCanary         = "canary"
	RoleCanaryBaseline = "canary_baseline"
)

// Journal kinds of the engine's own notes.
const (
	NotePlanSource = "study.plan_source" // {"plan_dir","plan_file"}
	NoteBandwidth  = "study.bandwidth"   // {"gbs","copy_gbs","triad_gbs",…}
	NoteHalted     = "study.halted"      // {"reason","leg","class"}
	NoteRun        = "study.run"         // {"resumed_at","legs_done","legs_total"}
	NoteIncomplete = "study.incomplete"  // {"legs":[{"leg","class","reason","attempts","failed","max_attempts","final"}]}
	NoteAdaptive   = "study.adaptive"    // {"rule","met","legs":[{"leg","chunks","reps","met","cells"}],"order"}
	// NoteFleet makes a study one host's member of a fleet run (app/fleet writes it, as its
	// NoteKind): {"fleet","host","hosts","base_plan_sha256"[,"bandwidth_from"]}.
	NoteFleet = "study.fleet"
	// NoteHost is a study whose legs run on a bench host over ssh (app/fleet):
	// {"host","ssh","llama_dir","clock_skew_ns","clock_uncertainty_ns","clock_far_off","timestamps"}.
	NoteHost = "study.host"
)

// NewStudy is what Register freezes.
type NewStudy struct {
	Name        string
	Description string
	PlanSHA256  string
	PlanJSON    []byte // canonical JSON; its SHA-256 is PlanSHA256
	PlanDir     string // absolute: where relative model paths start
	PlanFile    string
	Predictions []Prediction
}

// StoredStudy is a registered study as the notebook holds it.
type StoredStudy struct {
	ID           int64
	Name         string
	Status       string
	PlanSHA256   string
	PlanJSON     []byte
	PlanDir      string
	RegisteredAt time.Time
	Amendments   []StoredAmendment
	Deviations   []StoredDeviation
	Findings     []StoredFinding
	Verdicts     map[string]StoredVerdicts // by prediction ID
	Notes        []StoredNote
}

// StoredAmendment is an accepted amendment.
type StoredAmendment struct {
	Target string          `json:"target"` // "prediction:P1"
	Reason string          `json:"reason"`
	Change json.RawMessage `json:"change"` // an AmendmentChange
	At     time.Time       `json:"at"`
}

// StoredDeviation is a recorded deviation.
type StoredDeviation struct {
	Description string          `json:"description"`
	LegID       int64           `json:"leg_id,omitempty"`
	Detail      json.RawMessage `json:"detail"`
	At          time.Time       `json:"at"`
}

// StoredFinding is a numbered finding.
type StoredFinding struct {
	Label       string    `json:"label"` // F1
	Text        string    `json:"text"`
	LegIDs      []int64   `json:"legs"`
	Predictions []string  `json:"predictions"`
	At          time.Time `json:"at"`
}

// StoredVerdicts are a prediction's latest computed and human verdicts.
type StoredVerdicts struct {
	Computed *StoredVerdict
	Human    *StoredVerdict
}

// StoredVerdict is one recorded verdict.
type StoredVerdict struct {
	Outcome   string          `json:"outcome"`
	Observed  *float64        `json:"observed"`
	Detail    json.RawMessage `json:"detail,omitempty"`
	Rationale string          `json:"rationale,omitempty"`
	Author    string          `json:"author,omitempty"`
	At        time.Time       `json:"at"`
}

// StoredNote is one of the engine's journal notes.
type StoredNote struct {
	Kind    string
	Payload json.RawMessage
	At      time.Time
}

// StoredLeg is a recorded leg.
type StoredLeg struct {
	ID         int64
	Label      string
	Kind       string // bench, canary
	PlanLeg    string // the plan leg it ran (for a canary: the leg it followed)
	Role       string // RoleLeg, RoleCanary, RoleCanaryBaseline
	Attempt    int
	State      string // running, finished, interrupted
	Class      string
	Reason     string
	ExitCode   *int
	Signal     string
	Argv       []string
	Conditions []string
	StartedAt  time.Time
	EndedAt    time.Time
	PeakRSS    int64
	// Rows by status: Results + Flagged + Discarded + Unmarked = all rows. Unmarked rows belong
	// to a leg that never finished (interrupted): never results.
	Rows, Results, Flagged, Discarded, Unmarked int
}

// StoredRow is one llama-bench row of a leg.
type StoredRow struct {
	LegID  int64
	Seq    int64
	Status string // vocab.RowResult, RowFlagged, RowDiscarded; "" unmarked
	Result benchfmt.Result
}

// Environment is the machine and the build of a run.
type Environment struct {
	Machine      vocab.Machine
	Devices      []string
	BandwidthGBs float64 // 0: not measured
	Bandwidth    any     // the probe's report, if measured
	BuildDir     string
	VersionLine  string
	BuildNumber  int64
	Commit       string
	Backends     []string
	Binaries     map[string]string // name -> SHA-256
}

// ModelRecord is a plan model as hashed for a run.
type ModelRecord struct {
	Path           string
	SHA256         string // computed
	ExpectedSHA256 string // the plan's
	Source         string
	Revision       string
	Name           string
	Architecture   string
	Quant          string
	NParams        int64
}

// LegStart describes a leg about to run.
type LegStart struct {
	StudyID    int64
	Label      string // unique in the study: the plan leg ID, "ID (attempt 2)", "canary after ID"
	Kind       string // bench, canary
	PlanLeg    string
	Role       string
	Attempt    int
	Argv       []string
	Conditions []string
	MachineID  int64
	BuildID    int64
	ArtefactID int64
	Detail     map[string]any
}

// LegEnd is how a leg ended.
type LegEnd struct {
	Class      string
	Reason     string
	ExitCode   *int
	Signal     string
	PeakRSS    int64
	Transcript []byte
	// RowStatus is the status of each row added, by seq.
	RowStatus []string
}

// GateRecord is one gate evaluation (the CV gate flagging a row).
type GateRecord struct {
	StudyID  int64
	LegID    int64
	Name     string
	Code     string
	Passed   bool
	Observed float64
	Limit    float64
	Detail   any
}

// HumanVerdict is a person's verdict on a prediction.
type HumanVerdict struct {
	Prediction string // ID, e.g. P1
	Outcome    string // PASS, FAIL, NOTE
	Rationale  string
	Author     string
}

// AmendmentRecord is an accepted amendment to write.
type AmendmentRecord struct {
	Target string // "prediction:P1"
	Reason string
	Change AmendmentChange
}

// DeviationRecord is a deviation to write.
type DeviationRecord struct {
	Description string
	LegID       int64
	Detail      any
}

// FindingRecord is a finding to write.
type FindingRecord struct {
	Text        string
	LegIDs      []int64
	Predictions []string
}

// RowRef names a stored row: "leg 12 seq 3" is seq 3 of notebook leg 12 (the order rows
// arrived, from 0). Every value the engine derives carries the references of its rows.
func RowRef(legID, seq int64) string { return fmt.Sprintf("leg %d seq %d", legID, seq) }

// ParseRowRef reads a RowRef back.
func ParseRowRef(ref string) (legID, seq int64, err error) {
	f := strings.Fields(ref)
	if len(f) != 4 || f[0] != "leg" || f[2] != "seq" {
		return 0, 0, fmt.Errorf("%q is not a row reference (want \"leg N seq S\")", ref)
	}
	if legID, err = strconv.ParseInt(f[1], 10, 64); err == nil {
		seq, err = strconv.ParseInt(f[3], 10, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not a row reference: %w", ref, err)
	}
	return legID, seq, nil
}
