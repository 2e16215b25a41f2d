package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner/benchfmt"
)

// BatchedSpec is one llama-batched-bench invocation, run like a llama-bench leg (StartLeg):
// argv only, its own session and process group in a pty, bounded waits, crash classes. It
// is a plain struct.
type BatchedSpec struct {
	ID            string   `json:"id,omitempty"`
	Tool          string   `json:"tool"` // path of llama-batched-bench (llamacpp.BatchedBench)
	Args          []string `json:"args"` // its arguments; --output-format jsonl is added when missing
	Env           []string `json:"env,omitempty"`
	Dir           string   `json:"dir,omitempty"`
	Limits        Limits   `json:"limits"`
	NoFingerprint bool     `json:"no_fingerprint,omitempty"`
	TranscriptCap int      `json:"transcript_cap,omitempty"`
	MaxRows       int      `json:"max_rows,omitempty"`
	Cols          uint16   `json:"cols,omitempty"`
	Rows          uint16   `json:"rows,omitempty"`
}

// Argv is the exact command line: the tool, the arguments, and --output-format jsonl when no
// --output-format was given.
func (s BatchedSpec) Argv() []string {
	out := append([]string{s.Tool}, s.Args...)
	for _, a := range s.Args {
		if a == "--output-format" {
			return out
		}
	}
	return append(out, "--output-format", "jsonl")
}

// ValidateBatchedArgs refuses arguments the runner cannot read: an --output-format other than
// jsonl (the Markdown table is for people; the jsonl rows carry every digit and the settings)
// and --log-jsonl (the tool's log as JSON would mix with the rows).
func ValidateBatchedArgs(args []string) error {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--output-format":
			if i+1 >= len(args) {
				return &BenchArgError{"--output-format needs a value"}
			}
			if args[i+1] != "jsonl" {
				return &BenchArgError{fmt.Sprintf("--output-format %s: sparkbench reads jsonl (it adds it itself); drop the flag", args[i+1])}
			}
			i++
		case "--log-jsonl":
			return &BenchArgError{"--log-jsonl is not allowed: the log would mix JSON lines with the result rows; sparkbench keeps the verbatim output in the transcript"}
		}
	}
	return nil
}

// llama-batched-bench's defaults for its three lists (common/common.h).
var (
	batchedDefaultPP = []int64{128, 256, 512}
	batchedDefaultTG = []int64{128, 256}
	batchedDefaultPL = []int64{1, 2, 4, 8, 16, 32}
)

// batchedPlan is what the arguments say the tool will measure.
type batchedPlan struct {
	pp, tg, pl []int64
	shared     bool
	ok         bool // every list parsed
}

func parseBatchedPlan(args []string) batchedPlan {
	p := batchedPlan{pp: batchedDefaultPP, tg: batchedDefaultTG, pl: batchedDefaultPL, ok: true}
	for i := 0; i < len(args); i++ {
		var dst *[]int64
		switch args[i] {
		case "-npp":
			dst = &p.pp
		case "-ntg":
			dst = &p.tg
		case "-npl":
			dst = &p.pl
		case "-pps":
			p.shared = true
			continue
		default:
			continue
		}
		if i+1 >= len(args) {
			p.ok = false
			return p
		}
		i++
		var vals []int64
		for _, f := range strings.Split(args[i], ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				p.ok = false
				return p
			}
			vals = append(vals, v)
		}
		*dst = vals
	}
	return p
}

// expected counts the rows the tool prints: every (PP, TG, B) whose KV need fits n_kv_max
// (the tool skips the others without a word); n_kv_max <= 0 means unknown (every one counts).
func (p batchedPlan) expected(nKVMax int64) int {
	if !p.ok {
		return 0
	}
	n := 0
	for _, pp := range p.pp {
		for _, tg := range p.tg {
			for _, pl := range p.pl {
				need := pl * (pp + tg)
				if p.shared {
					need = pp + pl*tg
				}
				if nKVMax <= 0 || need <= nKVMax {
					n++
				}
			}
		}
	}
	return n
}

// BatchedLeg is one running llama-batched-bench: a producer of events (line, batched, progress,
// malformed … exit). Read Events until it is closed; Stop is idempotent.
type BatchedLeg struct {
	procLeg
	h *batchedHandler
}

// BatchedRow is a batched-bench row with its final status (result when the leg ended ok,
// discarded otherwise: a failed run's rows are kept for the record, never counted).
type BatchedRow struct {
	Sample BatchedSample `json:"sample"`
	Status RowStatus     `json:"status"`
}

// BatchedLegResult is everything a batched-bench leg leaves behind.
type BatchedLegResult struct {
	ToolRecord
	Rows         []BatchedRow `json:"rows"`
	Malformed    []Malformed  `json:"malformed,omitempty"`
	Fingerprint  *Fingerprint `json:"fingerprint,omitempty"`
	Transcript   *Transcript  `json:"transcript"`
	DroppedLines int          `json:"dropped_lines,omitempty"`
}

