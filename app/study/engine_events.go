package study

import (
	"time"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/vocab"
)

// EventKind names what an engine Event reports.
type EventKind string

// Engine events, in the order a run emits them: run_started, then per plan leg either
// leg_skipped (it finished in an earlier run) or leg_started, line…, sample…, leg_progress…,
// flagged, leg_finished (and canary after a crash-class leg), verdict for every prediction
// that left PENDING, progress; last halted (the queue or the user stopped the study) or done.
const (
	EventRunStarted  EventKind = "run_started"
	EventBandwidth   EventKind = "bandwidth"    // BandwidthGBs: measured (or read back)
	EventLegSkipped  EventKind = "leg_skipped"  // finished before: resuming
	EventLegStarted  EventKind = "leg_started"  // Leg, LegID, Attempt, Argv
	EventSample      EventKind = "sample"       // Sample: a row as it arrived (its status comes at leg_finished)
	EventLegProgress EventKind = "leg_progress" // LegProgress: tests done in the running leg, its ETA
	EventLine        EventKind = "line"         // Line: one line of the running leg's output (its transcript, normalised)
	EventFlagged     EventKind = "flagged"      // Flagged: a CV gate flagged a row; the leg halts (unless Flagged.Counted)
	EventLegFinished EventKind = "leg_finished" // Outcome
	EventCanary      EventKind = "canary"       // Canary: the verdict of a canary run after a crash
	EventVerdict     EventKind = "verdict"      // Verdict: journaled once, when it leaves PENDING
	EventProgress    EventKind = "progress"     // Progress after each leg
	EventHalted      EventKind = "halted"       // Reason: the study stopped early
	EventDone        EventKind = "done"         // every plan leg has finished
	// EventTelemetry is one sampler reading during a sampled leg (LegID, Telemetry), sent
	// only when the run asks for live telemetry (the window): never in the CLI's events.
	EventTelemetry EventKind = "telemetry"
)

// Event is one thing the engine did. It is a plain struct (encoding/json reads and writes it);
// Progress is set on every event.
type Event struct {
	Kind    EventKind `json:"kind"`
	At      time.Time `json:"at"`
	StudyID int64     `json:"study"`
	// Leg is the plan leg ID (for a canary run: the canary leg's label).
	Leg     string   `json:"leg,omitempty"`
	LegID   int64    `json:"leg_id,omitempty"` // the notebook's leg
	Role    string   `json:"role,omitempty"`
	Attempt int      `json:"attempt,omitempty"`
	Argv    []string `json:"argv,omitempty"`

	Sample       *vocab.Sample   `json:"sample,omitempty"`
	LegProgress  *vocab.Progress `json:"leg_progress,omitempty"`
	Line         *vocab.Line     `json:"line,omitempty"`
	Flagged      *vocab.Flagged  `json:"flagged,omitempty"`
	Outcome      *LegOutcome     `json:"outcome,omitempty"`
	Canary       *vocab.Canary   `json:"canary,omitempty"`
	Verdict      *Verdict        `json:"verdict,omitempty"`
	BandwidthGBs float64         `json:"bandwidth_gbs,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	// Telemetry is an EventTelemetry's reading; its T is on the leg's clock.
	Telemetry *telemetry.Sample `json:"telemetry,omitempty"`
	// Chunk is an adaptive leg's chunk, on its leg_started: where it stands in its round and
	// its leg (Progress counts plan legs, which all stay open until the stopping rule stops).
	Chunk *ChunkProgress `json:"chunk,omitempty"`

	Progress Progress `json:"progress"`
}

// ChunkProgress is one chunk of an adaptive plan's leg as it starts (docs/adaptive.md).
type ChunkProgress struct {
	Round       int `json:"round"`        // 1-based
	InRound     int `json:"in_round"`     // its place among the round's chunks, 1-based
	RoundChunks int `json:"round_chunks"` // chunks the round runs (one per leg still running)
	Chunk       int `json:"chunk"`        // the leg's chunk, 1-based
	RepsBefore  int `json:"reps_before"`  // the leg's repetitions in its earlier chunks
	Reps        int `json:"reps"`         // this chunk's repetitions
	MaxReps     int `json:"max_reps"`
}

// LegOutcome is how a leg ended, as leg_finished reports it.
type LegOutcome struct {
	Class     string        `json:"class"`
	Reason    string        `json:"reason,omitempty"`
	Rows      int           `json:"rows"`
	Results   int           `json:"results"`
	Flagged   int           `json:"flagged"`
	Discarded int           `json:"discarded"`
	Expected  int           `json:"expected"`
	Duration  time.Duration `json:"duration"`
}

// Progress is where a study run stands.
type Progress struct {
	LegsDone  int    `json:"legs_done"` // plan legs finished, this run and earlier ones
	LegsTotal int    `json:"legs_total"`
	Current   string `json:"current,omitempty"` // the plan leg running now
	// LegTest and LegTests are the running leg's tests done and total (0: unknown).
	LegTest  int           `json:"leg_test"`
	LegTests int           `json:"leg_tests"`
	Elapsed  time.Duration `json:"elapsed"`
	ETA      time.Duration `json:"eta"` // the study's remaining time; -1 while unknown
}

// RunSummary is what one run of the engine (app/study/studyrun) did.
type RunSummary struct {
	StudyID     int64     `json:"study"`
	Status      string    `json:"status"`
	LegsTotal   int       `json:"legs_total"`
	LegsDone    int       `json:"legs_done"`
	LegsRun     int       `json:"legs_run"`     // run by this call
	LegsSkipped int       `json:"legs_skipped"` // finished before (resumed)
	Verdicts    []Verdict `json:"verdicts"`     // journaled by this call
	Halted      bool      `json:"halted"`
	Reason      string    `json:"reason,omitempty"`
	// Incomplete lists the plan legs that still have no results when the run ends (status
	// incomplete): each with its attempts and whether a later run retries it.
	Incomplete []LegStatus `json:"incomplete,omitempty"`
	Elapsed    time.Duration
}
