package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"sparkbench/runner/fsread"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/quantfmt"
)

// PerplexityMode is what a llama-perplexity run measures.
type PerplexityMode string

// The modes of PerplexitySpec.
const (
	// PerplexityPPL is the perplexity of Model on Corpus.
	PerplexityPPL PerplexityMode = "perplexity"
	// PerplexityBase writes the base logits of Model on Corpus to Base (--kl-divergence-base
	// FILE without --kl-divergence); it prints the perplexity too.
	PerplexityBase PerplexityMode = "kld_base"
	// PerplexityKLD is the KL divergence of Model against the base logits in Base
	// (--kl-divergence): the tokens and the context are the base file's.
	PerplexityKLD PerplexityMode = "kld"
)

// PerplexitySpec is one llama-perplexity run, driven like a llama-bench leg (StartLeg): argv
// only, its own session and process group in a pty, bounded waits, crash classes, the
// transcript kept. In PerplexityBase mode the logits go to a temporary file in Base's folder,
// which gets Base's name only when the run ended ok. It is a plain struct.
type PerplexitySpec struct {
	ID     string         `json:"id,omitempty"`
	Tool   string         `json:"tool"` // path of llama-perplexity (PerplexityToolPath)
	Model  string         `json:"model"`
	Mode   PerplexityMode `json:"mode"`
	Corpus string         `json:"corpus,omitempty"` // -f FILE: perplexity and kld_base (kld reads its tokens from Base)
	// Base is the base-logits file: kld_base writes it (it must not exist, its folder must),
	// kld reads it.
	Base string `json:"base,omitempty"`
	// Ctx is -c: required for perplexity and kld_base; for kld 0 or the base file's n_ctx
	// (the driver passes the base's).
	Ctx int `json:"ctx,omitempty"`
	// Chunks is --chunks for perplexity and kld_base; 0 scores every chunk the corpus gives.
	// A corpus with fewer chunks than asked stops the run at the tool's plan line with a
	// *quantfmt.TooFewTokensError (the tool itself would quietly use fewer). kld takes the
	// base's chunks: Chunks must be 0.
	Chunks int `json:"chunks,omitempty"`
	// Args are further options (-t 1, -b, -ngl, --no-warmup …; ValidatePerplexityArgs).
	Args          []string `json:"args,omitempty"`
	Env           []string `json:"env,omitempty"`
	Dir           string   `json:"dir,omitempty"`
	Limits        Limits   `json:"limits"`
	NoFingerprint bool     `json:"no_fingerprint,omitempty"`
	TranscriptCap int      `json:"transcript_cap,omitempty"`
	Cols          uint16   `json:"cols,omitempty"`
	Rows          uint16   `json:"rows,omitempty"`
}

// Argv is the command line with base as the logits file (the temporary name in kld_base mode
// when StartPerplexity runs it): tool -m MODEL [-f CORPUS] [-c CTX] [--chunks N]
// [--kl-divergence-base BASE [--kl-divergence]] [--ppl-output-type 1] ARGS…. Perplexity and
// kld_base runs get --ppl-output-type 1, which prints one line per chunk (the default prints
// every chunk on one line, ended only after the last, so a line reader would see no progress);
// it changes the printing only, not a figure.
func (s PerplexitySpec) Argv(base string) []string {
	argv := []string{s.Tool, "-m", s.Model}
	if s.Mode != PerplexityKLD && s.Corpus != "" {
		argv = append(argv, "-f", s.Corpus)
	}
	if s.Ctx > 0 {
		argv = append(argv, "-c", strconv.Itoa(s.Ctx))
	}
	if s.Chunks > 0 && s.Mode != PerplexityKLD {
		argv = append(argv, "--chunks", strconv.Itoa(s.Chunks))
	}
	switch s.Mode {
	case PerplexityBase:
		argv = append(argv, "--kl-divergence-base", base)
	case PerplexityKLD:
		argv = append(argv, "--kl-divergence-base", base, "--kl-divergence")
	}
	if s.Mode != PerplexityKLD {
		argv = append(argv, "--ppl-output-type", "1")
	}
	return append(argv, s.Args...)
}

