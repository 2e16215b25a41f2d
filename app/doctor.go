// Package app is the doctor and the model library that the CLI and the window share: it finds
// and inspects a llama.cpp build (runner/llamacpp runs the tools' --version and
// --list-devices), lists and hashes models, and reaches the file hasher and the bandwidth probe
// for the window (probes.go). It has no Fyne and no SQL. The study kinds live below it:
// app/study and app/capacity (pure), app/study/studyrun and app/capacity/caprun (they run).
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sparkbench/runner"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/live"
)

// EnvModelDirs lists extra model folders, separated by ':'.
const EnvModelDirs = "SPARKBENCH_MODEL_DIRS"

// DoctorOptions says where to look. Empty fields fall back to the documented defaults.
type DoctorOptions struct {
	LlamaDir     string   // --llama-dir; empty: $SPARKBENCH_LLAMA_DIR, installed prefix, PATH
	ModelDirs    []string // folders to scan for *.gguf (not recursive beyond one level)
	NotebookPath string   // resolved notebook path ("" if it could not be resolved)
	NotebookErr  error    // why the notebook path could not be resolved
	// Telemetry asks for the samplers too (doctor --telemetry): each tried once, every command
	// bounded; without it the report is what it was before telemetry existed.
	Telemetry bool
}

// DefaultModelDirs are the folders doctor scans when none are given: the project's generated
// test models (when run from a checkout), $SPARKBENCH_MODEL_DIRS, and ~/models.
func DefaultModelDirs() []string {
	var dirs []string
	if st, err := os.Stat(filepath.Join("testdata", "models")); err == nil && st.IsDir() {
		if abs, err := filepath.Abs(filepath.Join("testdata", "models")); err == nil {
			dirs = append(dirs, abs)
		}
	}
	for _, d := range strings.Split(os.Getenv(EnvModelDirs), ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "models"))
	}
	return dirs
}

// Problem is one missing or broken piece, with the one command (or action) that fixes it.
type Problem struct {
	What string
	Fix  string
}

// ModelEntry is a GGUF file found in a model folder, read by the GGUF header reader.
type ModelEntry struct {
	Path         string
	Size         int64
	Architecture string
	Name         string
	Params       uint64
	FileType     string
	Context      uint64
	Experts      uint64
	ExpertsUsed  uint64
	Err          string // why the file could not be read; the other fields are then empty
}

// ModelDir is a scanned folder.
type ModelDir struct {
	Path   string
	Exists bool
	Err    string
}

// DoctorReport is everything `sparkbench doctor` and the Bench view show.
type DoctorReport struct {
	Llama          *llamacpp.Build // nil when no usable folder was found or its tools failed
	LlamaErr       string
	ModelDirs      []ModelDir
	Models         []ModelEntry
	NotebookPath   string
	NotebookExists bool
	Display        string // $DISPLAY or $WAYLAND_DISPLAY; "" when there is none
	Machine        string // CPU, cores, memory, kernel
	// DeviceNotes say what the build's device list leaves out: a Vulkan device ggml shows
	// only with GGML_VK_VISIBLE_DEVICES set, or a Vulkan backend that found no device. Notes,
	// not problems.
	DeviceNotes []DeviceNote `json:",omitempty"`
	// Telemetry is what each sampler of docs/telemetry.md found: available, or not and why
	// (not problems: a study runs without any).
	Telemetry []telemetry.Status `json:",omitempty"`
	Problems  []Problem
}

// OK is true when nothing is missing.
func (r *DoctorReport) OK() bool { return len(r.Problems) == 0 }

