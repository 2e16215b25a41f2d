// Package llamacpp finds a folder of llama.cpp binaries and reads what it is: version line,
// build number, commit, compiler, backends, devices and the SHA-256 of each binary. It runs
// only short, bounded metadata commands (--version, --list-devices); benchmark legs go through
// the runner's pty driver.
package llamacpp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Tools the project drives. A folder is usable when it holds both.
const (
	BenchTool  = "llama-bench"
	ServerTool = "llama-server"
)

// BatchedBenchTool is llama-batched-bench: optional in a folder (BatchedBench finds it), needed
// only by batched-bench legs.
const BatchedBenchTool = "llama-batched-bench"

// BatchedBench returns the path of llama-batched-bench in the located folder, or a
// *LocateError that names the folder and the installer command when the folder lacks it.
func BatchedBench(loc Location) (string, error) {
	p := filepath.Join(loc.Dir, BatchedBenchTool)
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", &LocateError{Dir: loc.Dir, Source: loc.Source, Reason: "has no executable " + BatchedBenchTool,
			Fix: "install a prefix that includes it with: " + InstallCommand + ", or pass --llama-dir with a llama.cpp build's binaries folder that has it (e.g. build/bin)"}
	}
	return p, nil
}

// EnvDir names the llama.cpp binaries folder when no --llama-dir flag is given.
const EnvDir = "SPARKBENCH_LLAMA_DIR"

// EnvPrefix overrides where scripts/install-llama.sh puts its self-contained prefix.
const EnvPrefix = "SPARKBENCH_LLAMA_PREFIX"

// InstallCommand is the one command that installs llama.cpp binaries for sparkbench.
const InstallCommand = "make llama   (runs scripts/install-llama.sh)"

// LocateError says why no usable folder was found, and what fixes it.
type LocateError struct {
	Dir    string // the folder that was tried, if one was named
	Source Source
	Reason string
	Fix    string
}

func (e *LocateError) Error() string {
	where := "llama.cpp"
	if e.Dir != "" {
		where = fmt.Sprintf("llama.cpp folder %s (from %s)", e.Dir, e.Source)
	}
	msg := where + ": " + e.Reason
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// ErrNotFound is wrapped by the error Locate returns when no source named a folder at all.
var ErrNotFound = errors.New("no llama.cpp binaries found")

// DefaultPrefix is the installer's prefix: $SPARKBENCH_LLAMA_PREFIX, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/sparkbench/llama.cpp.
func DefaultPrefix() (string, error) {
	if p := os.Getenv(EnvPrefix); p != "" {
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the cache folder: %w (set XDG_CACHE_HOME or HOME)", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "sparkbench", "llama.cpp"), nil
}

// Locate picks the binaries folder: flagDir if given, else $SPARKBENCH_LLAMA_DIR, else the
// installed prefix's bin folder, else the folder of llama-bench on PATH. A folder named
// explicitly (flag or env) must be usable; it is never silently replaced by another.
func Locate(flagDir string) (Location, error) {
	if flagDir != "" {
		return Check(flagDir, SourceFlag)
	}
	if d := os.Getenv(EnvDir); d != "" {
		return Check(d, SourceEnv)
	}
	if prefix, err := DefaultPrefix(); err == nil {
		bin := filepath.Join(prefix, "bin")
		if loc, err := Check(bin, SourcePrefix); err == nil {
			return loc, nil
		}
	}
	if p, err := exec.LookPath(BenchTool); err == nil {
		if loc, err := Check(filepath.Dir(p), SourcePath); err == nil {
			return loc, nil
		}
	}
	return Location{}, &LocateError{
		Reason: ErrNotFound.Error() + " (no --llama-dir, no " + EnvDir + ", no installed prefix, none on PATH)",
		Fix:    "install them with: " + InstallCommand + ", or pass --llama-dir DIR",
	}
}

// Check validates dir as a binaries folder holding llama-bench and llama-server.
func Check(dir string, src Source) (Location, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Location{}, &LocateError{Dir: dir, Source: src, Reason: err.Error(), Fix: "pass an existing folder"}
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Location{}, &LocateError{Dir: abs, Source: src, Reason: "does not exist",
			Fix: "pass the folder that holds llama-bench and llama-server, or install them with: " + InstallCommand}
	case err != nil:
		return Location{}, &LocateError{Dir: abs, Source: src, Reason: err.Error(), Fix: "check its permissions"}
	case !st.IsDir():
		return Location{}, &LocateError{Dir: abs, Source: src, Reason: "is a file, not a folder",
			Fix: "pass the folder that holds llama-bench and llama-server (e.g. build/bin)"}
	}
	loc := Location{Dir: abs, Source: src}
	var missing []string
	for _, t := range []struct {
		name string
		dst  *string
	}{{BenchTool, &loc.Bench}, {ServerTool, &loc.Server}} {
		p := filepath.Join(abs, t.name)
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			missing = append(missing, t.name)
			continue
		}
		*t.dst = p
	}
	if len(missing) > 0 {
		reason := fmt.Sprintf("has no executable %s", joinOr(missing))
		return Location{}, &LocateError{Dir: abs, Source: src, Reason: reason,
			Fix: "pass a llama.cpp build's binaries folder (e.g. build/bin), or install them with: " + InstallCommand}
	}
	return loc, nil
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	default:
		out := s[0]
		for _, x := range s[1 : len(s)-1] {
			out += ", " + x
		}
		return out + " or " + s[len(s)-1]
	}
}
