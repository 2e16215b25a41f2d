package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"sparkbench/runner/llamacpp"
	"sparkbench/runner/quantfmt"
)

// The quality tools the quantization drivers run, beside llama-bench in a build's folder.
const (
	QuantizeTool   = "llama-quantize"
	PerplexityTool = "llama-perplexity"
)

// QuantizeToolPath is llama-quantize of the located folder, or a *llamacpp.LocateError naming
// the folder and the installer when it lacks one.
func QuantizeToolPath(loc llamacpp.Location) (string, error) { return toolIn(loc, QuantizeTool) }

// PerplexityToolPath is llama-perplexity of the located folder (llama.cpp-tools-extra), or a
// *llamacpp.LocateError.
func PerplexityToolPath(loc llamacpp.Location) (string, error) { return toolIn(loc, PerplexityTool) }

func toolIn(loc llamacpp.Location, name string) (string, error) { return llamacpp.ToolIn(loc, name) }

var typesCache sync.Map // binKey -> quantfmt.QuantTypes

// QuantizeTypes runs `llama-quantize --help` (argv, no shell, its own process group, bounded
// by llamacpp.MetaTimeout) and returns the quant types it lists (quantfmt.ParseQuantizeHelp).
// The tool prints the list and exits 1 whether asked for --help or given no arguments, so the
// exit status is not an error; a text without the list is. The answer is cached per binary
// file (path, size, modification time) and environment.
func QuantizeTypes(ctx context.Context, tool string, env []string) (quantfmt.QuantTypes, error) {
	key := binKey(tool)
	if key != "" {
		key += "|" + strings.Join(env, "\x00")
		if v, ok := typesCache.Load(key); ok {
			return v.(quantfmt.QuantTypes), nil
		}
	}
	out, runErr := llamacpp.RunMetaEnv(ctx, llamacpp.MetaTimeout, env, tool, "--help")
	types, err := quantfmt.ParseQuantizeHelp(out)
	if err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("list the quant types of %s: %w (%v)", tool, err, runErr)
		}
		return nil, fmt.Errorf("list the quant types of %s: %w", tool, err)
	}
	if key != "" {
		typesCache.Store(key, types)
	}
	return types, nil
}

// toolAndModel refuses a spec without its tool's path or a model.
func toolAndModel(tool, name, model string) error {
	switch {
	case tool == "":
		return &BenchArgError{"no " + name + " binary given"}
	case model == "":
		return &BenchArgError{"no model given"}
	}
	return nil
}

// ToolRecord is what a run of a llama.cpp tool (llama-batched-bench, llama-quantize,
// llama-imatrix) leaves first: its id, argv, environment (the quiet variables, then the
// spec's), start and end, and exit.
type ToolRecord struct {
	ID    string    `json:"id,omitempty"`
	Argv  []string  `json:"argv"`
	Env   []string  `json:"env"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Exit  Exit      `json:"exit"`
}

// toolRecord is the process's ToolRecord so far (its Exit is set by the handler's finish).
func (p *Proc) toolRecord(id string, env []string) ToolRecord {
	return ToolRecord{ID: id, Argv: p.spec.Argv, Env: append(slices.Clone(llamacpp.QuietEnv), env...), Start: p.start, End: p.endTime}
}

// OutputExistsError is a destination that already exists: the drivers never overwrite a file.
type OutputExistsError struct{ Path string }

func (e *OutputExistsError) Error() string {
	return e.Path + " already exists: sparkbench never overwrites a file; remove it or choose another name"
}

// partialFile is the temporary file a tool writes in its destination's folder; commit links
// it to the destination only if nothing is there, abort removes it.
type partialFile struct {
	dest, tmp string
}

// newPartial checks dest (absent, its folder present) and creates the temporary file beside
// it, ".NAME.sparkbench-*.part".
func newPartial(dest string) (*partialFile, error) {
	if dest == "" {
		return nil, errors.New("no output file given")
	}
	if _, err := os.Lstat(dest); err == nil {
		return nil, &OutputExistsError{Path: dest}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("output %s: %w", dest, err)
	}
	dir := filepath.Dir(dest)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("output %s: its folder %s does not exist (or is not a folder): create it first", dest, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".sparkbench-*.part")
	if err != nil {
		return nil, fmt.Errorf("output %s: cannot write in its folder: %w", dest, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	return &partialFile{dest: dest, tmp: f.Name()}, nil
}

// commit makes the finished file durable and gives it its name without replacing anything:
// a hard link fails if the name was taken meanwhile (a folder without hard links gets a
// rename after a check). It returns the file's size.
func (p *partialFile) commit() (int64, error) {
	f, err := os.OpenFile(p.tmp, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("the tool's output %s: %w", p.tmp, err)
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(p.tmp, 0o644)
	}
	if err != nil {
		return 0, fmt.Errorf("the tool's output %s: %w", p.tmp, err)
	}
	switch err := os.Link(p.tmp, p.dest); {
	case err == nil:
		_ = os.Remove(p.tmp)
	case errors.Is(err, fs.ErrExist):
		return 0, &OutputExistsError{Path: p.dest}
	case errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EXDEV):
		if _, lerr := os.Lstat(p.dest); lerr == nil {
			return 0, &OutputExistsError{Path: p.dest}
		}
		if err := os.Rename(p.tmp, p.dest); err != nil {
			return 0, fmt.Errorf("name the output %s: %w", p.dest, err)
		}
	default:
		return 0, fmt.Errorf("name the output %s: %w", p.dest, err)
	}
	if d, err := os.Open(filepath.Dir(p.dest)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return st.Size(), nil
}

func (p *partialFile) abort() {
	if p != nil {
		_ = os.Remove(p.tmp)
	}
}

// absIn resolves a relative path against dir (the child's working folder) when one is given.
func absIn(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// toolFingerprint fingerprints a tool that has no --version (llama-quantize): its binary and
// the llama.cpp libraries it loads, hashed, and the machine; the version line comes from the
// run's own output (setVersion). Devices stay empty: quantization runs on the CPU.
func toolFingerprint(f *Fingerprinter, tool string) *Fingerprint {
	fp := &Fingerprint{Devices: []llamacpp.Device{}, Backends: []string{}}
	fp.TakenAt = time.Now()
	bin, err := llamacpp.HashBinary(tool)
	if err != nil {
		fp.Errors = append(fp.Errors, err.Error())
	}
	fp.Binary = bin
	libs, missing, err := llamacpp.Libraries(tool, nil)
	if err != nil {
		fp.Errors = append(fp.Errors, "libraries: "+err.Error())
	}
	for _, m := range missing {
		fp.Errors = append(fp.Errors, "libraries: "+m+" was not found beside the tool or on its RUNPATH; not hashed")
	}
	fp.Libraries = libs
	fp.Machine = f.machine(fp)
	fp.TempsBefore = f.Temps()
	return fp
}

// setVersion fills a fingerprint's version from a "version: …" line of the run's output.
func setVersion(fp *Fingerprint, line string) {
	if fp == nil || fp.VersionLine != "" || !strings.HasPrefix(strings.TrimSpace(line), "version: ") {
		return
	}
	if l, v, n, c, err := llamacpp.ParseVersion(strings.TrimSpace(line)); err == nil {
		fp.VersionLine, fp.Version, fp.BuildNumber, fp.Commit = l, v, n, c
	}
}