// Doctor inspects the machine. It never fails as a whole: each missing piece becomes a
// Problem with its fix. (A folder the user named explicitly is validated by the caller first,
// so a typo there is a usage error rather than a report.)
func Doctor(ctx context.Context, opts DoctorOptions) DoctorReport {
	var r DoctorReport
	loc, err := llamacpp.Locate(opts.LlamaDir)
	if err == nil {
		r.Llama, err = llamacpp.Inspect(ctx, loc)
	}
	if err == nil {
		if n := vulkanNote(ctx, r.Llama); n != nil {
			r.DeviceNotes = append(r.DeviceNotes, *n)
		}
	}
	if err != nil {
		r.LlamaErr = err.Error()
		var le *llamacpp.LocateError
		fix := "reinstall with: " + llamacpp.InstallCommand + " --force, or pass another --llama-dir"
		if errors.As(err, &le) {
			fix = le.Fix
		}
		r.Problems = append(r.Problems, Problem{What: "llama.cpp: " + err.Error(), Fix: fix})
	}

	dirs := opts.ModelDirs
	if len(dirs) == 0 {
		dirs = DefaultModelDirs()
	}
	for _, d := range dirs {
		md := ModelDir{Path: d}
		models, err := ScanModels(d)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			md.Exists, md.Err = true, err.Error()
		default:
			md.Exists = true
			r.Models = append(r.Models, models...)
		}
		r.ModelDirs = append(r.ModelDirs, md)
	}
	if len(r.Models) == 0 {
		r.Problems = append(r.Problems, Problem{
			What: "models: no .gguf file in " + strings.Join(dirs, ", "),
			Fix:  "make models (generates the test models), or set " + EnvModelDirs + "=/path/to/models",
		})
	}
	for _, m := range r.Models {
		if m.Err != "" {
			r.Problems = append(r.Problems, Problem{What: "model " + m.Path + ": " + m.Err,
				Fix: "replace or re-download the file (check its SHA-256 against the source)"})
		}
	}

	r.NotebookPath = opts.NotebookPath
	if opts.NotebookErr != nil {
		r.Problems = append(r.Problems, Problem{What: "notebook: " + opts.NotebookErr.Error(),
			Fix: "set SPARKBENCH_NOTEBOOK=/path/to/notebook.db or pass --notebook"})
	} else if r.NotebookPath != "" {
		_, err := os.Stat(r.NotebookPath)
		r.NotebookExists = err == nil
	}

	r.Machine = (&runner.Fingerprinter{}).Machine().String()
	if opts.Telemetry {
		set := live.Discover(ctx, live.Config{})
		r.Telemetry = set.Status
		_ = set.Close()
	}
	r.Display = os.Getenv("DISPLAY")
	if r.Display == "" {
		r.Display = os.Getenv("WAYLAND_DISPLAY")
	}
	if r.Display == "" {
		r.Problems = append(r.Problems, Problem{What: "display: none ($DISPLAY and $WAYLAND_DISPLAY are unset); the window cannot open",
			Fix: "run on a desktop session, or: xvfb-run -a sparkbench (the CLI works without one)"})
	}
	return r
}

// ScanModels reads the header of every .gguf file in dir and its direct sub-folders.
func ScanModels(dir string) ([]ModelEntry, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	var paths []string
	for _, pattern := range []string{"*.gguf", filepath.Join("*", "*.gguf")} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		paths = append(paths, m...)
	}
	sort.Strings(paths)
	var out []ModelEntry
	for _, p := range paths {
		out = append(out, InspectModel(p))
	}
	return out, nil
}

// InspectModel reads a GGUF file's header into a ModelEntry (errors are kept in Err).
func InspectModel(path string) ModelEntry {
	e := ModelEntry{Path: path}
	if st, err := os.Stat(path); err == nil {
		e.Size = st.Size()
	}
	f, err := gguf.ReadFile(path)
	if err != nil {
		e.Err = err.Error()
		return e
	}
	e.Architecture, e.Name, e.Params = f.Architecture, f.Name, f.ParamCount
	e.FileType, e.Context = f.FileTypeName, f.ContextLength
	e.Experts, e.ExpertsUsed = f.ExpertCount, f.ExpertUsedCount
	return e
}