// perplexityOwned are the options that have a field, or that change what is measured or
// printed beyond what the parser reads.
var perplexityOwned = map[string]string{
	"-m": "Model", "--model": "Model", "-f": "Corpus", "--file": "Corpus", "-bf": "Corpus", "--binary-file": "Corpus",
	"-c": "Ctx", "--ctx-size": "Ctx", "--chunks": "Chunks", "--kl-divergence": "Mode", "--kl-divergence-base": "Mode and Base",
	"--save-all-logits": "Mode and Base", "--ppl-output-type": "(the driver sets it)", "--ppl-stride": "(strided perplexity is not supported)",
	"--hellaswag": "(not a perplexity run)", "--winogrande": "(not a perplexity run)", "--multiple-choice": "(not a perplexity run)",
	"--log-disable": "(the output is what is read)", "--log-jsonl": "(the output is what is read)", "-h": "", "--help": "",
}

// ValidatePerplexityArgs refuses options that have their own field in PerplexitySpec or that
// change what the run measures or prints beyond what the driver reads.
func ValidatePerplexityArgs(args []string) error {
	for _, a := range args {
		if field, ok := perplexityOwned[a]; ok {
			if field == "" {
				return &BenchArgError{a + " is not a measurement"}
			}
			return &BenchArgError{a + ": not allowed in Args; use PerplexitySpec." + field}
		}
	}
	return nil
}

// BaseLogits is a base-logits file a kld_base run wrote.
type BaseLogits struct {
	Path   string                `json:"path"`
	Bytes  int64                 `json:"bytes"`
	Header quantfmt.LogitsHeader `json:"header"`
}

// PerplexityResult is everything a llama-perplexity run leaves behind. PPL is the final
// estimate (perplexity, kld_base), KLD the statistics block (kld), Base the written file
// (kld_base, only when the run ended ok).
type PerplexityResult struct {
	ID           string                      `json:"id,omitempty"`
	Mode         PerplexityMode              `json:"mode"`
	Argv         []string                    `json:"argv"`
	Env          []string                    `json:"env"`
	Start        time.Time                   `json:"start"`
	End          time.Time                   `json:"end"`
	Exit         Exit                        `json:"exit"` // Rows/Expected: chunks reported / planned
	PPL          *quantfmt.Figure            `json:"ppl,omitempty"`
	KLD          *quantfmt.KLDStats          `json:"kld,omitempty"`
	Base         *BaseLogits                 `json:"base,omitempty"`
	TooFew       *quantfmt.TooFewTokensError `json:"too_few,omitempty"`
	Parsed       quantfmt.PerplexityOutput   `json:"parsed"`
	Fingerprint  *Fingerprint                `json:"fingerprint,omitempty"`
	Transcript   *Transcript                 `json:"transcript"`
	DroppedLines int                         `json:"dropped_lines,omitempty"`
	// Err is the typed cause when sparkbench knows one: *quantfmt.TooFewTokensError,
	// *OutputExistsError, *BenchArgError; nil for a run that ended ok or another failure of
	// the tool (then Exit says it).
	Err error `json:"-"`
}

// PerplexityRun is one running llama-perplexity: a producer of events (line, progress "chunk
// i of N" … exit). Read Events until it is closed; Stop is idempotent.
type PerplexityRun struct {
	procLeg
	h *perplexityHandler
}

