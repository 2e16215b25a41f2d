package vocab

import (
	"encoding/json"
	"fmt"
	"time"

	"sparkbench/runner/benchfmt"
)

// EventType names what an Event carries.
type EventType string

// Event types. A process or leg emits line, sample, progress, malformed, flagged, then exactly
// one exit, then closes its channel. A queue adds its own types around its legs' events.
const (
	EventLine      EventType = "line"      // Line: one normalised output line
	EventSample    EventType = "sample"    // Sample: one parsed llama-bench result row
	EventProgress  EventType = "progress"  // Progress: tests done / total, ETA
	EventMalformed EventType = "malformed" // Malformed: a jsonl line that did not parse
	EventFlagged   EventType = "flagged"   // Flagged: a gate flagged a test (the leg halts unless Flagged.Counted)
	EventExit      EventType = "exit"      // Exit: how it ended, always last
	EventBatched   EventType = "batched"   // BatchedSample: one parsed llama-batched-bench row

	EventLegStarted    EventType = "leg_started"    // LegStatus: a queue leg (or canary) starts
	EventLegFinished   EventType = "leg_finished"   // LegStatus: with class and reason
	EventCanary        EventType = "canary"         // Canary: the verdict of a canary leg
	EventQueueProgress EventType = "queue_progress" // QueueStatus: legs done / total, ETA
	EventQueueHalted   EventType = "queue_halted"   // QueueStatus: why the queue stopped early
	EventQueueDone     EventType = "queue_done"     // QueueStatus: always the queue's last event
)

// Event is one thing that happened. Exactly the payload named by Type is set. It is a plain
// struct: encoding/json writes and reads it.
type Event struct {
	Type EventType `json:"type"`
	// T is the time since the start of the leg (leg events) or of the queue (queue events).
	T time.Duration `json:"t"`
	// Leg is the leg's ID: set on every event of a leg run by a queue, and on queue events about
	// a leg; empty for a lone leg.
	Leg string `json:"leg,omitempty"`

	Line      *Line          `json:"line,omitempty"`
	Sample    *Sample        `json:"sample,omitempty"`
	Progress  *Progress      `json:"progress,omitempty"`
	Malformed *Malformed     `json:"malformed,omitempty"`
	Flagged   *Flagged       `json:"flagged,omitempty"`
	Exit      *Exit          `json:"exit,omitempty"`
	LegStatus *LegStatus     `json:"leg_status,omitempty"`
	Canary    *Canary        `json:"canary,omitempty"`
	Queue     *QueueStatus   `json:"queue,omitempty"`
	Batched   *BatchedSample `json:"batched,omitempty"`
}

