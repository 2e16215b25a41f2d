package study

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"sparkbench/runner/vocab"
)

// A plan's launch wrapper (build.launch_wrapper): a program and its arguments every leg and
// canary is started under, the leg's command line appended (docs/plans.md).

// NoteLegLaunch journals how a leg run under the plan's launch wrapper was started and the
// CPU affinity read from llama-bench's process (LegLaunch).
const NoteLegLaunch = "study.leg_launch"

// LegLaunch is a NoteLegLaunch entry's payload: the notebook leg and the runner's launch
// record (wrapper as run, launched as, affinity or why none was read).
type LegLaunch struct {
	Leg   int64  `json:"leg"`
	Label string `json:"label"`
	vocab.Launch
}

// ReportLaunch is a leg's launch in the report: the wrapper as run (its program resolved on
// PATH) and the affinity in force for llama-bench (the whole command line is the wrapper
// followed by the leg's own).
type ReportLaunch struct {
	Wrapper       []string        `json:"wrapper"`
	Affinity      *vocab.Affinity `json:"affinity,omitempty"`
	AffinityError string          `json:"affinity_error,omitempty"`
}

// KnownWrappers are the programs a plan may use as its launch wrapper without a warning: each
// takes the command to run as its remaining arguments (argv, no shell) and replaces itself
// with it, so llama-bench stays the leg's process, in its pty and process group.
var KnownWrappers = []string{"chrt", "env", "ionice", "nice", "numactl", "prlimit", "setpriv", "systemd-run", "taskset"}

// refusedWrappers cannot run a leg's command line as argv, or would take the tool out of the
// leg's process group and pty.
var refusedWrappers = map[string]string{
	"sg": "sg passes its command to /bin/sh as one string and drops the arguments after it, so the leg's command line would not be what runs; " +
		"run sparkbench itself under sg (sg GROUP -c 'sparkbench study run …'), or add the user to the group",
	"su":     "su runs its command through a shell as one string; sparkbench runs argv only",
	"sudo":   "sudo may ask for a password on the leg's terminal and starts the tool outside sparkbench's view; run sparkbench itself under sudo if it must",
	"setsid": "setsid forks when it leads a process group (every leg does) and moves llama-bench into a new session: it could no longer be stopped, timed or reaped with the leg",
	"ssh":    "ssh runs the command on another host through a shell; use bench hosts (docs/fleet.md)",
	"nohup":  "nohup detaches the tool from the leg's terminal (SIGHUP ignored, output to nohup.out)",
}

var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"}

// CheckLaunchWrapper checks a plan's launch wrapper at path (e.g. "build.launch_wrapper"): no
// empty list or argument, no control character, a program that resolves to an executable
// file (vocab.ResolveProgram: on PATH, or an absolute path), none of the programs that cannot
// run argv in the leg's group; a program outside KnownWrappers is a warning. nil: no wrapper.
func CheckLaunchWrapper(path string, w []string) []Problem {
	if w == nil {
		return nil
	}
	var out []Problem
	errf := func(at, format string, a ...any) {
		out = append(out, Problem{Path: at, Severity: SevError, Msg: fmt.Sprintf(format, a...)})
	}
	if len(w) == 0 {
		errf(path, "an empty list; give the wrapper's program and its arguments (e.g. [\"taskset\", \"-c\", \"0\"]), or leave the field out")
		return out
	}
	for i, a := range w {
		at := fmt.Sprintf("%s[%d]", path, i)
		if a == "" {
			errf(at, "an empty string; every element is one argument of the wrapper (argv, no shell): drop it or give the argument")
		} else if pr := TextProblem(at, a, true); pr != nil {
			out = append(out, *pr)
		}
	}
	if len(out) > 0 {
		return out
	}
	at := path + "[0]"
	name := filepath.Base(w[0])
	switch {
	case refusedWrappers[name] != "":
		errf(at, "%s: refused: %s", w[0], refusedWrappers[name])
		return out
	case slices.Contains(shells, name):
		errf(at, "%s: refused: a shell; sparkbench runs the leg's command line as argv, never through a shell string (name the wrapper program itself)", w[0])
		return out
	case name == "systemd-run" && !slices.Contains(w[1:], "--scope"):
		errf(at, "%s: refused without --scope: it would start llama-bench as a service, outside the leg's pty and process group (its output, exit and stop would be lost); add \"--scope\"", w[0])
		return out
	}
	if _, err := vocab.ResolveProgram(w[0]); err != nil {
		errf(at, "%v", err)
		return out
	}
	if !slices.Contains(KnownWrappers, name) {
		out = append(out, Problem{Path: at, Severity: SevWarning, Msg: fmt.Sprintf("%s is not a known launch wrapper (%s): sparkbench runs it with the leg's command line appended and records what it finds; "+
			"check that it runs its arguments as a command, without a shell and in the foreground", w[0], strings.Join(KnownWrappers, ", "))})
	}
	return out
}

// reportLaunches sets each leg's launch from the journal's NoteLegLaunch entries.
func reportLaunches(l *Loaded, legs []ReportLeg) {
	by := map[int64]*ReportLaunch{}
	for _, n := range l.St.Notes {
		if n.Kind != NoteLegLaunch {
			continue
		}
		var ll LegLaunch
		if json.Unmarshal(n.Payload, &ll) != nil || ll.Leg == 0 {
			continue
		}
		w := ll.Wrapper
		if w == nil {
			w = []string{}
		}
		by[ll.Leg] = &ReportLaunch{Wrapper: w, Affinity: ll.Affinity, AffinityError: ll.AffinityError}
	}
	for i := range legs {
		if r, ok := by[legs[i].ID]; ok && legs[i].ID != 0 {
			legs[i].Launch = r
		}
	}
}

// LaunchText says in words what a leg's launch record holds: the affinity read, or why none.
func LaunchText(r *ReportLaunch) string {
	a := r.Affinity
	if a == nil {
		return "affinity " + r.AffinityError
	}
	how := "the wrapper exec'd llama-bench"
	if a.How == vocab.LaunchChild {
		how = "llama-bench ran as the wrapper's child"
	}
	s := fmt.Sprintf("CPUs allowed %s", a.CPUs)
	if a.Mems != "" {
		s += fmt.Sprintf(", memory nodes %s", a.Mems)
	}
	return s + fmt.Sprintf(" (llama-bench PID %d: %s)", a.PID, how)
}

// writeLaunches prints each wrapped leg's launch (nothing for a plan without a wrapper).
func writeLaunches(w io.Writer, r *Report) {
	head := false
	for _, l := range r.Legs {
		if l.Launch == nil {
			continue
		}
		if !head {
			fprintf(w, "\nlaunch wrapper (each leg ran as the wrapper followed by its own command line)\n")
			head = true
		}
		fprintf(w, "  %s: %s · %s\n", l.Label, strings.Join(l.Launch.Wrapper, " "), LaunchText(l.Launch))
	}
}
