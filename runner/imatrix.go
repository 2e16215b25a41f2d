package runner

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"

	"sparkbench/runner/llamacpp"
)

// ImatrixTool is llama.cpp's importance-matrix tool (llama.cpp-tools-extra).
const ImatrixTool = "llama-imatrix"

// ImatrixToolPath is llama-imatrix of the located folder, or a *llamacpp.LocateError.
func ImatrixToolPath(loc llamacpp.Location) (string, error) { return toolIn(loc, ImatrixTool) }

// ImatrixSpec is one llama-imatrix run, driven like a llama-bench leg (StartLeg): argv only,
// its own session and process group in a pty, bounded waits, crash classes, the transcript
// kept. The tool writes the matrix (GGUF) to a temporary file in Output's folder, which gets
// Output's name only when the run ended ok; an existing Output is never touched.
type ImatrixSpec struct {
	ID     string `json:"id,omitempty"`
	Tool   string `json:"tool"`   // path of llama-imatrix (ImatrixToolPath)
	Model  string `json:"model"`  // the model the matrix is measured on (the unquantized reference)
	Corpus string `json:"corpus"` // -f: the calibration text
	Output string `json:"output"` // the file to write: must not exist, its folder must
	Ctx    int    `json:"ctx"`    // -c: tokens per chunk
	Chunks int    `json:"chunks"` // --chunks: how many chunks of the text are read
	// Threads is -t; 0 leaves it out. Tests pass 1.
	Threads       int      `json:"threads,omitempty"`
	Env           []string `json:"env,omitempty"`
	Dir           string   `json:"dir,omitempty"`
	Limits        Limits   `json:"limits"`
	NoFingerprint bool     `json:"no_fingerprint,omitempty"`
	TranscriptCap int      `json:"transcript_cap,omitempty"`
	Cols          uint16   `json:"cols,omitempty"`
	Rows          uint16   `json:"rows,omitempty"`
}

// Argv is the command line with out as the file the tool writes (the temporary name when
// StartImatrix runs it): tool -m MODEL -f CORPUS -o OUT -c CTX --chunks N [-t T]. The tool
// also prints a running perplexity per chunk, which the driver reads as progress.
func (s ImatrixSpec) Argv(out string) []string {
	argv := []string{s.Tool, "-m", s.Model, "-f", s.Corpus, "-o", out, "-c", strconv.Itoa(s.Ctx), "--chunks", strconv.Itoa(s.Chunks)}
	if s.Threads > 0 {
		argv = append(argv, "-t", strconv.Itoa(s.Threads))
	}
	return argv
}

// ImatrixRun is one running llama-imatrix: a producer of events (line, progress per chunk …
// exit). Read Events until it is closed; Stop is idempotent.
type ImatrixRun struct {
	procLeg
	h *imatrixHandler
}

// ImatrixResult is everything a llama-imatrix run leaves behind.
type ImatrixResult struct {
	ToolRecord // Exit's Rows/Expected: chunks read / planned (as printed)
	// Output is the written matrix, set only when the run ended ok; Bytes is its size.
	Output       string       `json:"output,omitempty"`
	Bytes        int64        `json:"bytes,omitempty"`
	Fingerprint  *Fingerprint `json:"fingerprint,omitempty"`
	Transcript   *Transcript  `json:"transcript"`
	DroppedLines int          `json:"dropped_lines,omitempty"`
	Err          error        `json:"-"` // *OutputExistsError or *BenchArgError when sparkbench refused
}

// StartImatrix checks the spec, creates the temporary output, fingerprints the tool (unless
// NoFingerprint), starts llama-imatrix in a pty and returns. The class is ok only when the
// tool exited 0 and wrote a non-empty matrix, which was put in place: the file, not the
// printed lines, is the tool's result (a line lost at exit does not fail a good run).
// Cancelling ctx is the same as Stop.
func StartImatrix(ctx context.Context, spec ImatrixSpec, opts ...LegOption) *ImatrixRun {
	o := legOptions{fp: defaultFingerprinter}
	for _, f := range opts {
		f(&o)
	}
	h := &imatrixHandler{spec: spec, fper: o.fp}
	refuse := h.check()
	out := ""
	if refuse == nil {
		h.part, out, h.err, refuse = startPartial(spec.Dir, spec.Output)
	}
	if refuse == nil && !spec.NoFingerprint {
		h.fp = o.fp.Take(ctx, spec.Tool, spec.Env)
	}
	ps := ProcSpec{Argv: spec.Argv(out), Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows,
		TranscriptCap: spec.TranscriptCap, Limits: spec.Limits}
	r := &ImatrixRun{h: h}
	r.proc = startProc(ctx, ps, h, refuse)
	return r
}

