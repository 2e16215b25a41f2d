package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner/quantfmt"
)

// QuantizeSpec is one llama-quantize run, driven like a llama-bench leg (StartLeg): argv
// only, its own session and process group in a pty, bounded waits, crash classes, the
// transcript kept. The tool writes a temporary file in Output's folder, which gets Output's
// name only when the run ended ok; an existing Output is never touched. It is a plain struct.
type QuantizeSpec struct {
	ID     string `json:"id,omitempty"`
	Tool   string `json:"tool"`             // path of llama-quantize (QuantizeToolPath)
	Input  string `json:"input"`            // the model to quantize (an F32, F16 or BF16 GGUF)
	Output string `json:"output,omitempty"` // the file to write: must not exist, its folder must; empty only with DryRun
	Type   string `json:"type"`             // a quant type the build lists: Q4_K_M, q4_k_m or its number
	// Threads is llama-quantize's nthreads argument; 0 leaves it out (the tool then uses every
	// core). Tests pass 1.
	Threads int    `json:"threads,omitempty"`
	IMatrix string `json:"imatrix,omitempty"` // --imatrix FILE (an importance matrix from llama-imatrix)
	DryRun  bool   `json:"dry_run,omitempty"` // --dry-run: the sizes only, no file written
	// Args are further options, placed before the positional arguments: --pure,
	// --leave-output-tensor, --output-tensor-type q8_0, --tensor-type attn_q=q8_0 …
	// (ValidateQuantizeArgs).
	Args []string `json:"args,omitempty"`
	// Types is the build's list of quant types; nil makes StartQuantize read it
	// (QuantizeTypes). Type is checked against it before anything starts.
	Types         quantfmt.QuantTypes `json:"-"`
	Env           []string            `json:"env,omitempty"`
	Dir           string              `json:"dir,omitempty"`
	Limits        Limits              `json:"limits"`
	NoFingerprint bool                `json:"no_fingerprint,omitempty"`
	TranscriptCap int                 `json:"transcript_cap,omitempty"`
	Cols          uint16              `json:"cols,omitempty"`
	Rows          uint16              `json:"rows,omitempty"`
}

// Argv is the command line with out as the file the tool writes (the temporary name when
// StartQuantize runs it): tool [--imatrix F] [--dry-run] ARGS… INPUT [OUT] TYPE [THREADS].
func (s QuantizeSpec) Argv(out string) []string {
	argv := []string{s.Tool}
	if s.IMatrix != "" {
		argv = append(argv, "--imatrix", s.IMatrix)
	}
	if s.DryRun {
		argv = append(argv, "--dry-run")
	}
	argv = append(append(argv, s.Args...), s.Input)
	if !s.DryRun {
		argv = append(argv, out)
	}
	argv = append(argv, s.Type)
	if s.Threads > 0 {
		argv = append(argv, strconv.Itoa(s.Threads))
	}
	return argv
}

// ValidateQuantizeArgs refuses options that have their own field or that the driver cannot
// follow: --dry-run and --imatrix (DryRun, IMatrix), --keep-split (the output would be
// several files, and only one is renamed into place), --help, and anything that is not an
// option where an option must come (a positional argument belongs in Input, Output, Type).
func ValidateQuantizeArgs(args []string) error {
	for i, a := range args {
		switch a {
		case "--dry-run":
			return &BenchArgError{"--dry-run: set QuantizeSpec.DryRun instead"}
		case "--imatrix":
			return &BenchArgError{"--imatrix: set QuantizeSpec.IMatrix instead"}
		case "--keep-split":
			return &BenchArgError{"--keep-split is not supported: the output would be several files and sparkbench renames one into place"}
		case "--help", "-h":
			return &BenchArgError{a + " is not a quantization; QuantizeTypes reads the help"}
		}
		if i == 0 && !strings.HasPrefix(a, "-") {
			return &BenchArgError{fmt.Sprintf("%q: Args are options; the model, output and type go in Input, Output and Type", a)}
		}
	}
	return nil
}

// QuantizeRun is one running llama-quantize: a producer of events (line, progress "tensor i
// of N" … exit). Read Events until it is closed; Stop is idempotent.
type QuantizeRun struct {
	procLeg
	h *quantizeHandler
}

// QuantizeResult is everything a llama-quantize run leaves behind.
type QuantizeResult struct {
	ToolRecord                     // Exit's Rows/Expected: tensors finished / N
	Type       *quantfmt.QuantType `json:"type,omitempty"`
	// Output is the written file, set only when the run ended ok (not for a dry run); Bytes
	// is its size.
	Output       string                  `json:"output,omitempty"`
	Bytes        int64                   `json:"bytes,omitempty"`
	Parsed       quantfmt.QuantizeOutput `json:"parsed"`
	Fingerprint  *Fingerprint            `json:"fingerprint,omitempty"`
	Transcript   *Transcript             `json:"transcript"`
	DroppedLines int                     `json:"dropped_lines,omitempty"`
	// Err is the typed cause when sparkbench knows one: *quantfmt.UnknownTypeError,
	// *OutputExistsError, *BenchArgError; nil for a run that ended ok or a tool's own failure
	// (then Exit says it).
	Err error `json:"-"`
}

