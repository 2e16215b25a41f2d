package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/vocab"
)

// Defaults for LegSpec fields left zero.
const (
	DefaultMaxRows      = 10000 // result rows kept per leg
	DefaultMaxMalformed = 100   // malformed lines reported one by one
)

// LegSpec is one llama-bench invocation. It is a plain struct (JSON in plans and the notebook).
type LegSpec struct {
	ID    string   `json:"id,omitempty"`
	Bench string   `json:"bench"` // path of llama-bench
	Args  []string `json:"args"`  // llama-bench arguments, e.g. BenchConfig.Args(); never a shell string
	// Env holds KEY=VALUE extras for the child (after NO_COLOR=1 and TERM=dumb).
	Env    []string `json:"env,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	Limits Limits   `json:"limits"`
	CVGate CVGate   `json:"cv_gate"`
	// DeviceGate, when set, flags the first row that did not run where the leg asked (device
	// evidence, DeviceGate.Check) and halts the leg, as the CV gate does.
	DeviceGate *DeviceGate `json:"device_gate,omitempty"`
	// Progress adds --progress: llama-bench's own test total and phase lines. Off by default
	// because llama-bench prints them inside its timed region (see RunnerArgs); without them
	// the total comes from the arguments and the ETA from the rows' arrival times.
	Progress bool `json:"progress,omitempty"`
	// Wrapper is a launch wrapper's argv (e.g. taskset -c 0): the process started is Wrapper
	// then Argv(), argv only, no shell, in the same pty, session and process group. The
	// result keeps Argv() as the leg's command line and records the launch apart (Launch):
	// Wrapper[0] resolved on PATH, and the CPU affinity of llama-bench's own process.
	// Under WithVia it goes to the host as given. Empty: llama-bench is started itself.
	Wrapper       []string `json:"wrapper,omitempty"`
	NoFingerprint bool     `json:"no_fingerprint,omitempty"`
	TranscriptCap int      `json:"transcript_cap,omitempty"`
	MaxRows       int      `json:"max_rows,omitempty"`
	Cols          uint16   `json:"cols,omitempty"`
	Rows          uint16   `json:"rows,omitempty"`
}

// Argv is the exact command line the leg runs: the binary, the arguments, and -o jsonl (and
// --progress when asked for) where they were missing.
func (s LegSpec) Argv() []string {
	return append([]string{s.Bench}, RunnerArgs(s.Args, s.Progress)...)
}

// Row is a Sample with its final status.
type Row struct {
	Sample Sample    `json:"sample"`
	Status RowStatus `json:"status"`
}

// LegResult is everything a leg leaves behind: what ran, how it ended, every row (marked),
// the malformed lines, the fingerprint and the verbatim transcript.
type LegResult struct {
	ID           string       `json:"id,omitempty"`
	Argv         []string     `json:"argv"`
	Env          []string     `json:"env"` // the overrides given to the child
	Start        time.Time    `json:"start"`
	End          time.Time    `json:"end"`
	Exit         Exit         `json:"exit"`
	Rows         []Row        `json:"rows"`
	Malformed    []Malformed  `json:"malformed,omitempty"`
	Fingerprint  *Fingerprint `json:"fingerprint,omitempty"`
	Transcript   *Transcript  `json:"transcript"`
	DroppedLines int          `json:"dropped_lines,omitempty"` // Line events a slow consumer missed
	// Via is the local command line that ran Argv elsewhere (ssh to a bench host, WithVia);
	// absent for a local leg.
	Via []string `json:"via,omitempty"`
	// Launch is how a leg with a launch wrapper (LegSpec.Wrapper) was started and the
	// affinity in force for llama-bench; absent without one.
	Launch *Launch `json:"launch,omitempty"`
}

// Results are the rows that count as results.
func (r *LegResult) Results() []Sample {
	var out []Sample
	for _, row := range r.Rows {
		if row.Status == RowResult {
			out = append(out, row.Sample)
		}
	}
	return out
}

// Leg is one running llama-bench invocation: a producer of events (vegeta style). Read Events
// until it is closed; Stop is idempotent.
type Leg struct {
	procLeg
	spec LegSpec
	h    *benchHandler
}

// procLeg is what every leg kind does through its process: events, stop, done, pid.
type procLeg struct{ proc *Proc }

// Events is the leg's channel: line, sample (or batched row), progress, malformed, flagged …
// exit, then closed.
func (l *procLeg) Events() <-chan Event { return l.proc.Events() }

// Stop ends the leg (class stopped_by_user); see Proc.Stop.
func (l *procLeg) Stop(ctx context.Context) error { return l.proc.Stop(ctx) }

// Done is closed when the leg has ended and its result is ready.
func (l *procLeg) Done() <-chan struct{} { return l.proc.Done() }

// Pid is the tool's process (and group) ID; 0 if it never started.
func (l *procLeg) Pid() int { return l.proc.Pid() }

// LegOption configures StartLeg.
type LegOption func(*legOptions)

type legOptions struct {
	fp    *Fingerprinter
	via   func(argv, env []string) ([]string, error)
	viaFP *Fingerprint
}

// WithVia runs the leg elsewhere: wrap turns the leg's command line and environment extras into
// the local command that runs them there (runner/remote: ssh -tt to a bench host), which the
// pty driver runs, reads, times and classifies as it does a local one. fp is the host's
// fingerprint, recorded in place of a local one (nil: none); the result keeps the leg's own
// argv and the local command in Via.
func WithVia(wrap func(argv, env []string) ([]string, error), fp *Fingerprint) LegOption {
	return func(o *legOptions) { o.via, o.viaFP = wrap, fp }
}

// WithFingerprinter shares a Fingerprinter (and its cache) between legs.
func WithFingerprinter(f *Fingerprinter) LegOption { return func(o *legOptions) { o.fp = f } }

var defaultFingerprinter = &Fingerprinter{}

// StartLeg fingerprints the build and machine (unless NoFingerprint), starts llama-bench in a
// pty and returns. Refused arguments and start failures arrive as the Exit event (bad_args,
// failed). Cancelling ctx is the same as Stop.
func StartLeg(ctx context.Context, spec LegSpec, opts ...LegOption) *Leg {
	o := legOptions{fp: defaultFingerprinter}
	for _, f := range opts {
		f(&o)
	}
	h := &benchHandler{spec: spec, legTally: legTally{fper: o.fp}, gate: spec.CVGate, maxRows: spec.MaxRows}
	if h.maxRows <= 0 {
		h.maxRows = DefaultMaxRows
	}
	argv := spec.Argv()
	var refuse error
	if spec.Bench == "" {
		refuse = &BenchArgError{"no llama-bench binary given"}
	} else if err := ValidateBenchArgs(spec.Args); err != nil {
		refuse = err
	}
	if n, ok := ExpectedTests(argv[1:]); ok {
		h.expectedArgs = n
	}
	ps := ProcSpec{Argv: argv, Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows,
		TranscriptCap: spec.TranscriptCap, Limits: spec.Limits}
	if len(spec.Wrapper) > 0 {
		var werr error
		h.launch, werr = WrapLaunch(spec.Wrapper, argv, o.via == nil)
		h.argv, ps.Argv = argv, h.launch.LaunchedAs
		if o.via == nil {
			ps.Target = spec.Bench
		}
		if refuse == nil {
			refuse = werr
		}
	}
	switch {
	case o.via != nil:
		h.fper, h.argv = nil, argv
		if refuse == nil {
			ps.Argv, refuse = o.via(ps.Argv, spec.Env)
			ps.Env, ps.Dir, h.via = nil, "", ps.Argv
		}
		if refuse == nil && !spec.NoFingerprint && o.viaFP != nil {
			fp := *o.viaFP
			fp.TakenAt = time.Now()
			h.fp = &fp
		}
	case refuse == nil && !spec.NoFingerprint:
		h.fp = o.fp.Take(ctx, spec.Bench, spec.Env)
	}
	l := &Leg{spec: spec, h: h}
	l.proc = startProc(ctx, ps, h, refuse)
	return l
}

// Result is the leg's record; it waits for Done.
func (l *Leg) Result() *LegResult {
	<-l.proc.Done()
	return l.h.result
}

// progressRE reads llama-bench --progress lines: "llama-bench: benchmark 2/4: generation run 1/3".
var progressRE = regexp.MustCompile(`^llama-bench: benchmark (\d+)/(\d+): (.*)$`)

// benchHandler parses a llama-bench leg's lines. onLine runs on the reader goroutine; the rest
// after it has finished.
type benchHandler struct {
	spec LegSpec
	legTally
	gate    CVGate
	maxRows int
	parser  benchfmt.Parser

	rows    []Row
	flagRow int      // row the gate flagged (0: none)
	counted []string // the flags a counting CV gate kept (their reasons), for the leg's end

	argv, via []string // WithVia or a wrapper: the leg's own command line; the local one that ran it
	launch    *Launch  // with a wrapper

	expectedArgs int
	total        int // from --progress
	test         int
	phase        string
	testStart    time.Duration
	lastRowT     time.Duration
	sumDur       time.Duration
	nDur         int

	result *LegResult
}

func (h *benchHandler) onLine(p *Proc, ln Line, t time.Duration) {
	p.emit(Event{Type: EventLine, T: t, Line: &ln})
	trim := strings.TrimSpace(ln.Text)
	if strings.HasPrefix(trim, "{") {
		h.row(p, ln, trim, t)
		return
	}
	if m := progressRE.FindStringSubmatch(trim); m != nil {
		test, _ := strconv.Atoi(m[1])
		total, _ := strconv.Atoi(m[2])
		if total > 0 {
			h.total = total
		}
		if test != h.test || m[3] == "starting" {
			h.test, h.testStart = test, t
		}
		h.phase = m[3]
		p.emit(Event{Type: EventProgress, T: t, Progress: h.progress(t)})
	}
}

func (h *benchHandler) row(p *Proc, ln Line, text string, t time.Duration) {
	r, err := h.parser.ParseLine([]byte(text))
	if err == nil {
		err = r.Check() // what makes a jsonl object a llama-bench result row (import checks the same)
	}
	if err != nil {
		h.badLine(p, ln.N, text, err, t)
		return
	}
	// time of this test: from its "starting" line, else from the previous row
	from := h.lastRowT
	if h.test > 0 && h.testStart >= h.lastRowT {
		from = h.testStart
	}
	h.sumDur += t - from
	h.nDur++
	h.lastRowT = t
	if len(h.rows) >= h.maxRows {
		h.extraRows++
		return
	}
	s := Sample{Row: len(h.rows) + 1, Line: ln.N, Test: r.TestName(), Kind: r.Kind(), Depth: r.NDepth,
		Model: r.ModelFilename, AvgTs: r.AvgTs, CV: CV(&r), Result: r}
	var flagged *Flagged
	if h.flagRow == 0 && h.spec.DeviceGate != nil {
		if code, why := h.spec.DeviceGate.Check(&r); code != "" {
			flagged = &Flagged{Row: s.Row, Test: s.Test, Gate: "device", Code: code,
				Reason: fmt.Sprintf("%s: %s: %s", s.Test, code, why)}
		}
	}
	if cv, limit, ok := h.gate.Check(&r); !ok && h.flagRow == 0 && flagged == nil {
		flagged = &Flagged{Row: s.Row, Test: s.Test, Gate: "cv", Code: "cv_above_limit", Value: cv, Limit: limit,
			Reason: fmt.Sprintf("%s: CV %.1f%% above the %.1f%% gate (avg %.2f ± %.2f t/s over %d repetitions)",
				s.Test, 100*cv, 100*limit, r.AvgTs, r.StddevTs, len(r.SamplesTs)), Counted: h.gate.Count}
		if flagged.Counted {
			flagged.Reason += countedSuffix
		}
	}
	if flagged != nil {
		s.Flag = flagged.Gate
		if flagged.Counted {
			h.counted = append(h.counted, strings.TrimSuffix(flagged.Reason, countedSuffix))
		} else {
			h.flagRow = s.Row
		}
	}
	h.rows = append(h.rows, Row{Sample: s})
	p.emit(Event{Type: EventSample, T: t, Sample: &s})
	p.emit(Event{Type: EventProgress, T: t, Progress: h.progress(t)})
	if flagged != nil {
		p.emit(Event{Type: EventFlagged, T: t, Flagged: flagged})
		if !flagged.Counted {
			p.halt(ClassFlagged, flagged.Reason)
		}
	}
}

// countedSuffix ends the reason of a flag a counting CV gate kept.
const countedSuffix = "; counted with its flag (gates.on_cv: count)"

func (h *benchHandler) done() int { return len(h.rows) + h.extraRows }

func (h *benchHandler) expected() int {
	if h.total > 0 {
		return h.total
	}
	return h.expectedArgs
}

func (h *benchHandler) progress(t time.Duration) *Progress {
	pr := &Progress{Done: h.done(), Total: h.expected(), Test: h.test, Phase: h.phase, Elapsed: t, ETA: -1}
	if h.test == 0 && (pr.Total == 0 || pr.Done < pr.Total) {
		pr.Test = pr.Done + 1 // no --progress lines: the next test is the one under way
	}
	if h.nDur > 0 && pr.Total > 0 {
		avg := h.sumDur / time.Duration(h.nDur)
		left := time.Duration(max(pr.Total-pr.Done, 0)) * avg
		if pr.Done < pr.Total { // a test is under way since its start (or the last row)
			from := h.lastRowT
			if h.test > pr.Done && h.testStart > h.lastRowT {
				from = h.testStart
			}
			left -= min(t-from, avg)
		}
		pr.ETA = max(left, 0)
	}
	return pr
}

func (h *benchHandler) classifyInput(p *Proc, in *ClassifyInput) {
	h.classify(in, h.done(), h.expected())
}

func (h *benchHandler) finish(p *Proc, x *Exit) {
	h.exit(x, h.done(), h.expected())
	if x.Class == ClassOK && x.Reason == "" && len(h.counted) > 0 {
		x.Reason = clip(fmt.Sprintf("%d row(s) counted with a CV flag: %s", len(h.counted), strings.Join(h.counted, "; ")), maxReason)
	}
	if h.via != nil && x.Class == ClassFailed && x.Code == 255 {
		x.Reason = clip("the connection to the host was lost or refused (ssh exited 255); "+x.Reason, maxReason)
	}
	for i := range h.rows {
		r := &h.rows[i]
		switch {
		case x.Class == ClassOK:
			r.Status = RowResult
		case x.Class == ClassFlagged && h.flagRow > 0 && r.Sample.Row < h.flagRow:
			r.Status = RowResult
		case r.Sample.Row == h.flagRow:
			r.Status = RowFlagged
		default:
			r.Status = RowDiscarded
		}
	}
	argv := p.spec.Argv
	if h.argv != nil {
		argv = h.argv
	}
	h.result = &LegResult{
		ID: h.spec.ID, Argv: argv, Env: append(slices.Clone(llamacpp.QuietEnv), h.spec.Env...),
		Start: p.start, End: p.endTime, Exit: *x, Rows: h.rows, Malformed: h.malformed,
		Fingerprint: h.fp, Transcript: p.transcript, DroppedLines: p.DroppedLines(), Via: h.via,
	}
	if h.launch != nil {
		l := *h.launch
		switch aff, why := p.Affinity(); {
		case aff != nil:
			l.Affinity = aff
		case why != "":
			l.AffinityError = why
		case l.AffinityError == "" && p.pid == 0:
			l.AffinityError = "not read: the process did not start"
		}
		h.result.Launch = &l
	}
	if h.result.Rows == nil {
		h.result.Rows = []Row{}
	}
}

// malformedLine is an output line that looked like a result and did not parse: its number, its
// start and the parser's reason (with the column when the parser gives one).
func malformedLine(n int, text string, err error) Malformed {
	msg := err.Error()
	var pe *benchfmt.ParseError
	if errors.As(err, &pe) {
		msg = pe.Msg
		if pe.Col > 0 {
			msg = fmt.Sprintf("column %d: %s", pe.Col, pe.Msg)
		}
	}
	return Malformed{Line: n, Text: clip(text, 200), Err: msg}
}

// WrapLaunch is the launch of argv under wrapper: its program resolved on PATH when the tool
// runs here (local), as given for a host. It always returns the record (with the wrapper as
// given when it cannot be resolved); the error refuses the run before anything starts.
func WrapLaunch(wrapper, argv []string, local bool) (*Launch, error) {
	w := slices.Clone(wrapper)
	l := &Launch{Wrapper: w}
	var err error
	for i, a := range w {
		if a == "" {
			err = fmt.Errorf("launch wrapper: argument %d is an empty string", i)
			break
		}
	}
	switch {
	case err != nil:
	case local:
		var path string
		if path, err = vocab.ResolveProgram(w[0]); err == nil {
			w[0] = path
		} else {
			err = fmt.Errorf("launch wrapper: %w", err)
		}
	default:
		l.AffinityError = "not read: the leg ran on another host"
	}
	l.LaunchedAs = append(slices.Clone(w), argv...)
	return l, err
}
