package vocab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Launch is how a leg's tool was started under a launch wrapper (a plan's
// build.launch_wrapper, e.g. taskset -c 0): the wrapper as run, the whole command line run
// (wrapper, then the leg's canonical command line unchanged), and the CPU affinity in force
// for the tool's own process, read from /proc while it ran.
type Launch struct {
	Wrapper    []string  `json:"wrapper"`
	LaunchedAs []string  `json:"launched_as"`
	Affinity   *Affinity `json:"affinity,omitempty"`
	// AffinityError says why no affinity was read (the tool ended before it was seen, the leg
	// ran on another host, no /proc).
	AffinityError string `json:"affinity_error,omitempty"`
}

// How the tool's process was found under its wrapper.
const (
	// LaunchExec: the wrapper replaced itself with the tool (exec): the process started is
	// the tool's, same PID.
	LaunchExec = "exec"
	// LaunchChild: the wrapper started the tool as a new process (fork) in the leg's process
	// group; the affinity is that process's.
	LaunchChild = "child"
)

// Affinity is what /proc/PID/status said of the tool's process once it ran the tool's
// binary: the CPUs and memory nodes it may use.
type Affinity struct {
	PID  int    `json:"pid"`
	How  string `json:"how"`                         // LaunchExec or LaunchChild
	CPUs string `json:"cpus_allowed_list"`           // e.g. "0" or "0-3"
	Mems string `json:"mems_allowed_list,omitempty"` // NUMA nodes, e.g. "0"
}

// ProgramError is a launch wrapper's program that cannot be run: not found on PATH, not
// executable, a folder.
type ProgramError struct {
	Name string // as given
	Path string // where it was looked for or found ("" when not found)
	Why  string // "not found on PATH", "not executable", …
	Fix  string // what to do
}

func (e *ProgramError) Error() string {
	at := ""
	if e.Path != "" && e.Path != e.Name {
		at = " (" + e.Path + ")"
	}
	return fmt.Sprintf("%s%s: %s; %s", e.Name, at, e.Why, e.Fix)
}

// ResolveProgram finds a program as exec would: a name with a slash is taken as it is (it must
// be an absolute path), a bare name is looked up in PATH's folders. The file must be a regular
// file with an execute bit. It reads the file system only.
func ResolveProgram(name string) (string, error) {
	if name == "" {
		return "", &ProgramError{Name: `""`, Why: "an empty program name", Fix: "give the program's name or absolute path"}
	}
	if strings.ContainsRune(name, '/') {
		if !filepath.IsAbs(name) {
			return "", &ProgramError{Name: name, Why: "a relative path", Fix: "give a bare name found on PATH or an absolute path"}
		}
		return name, checkProgram(name, name)
	}
	var first error
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // exec.LookPath refuses a PATH entry relative to the working folder too
		}
		p := filepath.Join(dir, name)
		err := checkProgram(name, p)
		if err == nil {
			return p, nil
		}
		var pe *ProgramError
		if first == nil && errors.As(err, &pe) && pe.Why != "not found on PATH" {
			first = err // a file by that name that cannot run: say so, unless a later one can
		}
	}
	if first != nil {
		return "", first
	}
	return "", &ProgramError{Name: name, Why: "not found on PATH", Fix: "install it, or give its absolute path"}
}

func checkProgram(name, p string) error {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		why := "not found on PATH"
		if strings.ContainsRune(name, '/') {
			why = "no such file"
		}
		return &ProgramError{Name: name, Why: why, Fix: "install it, or give its absolute path"}
	case err != nil:
		return &ProgramError{Name: name, Path: p, Why: err.Error(), Fix: "check the path"}
	case st.IsDir():
		return &ProgramError{Name: name, Path: p, Why: "a folder, not a program", Fix: "name the program itself"}
	case !st.Mode().IsRegular():
		return &ProgramError{Name: name, Path: p, Why: "not a regular file", Fix: "name the program itself"}
	case st.Mode().Perm()&0o111 == 0:
		return &ProgramError{Name: name, Path: p, Why: fmt.Sprintf("not executable (mode %s)", st.Mode().Perm()),
			Fix: "make it executable (chmod +x), or name another program"}
	}
	return nil
}