func (e Event) String() string {
	switch {
	case e.Line != nil:
		return fmt.Sprintf("%s %v #%d %q", e.Type, e.T, e.Line.N, e.Line.Text)
	case e.Sample != nil:
		return fmt.Sprintf("%s %v row %d %s %.2f t/s", e.Type, e.T, e.Sample.Row, e.Sample.Test, e.Sample.AvgTs)
	case e.Exit != nil:
		return fmt.Sprintf("%s %v %s %q", e.Type, e.T, e.Exit.Class, e.Exit.Reason)
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// Line is one output line, CRLF and ANSI removed (the transcript keeps the verbatim bytes).
type Line struct {
	N    int    `json:"n"` // 1-based line number in the process's output
	Text string `json:"text"`
	// Cut is how many bytes of an over-long line were not kept.
	Cut int64 `json:"cut,omitempty"`
	// Dropped is how many lines before this one were not delivered as events because the
	// consumer fell behind (they are still in the transcript, subject to its cap).
	Dropped int `json:"dropped,omitempty"`
}

// Sample is one llama-bench result row as it arrived. Whether it counts as a result is decided
// when the leg ends (Row.Status in the LegResult).
type Sample struct {
	Row   int           `json:"row"`  // 1-based result row of the leg
	Line  int           `json:"line"` // output line it came from
	Test  string        `json:"test"` // pp512, tg128, pp512+tg128, with " @ d4096"
	Kind  benchfmt.Kind `json:"kind"` // pp, tg or pg
	Depth int64         `json:"depth"`
	Model string        `json:"model"` // model_filename
	AvgTs float64       `json:"avg_ts"`
	// CV is stddev_ts / avg_ts over the repetitions (0 with a single repetition).
	CV     float64         `json:"cv"`
	Flag   string          `json:"flag,omitempty"` // set when a gate flagged this row
	Result benchfmt.Result `json:"result"`         // every field, as llama-bench printed it
}

// BatchedSample is one llama-batched-bench row as it arrived (a batched-bench leg's rows have
// no gate: each is one measurement, without repetitions).
type BatchedSample struct {
	Row    int                    `json:"row"`  // 1-based row of the leg
	Line   int                    `json:"line"` // output line it came from
	Test   string                 `json:"test"` // "pp512+tg32 B8"
	Result benchfmt.BatchedResult `json:"result"`
}

// UnmarshalJSON reads Result back through benchfmt's own jsonl parser.
func (s *Sample) UnmarshalJSON(b []byte) error {
	type plain Sample
	var aux struct {
		plain
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*s = Sample(aux.plain)
	if len(aux.Result) > 0 && string(aux.Result) != "null" {
		r, err := benchfmt.ParseJSONLLine(aux.Result)
		if err != nil {
			return fmt.Errorf("sample result: %w", err)
		}
		s.Result = r
	}
	return nil
}

// Progress says how far a leg is. Total comes from llama-bench's --progress lines (or is
// computed from the arguments); ETA from the observed time per finished test.
type Progress struct {
	Done    int           `json:"done"`            // result rows received
	Total   int           `json:"total"`           // tests in the leg; 0 when unknown
	Test    int           `json:"test"`            // 1-based test now running; 0 before the first
	Phase   string        `json:"phase,omitempty"` // llama-bench's words: "warmup prompt run", "generation run 2/5" …
	Elapsed time.Duration `json:"elapsed"`
	ETA     time.Duration `json:"eta"` // remaining time; -1 while unknown
}

// Malformed is a line that looked like a jsonl result but did not parse. The leg continues.
type Malformed struct {
	Line int    `json:"line"` // output line number
	Text string `json:"text"` // the line's start
	Err  string `json:"err"`
}

// Flagged says which test a gate flagged and why.
type Flagged struct {
	Row  int    `json:"row"`
	Test string `json:"test"`
	Gate string `json:"gate"` // "cv" or "device"
	// Code is the failure code: "cv_above_limit", "device:not_used", "device:other_backend".
	// Not written for the CV gate, whose code it always was.
	Code   string  `json:"-"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Reason string  `json:"reason"`
	// Counted: a CV gate whose plan counts a flagged process (gates.on_cv "count"): the row
	// stays a result and the leg goes on; the flag is recorded, never dropped.
	Counted bool `json:"counted,omitempty"`
}

// Exit is how a process or leg ended.
type Exit struct {
	Code     int           `json:"code"`             // exit status; -1 when killed by a signal or never started
	Signal   string        `json:"signal,omitempty"` // e.g. "SIGSEGV (segmentation fault)"
	Duration time.Duration `json:"duration"`
	Class    Class         `json:"class"`
	Reason   string        `json:"reason,omitempty"`
	// StoppedBy says why sparkbench ended the process, when it did.
	StoppedBy StopCause `json:"stopped_by,omitempty"`
	// Escalated is true when SIGTERM was not enough and the group got SIGKILL.
	Escalated bool  `json:"escalated,omitempty"`
	Rows      int   `json:"rows"`               // result rows received
	Expected  int   `json:"expected,omitempty"` // rows expected (0: unknown)
	Malformed int   `json:"malformed,omitempty"`
	PeakRSS   int64 `json:"peak_rss,omitempty"` // bytes, the leader's maximum resident set
}

// LegStatus is a queue's view of one leg.
type LegStatus struct {
	ID       string        `json:"id"`
	Index    int           `json:"index"` // position in the queue; -1 for a canary
	Role     string        `json:"role"`  // "leg" or "canary"
	Argv     []string      `json:"argv,omitempty"`
	Class    Class         `json:"class,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Rows     int           `json:"rows"`
	Results  int           `json:"results"` // rows that count as results
	Duration time.Duration `json:"duration,omitempty"`
}

// Canary is the verdict on a canary leg run after a crash-class leg.
type Canary struct {
	ID       string             `json:"id"`
	After    string             `json:"after"` // the leg that triggered it
	Pass     bool               `json:"pass"`
	Reason   string             `json:"reason"`
	Observed map[string]float64 `json:"observed,omitempty"` // test -> t/s
	Baseline map[string]float64 `json:"baseline,omitempty"`
}

// QueueStatus is the queue's progress or final word.
type QueueStatus struct {
	LegsDone  int           `json:"legs_done"`
	LegsTotal int           `json:"legs_total"`
	Elapsed   time.Duration `json:"elapsed"`
	ETA       time.Duration `json:"eta"` // -1 while unknown
	Halted    bool          `json:"halted,omitempty"`
	Class     Class         `json:"class,omitempty"` // for a halt: the class behind it
	Reason    string        `json:"reason,omitempty"`
}