// Results are the rows that count (all of them when the leg ended ok, else none).
func (r *BatchedLegResult) Results() []benchfmt.BatchedResult {
	var out []benchfmt.BatchedResult
	for _, row := range r.Rows {
		if row.Status == RowResult {
			out = append(out, row.Sample.Result)
		}
	}
	return out
}

// StartBatched fingerprints the build and machine (unless NoFingerprint), starts
// llama-batched-bench in a pty and returns. Refused arguments and start failures arrive as the
// Exit event (bad_args, failed). Cancelling ctx is the same as Stop. The class is ok only when
// the tool exited 0 and printed every row its arguments ask for (those whose KV need fits
// n_kv_max, which the rows themselves report).
func StartBatched(ctx context.Context, spec BatchedSpec, opts ...LegOption) *BatchedLeg {
	o := legOptions{fp: defaultFingerprinter}
	for _, f := range opts {
		f(&o)
	}
	h := &batchedHandler{spec: spec, legTally: legTally{fper: o.fp}, maxRows: spec.MaxRows, plan: parseBatchedPlan(spec.Args)}
	if h.maxRows <= 0 {
		h.maxRows = DefaultMaxRows
	}
	var refuse error
	if spec.Tool == "" {
		refuse = &BenchArgError{"no llama-batched-bench binary given"}
	} else if err := ValidateBatchedArgs(spec.Args); err != nil {
		refuse = err
	}
	if refuse == nil && !spec.NoFingerprint {
		h.fp = o.fp.Take(ctx, spec.Tool, spec.Env)
	}
	ps := ProcSpec{Argv: spec.Argv(), Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows,
		TranscriptCap: spec.TranscriptCap, Limits: spec.Limits}
	l := &BatchedLeg{h: h}
	l.proc = startProc(ctx, ps, h, refuse)
	return l
}

// Result is the leg's record; it waits for Done.
func (l *BatchedLeg) Result() *BatchedLegResult {
	<-l.proc.Done()
	return l.h.result
}

// batchedHandler parses a batched-bench leg's lines; onLine runs on the reader goroutine, the
// rest after it has finished.
type batchedHandler struct {
	spec BatchedSpec
	legTally
	maxRows int
	plan    batchedPlan
	nKVMax  int64

	rows     []BatchedRow
	lastRowT time.Duration

	result *BatchedLegResult
}

func (h *batchedHandler) onLine(p *Proc, ln Line, t time.Duration) {
	p.emit(Event{Type: EventLine, T: t, Line: &ln})
	trim := strings.TrimSpace(ln.Text)
	if !strings.HasPrefix(trim, "{") {
		return
	}
	r, err := benchfmt.ParseBatchedJSONLLine([]byte(trim))
	if err != nil {
		h.badLine(p, ln.N, trim, err, t)
		return
	}
	r.Line = ln.N
	if r.NKVMax != nil {
		h.nKVMax = *r.NKVMax
	}
	h.lastRowT = t
	if len(h.rows) >= h.maxRows {
		h.extraRows++
		return
	}
	s := BatchedSample{Row: len(h.rows) + 1, Line: ln.N, Test: r.Label(), Result: r}
	h.rows = append(h.rows, BatchedRow{Sample: s})
	p.emit(Event{Type: EventBatched, T: t, Batched: &s})
	p.emit(Event{Type: EventProgress, T: t, Progress: h.progress(t)})
}

func (h *batchedHandler) done() int { return len(h.rows) + h.extraRows }

func (h *batchedHandler) expected() int { return h.plan.expected(h.nKVMax) }

func (h *batchedHandler) progress(t time.Duration) *Progress {
	pr := &Progress{Done: h.done(), Total: h.expected(), Elapsed: t, ETA: -1}
	if pr.Total == 0 || pr.Done < pr.Total {
		pr.Test = pr.Done + 1
	}
	return pr
}

func (h *batchedHandler) classifyInput(p *Proc, in *ClassifyInput) {
	h.classify(in, h.done(), h.expected())
}

func (h *batchedHandler) finish(p *Proc, x *Exit) {
	h.exit(x, h.done(), h.expected())
	for i := range h.rows {
		if x.Class == ClassOK {
			h.rows[i].Status = RowResult
		} else {
			h.rows[i].Status = RowDiscarded
		}
	}
	h.result = &BatchedLegResult{ToolRecord: p.toolRecord(h.spec.ID, h.spec.Env), Rows: h.rows, Malformed: h.malformed,
		Fingerprint: h.fp, Transcript: p.transcript, DroppedLines: p.DroppedLines()}
	h.result.Exit = *x
	if h.result.Rows == nil {
		h.result.Rows = []BatchedRow{}
	}
}