// StartPerplexity checks the spec (in kld mode the base file's header: its n_ctx, chunks and
// whether it scores the 100 tokens the tool needs for statistics), creates the temporary base
// file in kld_base mode, fingerprints the build (unless NoFingerprint), starts
// llama-perplexity in a pty and returns. Refusals arrive as the Exit event (bad_args, the
// typed error in Result().Err). The tool exits 0 even when it refuses (a corpus too short,
// an unreadable base file), so the class is ok only when it printed what its mode promises:
// every planned chunk and the final estimate (perplexity, kld_base; kld_base's file then
// complete as its header says and put in place), or every chunk and the whole statistics
// block (kld). Cancelling ctx is the same as Stop.
func StartPerplexity(ctx context.Context, spec PerplexitySpec, opts ...LegOption) *PerplexityRun {
	o := legOptions{fp: defaultFingerprinter}
	for _, f := range opts {
		f(&o)
	}
	h := &perplexityHandler{spec: spec, fper: o.fp}
	refuse := h.check()
	base := spec.Base
	if refuse == nil && spec.Mode == PerplexityBase {
		var tmp string
		if h.part, tmp, h.err, refuse = startPartial(spec.Dir, spec.Base); refuse == nil {
			base = tmp
		}
	}
	if refuse == nil && !spec.NoFingerprint {
		h.fp = o.fp.Take(ctx, spec.Tool, spec.Env)
	}
	run := spec
	if spec.Mode == PerplexityKLD && h.header != nil {
		run.Ctx = h.header.NCtx
	}
	ps := ProcSpec{Argv: run.Argv(base), Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows,
		TranscriptCap: spec.TranscriptCap, Limits: spec.Limits}
	r := &PerplexityRun{h: h}
	r.proc = startProc(ctx, ps, h, refuse)
	return r
}

// Result is the run's record; it waits for Done.
func (r *PerplexityRun) Result() *PerplexityResult {
	<-r.proc.Done()
	return r.h.result
}

func (h *perplexityHandler) check() error {
	s := h.spec
	if err := toolAndModel(s.Tool, PerplexityTool, s.Model); err != nil {
		return err
	}
	switch {
	case s.Chunks < 0 || s.Ctx < 0:
		return &BenchArgError{fmt.Sprintf("-c %d --chunks %d: give positive counts (0 --chunks: every chunk)", s.Ctx, s.Chunks)}
	}
	if err := ValidatePerplexityArgs(s.Args); err != nil {
		return err
	}
	switch s.Mode {
	case PerplexityPPL, PerplexityBase:
		if s.Ctx == 0 {
			return &BenchArgError{"give the context (-c, PerplexitySpec.Ctx): the tool's default of 512 would decide what is scored"}
		}
		if s.Mode == PerplexityBase && s.Base == "" {
			return &BenchArgError{"kld_base mode writes the base logits to Base: give a file name"}
		}
		return checkReadable("corpus", absIn(s.Dir, s.Corpus))
	case PerplexityKLD:
		return h.checkBase()
	}
	return &BenchArgError{fmt.Sprintf("mode %q: use %q, %q or %q", s.Mode, PerplexityPPL, PerplexityBase, PerplexityKLD)}
}

func checkReadable(what, p string) error {
	if p == "" {
		return &BenchArgError{"no " + what + " file given"}
	}
	f, _, err := fsread.OpenRegular(p)
	if err != nil {
		return &BenchArgError{fmt.Sprintf("%s %s: %v", what, p, err)}
	}
	_ = f.Close()
	return nil
}