// startPartial makes the temporary file a tool writes for dest (in dir when relative): the
// file, its name, and on failure the cause and the refusal to start with.
func startPartial(dir, dest string) (*partialFile, string, error, error) {
	part, err := newPartial(absIn(dir, dest))
	if err != nil {
		return nil, "", err, &BenchArgError{err.Error()}
	}
	return part, part.tmp, nil, nil
}

// Result is the run's record; it waits for Done.
func (r *ImatrixRun) Result() *ImatrixResult {
	<-r.proc.Done()
	return r.h.result
}

func (h *imatrixHandler) check() error {
	s := h.spec
	if err := toolAndModel(s.Tool, ImatrixTool, s.Model); err != nil {
		return err
	}
	switch {
	case s.Corpus == "":
		return &BenchArgError{"no calibration text given"}
	case s.Ctx < 8:
		return &BenchArgError{fmt.Sprintf("ctx %d: give at least 8 tokens per chunk", s.Ctx)}
	case s.Chunks < 1:
		return &BenchArgError{fmt.Sprintf("chunks %d: give at least 1", s.Chunks)}
	case s.Threads < 0:
		return &BenchArgError{fmt.Sprintf("threads %d: give a positive count, or 0 for the tool's default", s.Threads)}
	}
	if _, err := os.Stat(absIn(s.Dir, s.Corpus)); err != nil {
		return &BenchArgError{"the calibration text: " + err.Error()}
	}
	return nil
}

// imatrixHandler reads a llama-imatrix run's lines; onLine runs on the reader goroutine, the
// rest after it has finished.
type imatrixHandler struct {
	spec   ImatrixSpec
	fper   *Fingerprinter
	fp     *Fingerprint
	part   *partialFile
	err    error
	total  int // chunks the tool planned ("computing over N chunks")
	done   int // chunks it printed
	planT  time.Duration
	result *ImatrixResult
}

var (
	imatrixPlanRE  = regexp.MustCompile(`computing over (\d+) chunks`)
	imatrixChunkRE = regexp.MustCompile(`\[(\d+)\][0-9.]+`)
)

func (h *imatrixHandler) onLine(p *Proc, ln Line, t time.Duration) {
	p.emit(Event{Type: EventLine, T: t, Line: &ln})
	if m := imatrixPlanRE.FindStringSubmatch(ln.Text); m != nil {
		h.total, _ = strconv.Atoi(m[1])
		h.planT = t
		return
	}
	ms := imatrixChunkRE.FindAllStringSubmatch(ln.Text, -1)
	if len(ms) == 0 || h.total == 0 {
		return
	}
	n, _ := strconv.Atoi(ms[len(ms)-1][1])
	if n <= h.done {
		return
	}
	h.done = n
	pr := &Progress{Done: n, Total: h.total, Phase: "chunk", Elapsed: t, ETA: -1}
	if n < h.total {
		pr.Test = n + 1
		pr.ETA = (t - h.planT) / time.Duration(n) * time.Duration(h.total-n)
	}
	p.emit(Event{Type: EventProgress, T: t, Progress: pr})
}

// written says the tool left a non-empty matrix in the temporary file.
func (h *imatrixHandler) written() bool {
	if h.part == nil {
		return false
	}
	st, err := os.Stat(h.part.tmp)
	return err == nil && st.Size() > 0
}

func (h *imatrixHandler) classifyInput(p *Proc, in *ClassifyInput) {
	in.Bench, in.Expected = true, 1
	if h.written() {
		in.Rows = 1
	}
}

func (h *imatrixHandler) finish(p *Proc, x *Exit) {
	x.Rows, x.Expected = h.done, h.total
	if h.fp != nil {
		h.fper.After(h.fp)
	}
	r := &ImatrixResult{ToolRecord: p.toolRecord(h.spec.ID, h.spec.Env), Fingerprint: h.fp, Transcript: p.transcript, DroppedLines: p.DroppedLines(), Err: h.err}
	switch {
	case x.Class == ClassOK && h.part != nil:
		n, err := h.part.commit()
		if err != nil {
			x.Class, x.Reason = ClassFailed, "the tool finished but its file could not be put in place: "+err.Error()
		} else {
			r.Output, r.Bytes = h.part.dest, n
		}
	case x.Class == ClassIncomplete:
		x.Reason = fmt.Sprintf("exited 0 without writing the matrix (%d of %d chunks printed)", h.done, h.total)
		if hint := p.log.Hint(); hint != "" {
			x.Reason += "; last output: " + hint
		}
	}
	if x.Class != ClassOK {
		h.part.abort()
	}
	x.Reason = clip(x.Reason, maxReason)
	r.Exit = *x
	h.result = r
}