// WriteText prints the report as `sparkbench doctor` shows it.
func (r *DoctorReport) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	p := ew.printf
	p("llama.cpp\n")
	if b := r.Llama; b != nil {
		p("  folder:     %s (from %s)\n", b.Dir, b.Source)
		p("  version:    %s\n", b.VersionLine)
		p("  build:      %d, commit %s\n", b.BuildNumber, b.Commit)
		if b.BuiltWith != "" {
			p("  built with: %s\n", b.BuiltWith)
		}
		p("  backends:   %s\n", listOr(b.Backends, "none reported"))
		if len(b.Devices) == 0 {
			p("  devices:    none besides the CPU\n")
		}
		for _, d := range b.Devices {
			p("  device:     %s\n", deviceLine(d))
		}
		for _, n := range r.DeviceNotes {
			p("  note:       %s\n", n.Text)
		}
		for _, bin := range b.Binaries {
			p("  sha256:     %s  %s (%d bytes)\n", bin.SHA256, bin.Name, bin.Size)
		}
		for _, lib := range b.Libraries { // the code itself: the tools are a few KiB over it
			p("  library:    %s  %s (%d bytes)\n", lib.SHA256, lib.Name, lib.Size)
		}
	} else {
		p("  MISSING:    %s\n", r.LlamaErr)
	}
	p("models\n")
	for _, d := range r.ModelDirs {
		state := "scanned"
		if !d.Exists {
			state = "absent"
		}
		if d.Err != "" {
			state = "error: " + d.Err
		}
		p("  folder:     %s (%s)\n", d.Path, state)
	}
	for _, m := range r.Models {
		if m.Err != "" {
			p("  BAD         %s: %s\n", m.Path, m.Err)
			continue
		}
		moe := ""
		if m.Experts > 0 {
			moe = fmt.Sprintf(", %d experts (%d used)", m.Experts, m.ExpertsUsed)
		}
		p("  %-11s %s: %s, %s params, %s, ctx %d%s, %s\n", "gguf", filepath.Base(m.Path), m.Architecture,
			HumanCount(m.Params), m.FileType, m.Context, moe, HumanBytes(m.Size))
	}
	p("machine\n  %s\n", r.Machine)
	if len(r.Telemetry) > 0 {
		p("telemetry\n")
	}
	for _, st := range r.Telemetry {
		p("  %-13s %s\n", st.Source+":", TelemetryLine(st))
	}
	p("notebook\n")
	if r.NotebookPath != "" {
		state := "will be created on first use"
		if r.NotebookExists {
			state = "exists"
		}
		p("  path:       %s (%s)\n", r.NotebookPath, state)
	}
	p("display\n")
	if r.Display != "" {
		p("  display:    %s\n", r.Display)
	} else {
		p("  display:    none\n")
	}
	if len(r.Problems) == 0 {
		p("all good\n")
	} else {
		p("%d problem(s)\n", len(r.Problems))
		for _, pr := range r.Problems {
			p("  - %s\n    fix: %s\n", pr.What, pr.Fix)
		}
	}
	return ew.err
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// HumanCount writes 164544 as 164.5K, 7241732096 as 7.24B.
func HumanCount(n uint64) string {
	f := float64(n)
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", f/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", f/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", f/1e3)
	}
	return fmt.Sprintf("%d", n)
}

// HumanBytes writes sizes in binary units: 665856 as "650.3 KiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// TelemetryLine is a sampler's doctor line: its devices and energy method, or why not (the
// window's machine card shows the same words).
func TelemetryLine(st telemetry.Status) string {
	reason := strings.TrimPrefix(st.Reason, st.Source+": ")
	if !st.Available {
		return "not available: " + reason
	}
	line := "available"
	if len(st.Devices) > 0 {
		line += ": " + strings.Join(st.Devices, ", ")
	}
	if st.Energy != "" {
		line += " (energy: " + st.Energy + ")"
	}
	if reason != "" {
		line += "; " + reason
	}
	return line
}