// checkBase reads the base file's header: the tool takes its n_ctx and chunks, and prints no
// statistics under 100 scored tokens.
func (h *perplexityHandler) checkBase() error {
	s := h.spec
	if s.Chunks != 0 {
		return &BenchArgError{"--chunks does not apply to --kl-divergence: the tool scores every chunk of the base file; make the base with the chunks wanted"}
	}
	p := absIn(s.Dir, s.Base)
	if p == "" {
		return &BenchArgError{"kld mode reads the base logits from Base: give the file a kld_base run wrote"}
	}
	f, st, err := fsread.OpenRegular(p)
	if err != nil {
		return &BenchArgError{fmt.Sprintf("base logits %s: %v", p, err)}
	}
	defer f.Close()
	hd, err := quantfmt.ReadLogitsHeader(f)
	if err != nil {
		h.err = err
		return &BenchArgError{fmt.Sprintf("base logits %s: %v", p, err)}
	}
	switch {
	case st.Size() != hd.FileSize():
		return &BenchArgError{fmt.Sprintf("base logits %s: %d bytes, its header (n_ctx %d, n_vocab %d, %d chunks) says %d: the file is incomplete; make it again",
			p, st.Size(), hd.NCtx, hd.NVocab, hd.NChunk, hd.FileSize())}
	case s.Ctx != 0 && s.Ctx != hd.NCtx:
		return &BenchArgError{fmt.Sprintf("-c %d, but the base logits %s were made with n_ctx %d, which the tool uses: leave Ctx 0 or make it %d", s.Ctx, p, hd.NCtx, hd.NCtx)}
	case hd.Scored() < quantfmt.MinStatsTokens:
		return &BenchArgError{fmt.Sprintf("base logits %s score %d tokens (%d chunks of %d): llama-perplexity prints KL-divergence statistics only over %d or more; make the base with more chunks",
			p, hd.Scored(), hd.NChunk, hd.ScoredPerChunk(), quantfmt.MinStatsTokens)}
	}
	h.header = &hd
	return nil
}

// perplexityHandler parses a llama-perplexity run's lines; onLine runs on the reader
// goroutine, the rest after it has finished.
type perplexityHandler struct {
	spec   PerplexitySpec
	fper   *Fingerprinter
	fp     *Fingerprint
	header *quantfmt.LogitsHeader // kld: the base file's
	part   *partialFile
	err    error

	parser quantfmt.PerplexityParser
	total  int           // chunks planned
	planT  time.Duration // when the plan line came
	tooFew *quantfmt.TooFewTokensError
	result *PerplexityResult
}

func (h *perplexityHandler) onLine(p *Proc, ln Line, t time.Duration) {
	p.emit(Event{Type: EventLine, T: t, Line: &ln})
	ev := h.parser.Line(ln.N, ln.Text)
	switch ev.Kind {
	case quantfmt.PerplexityPlanned:
		out := h.parser.Result()
		h.total, h.planT = out.Plan.Chunks, t
		if s := h.spec; s.Mode != PerplexityKLD && s.Chunks > 0 && out.Plan.Chunks < s.Chunks && h.tooFew == nil {
			h.tooFew = &quantfmt.TooFewTokensError{Need: s.Chunks * out.Plan.NCtx, Have: -1, Ctx: out.Plan.NCtx,
				Chunks: s.Chunks, ChunksAvailable: out.Plan.Chunks}
			p.halt(ClassBadArgs, "sparkbench stopped it: "+h.tooFew.Error())
		}
	case quantfmt.PerplexityChunk:
	default:
		return
	}
	pr := &Progress{Done: ev.Chunks, Total: h.total, Phase: "chunk", Elapsed: t, ETA: -1}
	if pr.Total == 0 || pr.Done < pr.Total {
		pr.Test = pr.Done + 1
	}
	if pr.Done > 0 && pr.Total > 0 {
		pr.ETA = (t - h.planT) / time.Duration(pr.Done) * time.Duration(max(pr.Total-pr.Done, 0))
	}
	p.emit(Event{Type: EventProgress, T: t, Progress: pr})
}

// complete says the output holds what the mode promises.
func (h *perplexityHandler) complete(out *quantfmt.PerplexityOutput) bool {
	if out.Plan == nil || out.ChunksDone() != out.Plan.Chunks || h.tooFew != nil {
		return false
	}
	if h.spec.Mode == PerplexityKLD {
		return out.Stats != nil && len(out.Stats.Missing()) == 0
	}
	return out.Final != nil
}