// StartQuantize checks the spec (the type against the build's list, the output absent and
// its folder present), creates the temporary output, fingerprints the tool (unless
// NoFingerprint), starts llama-quantize in a pty and returns. Refusals arrive as the Exit
// event (bad_args, with the typed error in Result().Err). The class is ok only when the tool
// exited 0, printed every tensor of N with its sizes and the quant size, and its file was
// put in place. Cancelling ctx is the same as Stop.
func StartQuantize(ctx context.Context, spec QuantizeSpec, opts ...LegOption) *QuantizeRun {
	o := legOptions{fp: defaultFingerprinter}
	for _, f := range opts {
		f(&o)
	}
	h := &quantizeHandler{spec: spec, fper: o.fp}
	refuse := h.check(ctx)
	out := ""
	if refuse == nil && !spec.DryRun {
		h.part, out, h.err, refuse = startPartial(spec.Dir, spec.Output)
	}
	if refuse == nil && !spec.NoFingerprint {
		h.fp = toolFingerprint(o.fp, spec.Tool)
	}
	ps := ProcSpec{Argv: spec.Argv(out), Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows,
		TranscriptCap: spec.TranscriptCap, Limits: spec.Limits}
	r := &QuantizeRun{h: h}
	r.proc = startProc(ctx, ps, h, refuse)
	return r
}

// Result is the run's record; it waits for Done.
func (r *QuantizeRun) Result() *QuantizeResult {
	<-r.proc.Done()
	return r.h.result
}

// check refuses what cannot run: no tool, no input, bad options, an unknown type.
func (h *quantizeHandler) check(ctx context.Context) error {
	s := h.spec
	switch {
	case s.Tool == "":
		return &BenchArgError{"no llama-quantize binary given"}
	case s.Input == "":
		return &BenchArgError{"no input model given"}
	case s.Type == "":
		return &BenchArgError{"no quant type given"}
	case s.DryRun && s.Output != "":
		return &BenchArgError{"a dry run writes no file: leave Output empty"}
	case !s.DryRun && s.Output == "":
		return &BenchArgError{"no output file given"}
	case s.Threads < 0:
		return &BenchArgError{fmt.Sprintf("threads %d: give a positive count, or 0 for the tool's default", s.Threads)}
	}
	if err := ValidateQuantizeArgs(s.Args); err != nil {
		return err
	}
	types := s.Types
	if types == nil {
		t, err := QuantizeTypes(ctx, s.Tool, s.Env)
		if err != nil {
			h.typesErr = err // the tool still judges the type; its refusal is classified
			return nil
		}
		types = t
	}
	h.types = types
	qt, err := types.Lookup(s.Type)
	if err != nil {
		h.err = err
		return &BenchArgError{err.Error()}
	}
	h.qt = &qt
	return nil
}

// quantizeHandler parses a llama-quantize run's lines; onLine runs on the reader goroutine,
// the rest after it has finished.
type quantizeHandler struct {
	spec     QuantizeSpec
	fper     *Fingerprinter
	fp       *Fingerprint
	types    quantfmt.QuantTypes
	typesErr error
	qt       *quantfmt.QuantType
	part     *partialFile
	err      error

	parser      quantfmt.QuantizeParser
	firstTensor time.Duration
	result      *QuantizeResult
}

func (h *quantizeHandler) onLine(p *Proc, ln Line, t time.Duration) {
	p.emit(Event{Type: EventLine, T: t, Line: &ln})
	setVersion(h.fp, ln.Text)
	ev := h.parser.Line(ln.N, ln.Text)
	if ev.Tensor == nil || (ev.Kind != quantfmt.QuantizeTensorLine && ev.Kind != quantfmt.QuantizeTensorDone) {
		return
	}
	if h.firstTensor == 0 {
		h.firstTensor = t
	}
	out := h.parser.Result()
	tn := ev.Tensor
	phase := tn.Name + " " + tn.From
	if tn.To != "" {
		phase += " -> " + tn.To
	}
	pr := &Progress{Done: out.Done(), Total: out.Total, Test: tn.Index, Phase: phase, Elapsed: t, ETA: -1}
	if pr.Done > 0 && pr.Total > 0 {
		per := (t - h.firstTensor) / time.Duration(pr.Done)
		pr.ETA = per * time.Duration(max(pr.Total-pr.Done, 0))
	}
	p.emit(Event{Type: EventProgress, T: t, Progress: pr})
}

func (h *quantizeHandler) classifyInput(p *Proc, in *ClassifyInput) {
	out := h.parser.Result()
	in.Bench, in.Expected = true, 1
	if out.Complete() {
		in.Rows = 1
	}
}

func (h *quantizeHandler) finish(p *Proc, x *Exit) {
	out := h.parser.Result()
	x.Rows, x.Expected = out.Done(), out.Total
	if h.fp != nil {
		h.fper.After(h.fp)
	}
	r := &QuantizeResult{ToolRecord: p.toolRecord(h.spec.ID, h.spec.Env), Type: h.qt, Parsed: out, Fingerprint: h.fp, Transcript: p.transcript,
		DroppedLines: p.DroppedLines(), Err: h.err}
	switch {
	case x.Class == ClassOK && h.part != nil:
		n, err := h.part.commit()
		if err != nil {
			x.Class, x.Reason = ClassFailed, "the tool finished but its file could not be put in place: "+err.Error()
			var oe *OutputExistsError
			if errors.As(err, &oe) {
				r.Err = err
			}
		} else {
			r.Output, r.Bytes = h.part.dest, n
		}
	case x.Class == ClassIncomplete:
		x.Reason = fmt.Sprintf("exited 0 with %d of %d tensors finished", out.Done(), out.Total)
		if out.QuantSize == nil {
			x.Reason += " and no quant size line"
		}
		if hint := p.log.Hint(); hint != "" {
			x.Reason += "; last output: " + hint
		}
	case x.Class == ClassBadArgs && h.typesErr == nil && len(h.types) > 0 && strings.Contains(strings.ToLower(x.Reason), "invalid ftype"):
		x.Reason += "; this build knows " + strings.Join(h.types.Names(), ", ")
	}
	if x.Class != ClassOK {
		h.part.abort()
	}
	x.Reason = clip(x.Reason, maxReason)
	r.Exit = *x
	h.result = r
}
