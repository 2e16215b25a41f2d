package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
)

// The real llama-imatrix: the medium F16 model on 4 chunks of 128 tokens of the project corpus.
// Progress chunk by chunk to 4 of 4, class ok, the matrix under its name, the same bytes on a
// second run (the tool is deterministic here); a run to an existing name is refused before it
// starts and leaves the file alone; a missing calibration text is refused with its path.
func TestRealImatrix(t *testing.T) {
	tool := qualityTool(t, ImatrixTool)
	f16 := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	run := func(out string) (*ImatrixResult, []Event) {
		spec := ImatrixSpec{Tool: tool, Model: f16, Corpus: corpusPath(t), Output: out, Ctx: 128, Chunks: 4, Threads: 1, Limits: realLimits}
		r := StartImatrix(context.Background(), spec)
		evs := collect(t, r.Events(), 5*time.Minute)
		return r.Result(), evs
	}
	out := filepath.Join(dir, "a.imatrix.gguf")
	res, evs := run(out)
	if res.Exit.Class != ClassOK || res.Output != out || res.Bytes <= 0 {
		t.Fatalf("exit %+v output %q\n%s", res.Exit, res.Output, res.Transcript.Bytes())
	}
	var last *Progress
	for _, ev := range evs {
		if ev.Type == EventProgress {
			last = ev.Progress
		}
	}
	// the per-chunk lines are read as progress when they arrive (a line lost at exit does not
	// fail the run: the file is its result)
	if last != nil && (last.Total != 4 || last.Done > 4) {
		t.Errorf("last progress %+v", last)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.part")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	again, _ := run(filepath.Join(dir, "b.imatrix.gguf"))
	if again.Exit.Class != ClassOK || fileSHA(t, again.Output) != fileSHA(t, out) {
		t.Errorf("a second run gave other bytes: %+v", again.Exit)
	}
	before := fileSHA(t, out)
	res, _ = run(out)
	var oe *OutputExistsError
	if res.Exit.Class != ClassBadArgs || !errors.As(res.Err, &oe) || fileSHA(t, out) != before {
		t.Errorf("an existing output: %+v %v", res.Exit, res.Err)
	}
	r := StartImatrix(context.Background(), ImatrixSpec{Tool: tool, Model: f16, Corpus: filepath.Join(dir, "absent.txt"), Output: filepath.Join(dir, "c.gguf"), Ctx: 128, Chunks: 4})
	collect(t, r.Events(), time.Minute)
	if res := r.Result(); res.Exit.Class != ClassBadArgs {
		t.Errorf("a missing calibration text: %+v", res.Exit)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.gguf")); err == nil {
		t.Error("a refused run wrote its output")
	}
}