func (h *perplexityHandler) classifyInput(p *Proc, in *ClassifyInput) {
	out := h.parser.Result()
	in.Bench, in.Expected = true, 1
	if h.complete(&out) {
		in.Rows = 1
	}
}

func (h *perplexityHandler) finish(p *Proc, x *Exit) {
	out := h.parser.Result()
	x.Rows, x.Expected = out.ChunksDone(), h.total
	if h.fp != nil {
		h.fper.After(h.fp)
	}
	r := &PerplexityResult{ID: h.spec.ID, Mode: h.spec.Mode, Argv: p.spec.Argv, Env: append(slices.Clone(llamacpp.QuietEnv), h.spec.Env...),
		Start: p.start, End: p.endTime, Parsed: out, Fingerprint: h.fp, Transcript: p.transcript,
		DroppedLines: p.DroppedLines(), Err: h.err, TooFew: h.tooFew}
	if r.TooFew == nil && out.TooFew != nil {
		r.TooFew = out.TooFew
	}
	if r.TooFew != nil && r.Err == nil {
		r.Err = r.TooFew
	}
	if x.Class == ClassOK {
		if h.spec.Mode == PerplexityKLD {
			r.KLD = out.Stats
		} else {
			r.PPL = out.Final
		}
		if h.part != nil {
			h.commitBase(r, x)
		}
	}
	switch {
	case h.tooFew != nil && (x.Class == ClassOK || x.Class == ClassIncomplete):
		// the tool finished before the stop landed: the corpus is still too short
		x.Class, x.Reason = ClassBadArgs, "sparkbench: "+h.tooFew.Error()
	case x.Class == ClassIncomplete:
		x.Reason = h.incompleteReason(&out, p.log.Hint())
	}
	if x.Class != ClassOK {
		h.part.abort()
		r.PPL, r.KLD = nil, nil
	}
	x.Reason = clip(x.Reason, maxReason)
	r.Exit = *x
	h.result = r
}

// commitBase checks the written base file against its own header and puts it in place.
func (h *perplexityHandler) commitBase(r *PerplexityResult, x *Exit) {
	fail := func(why string) { x.Class, x.Reason = ClassFailed, "the base logits: "+why }
	f, st, err := fsread.OpenRegular(h.part.tmp)
	if err != nil {
		fail(err.Error())
		return
	}
	hd, err := quantfmt.ReadLogitsHeader(f)
	_ = f.Close()
	switch {
	case err != nil:
		fail(err.Error())
		return
	case st.Size() != hd.FileSize():
		fail(fmt.Sprintf("the tool wrote %d bytes, its header (n_ctx %d, n_vocab %d, %d chunks) says %d", st.Size(), hd.NCtx, hd.NVocab, hd.NChunk, hd.FileSize()))
		return
	}
	n, err := h.part.commit()
	if err != nil {
		fail(err.Error())
		var oe *OutputExistsError
		if errors.As(err, &oe) {
			r.Err = err
		}
		return
	}
	r.Base = &BaseLogits{Path: h.part.dest, Bytes: n, Header: hd}
}

func (h *perplexityHandler) incompleteReason(out *quantfmt.PerplexityOutput, hint string) string {
	var why string
	switch {
	case out.Plan == nil:
		why = "exited 0 before its plan line (no chunk scored)"
	case out.ChunksDone() != out.Plan.Chunks:
		why = fmt.Sprintf("exited 0 after %d of %d chunks", out.ChunksDone(), out.Plan.Chunks)
	case h.spec.Mode == PerplexityKLD && out.Stats == nil:
		why = "exited 0 without the KL-divergence statistics"
	case h.spec.Mode == PerplexityKLD:
		why = fmt.Sprintf("exited 0 with the KL-divergence statistics incomplete (missing %v)", out.Stats.Missing())
	default:
		why = "exited 0 without the final estimate"
	}
	if hint != "" {
		why += "; last output: " + hint
	}
	return why
}
