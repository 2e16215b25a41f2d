package receipt

import (
	"fmt"
	"slices"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/vocab"
)

// A throughput receipt's launch wrapper: each wrapped leg's own (canonical) command line and
// the command line it was launched as, apart, with the CPU affinity read from llama-bench's
// process. Legs without a launch record add nothing to study.json or receipt.md.

// setLaunch fills a wrapped leg's commands from its record (argv as leg.json holds it, so
// redacted when the bundle is) and the wrapper its study.leg_launch entry journaled.
func setLaunch(rl *ReceiptLeg, argv []string) {
	if rl.Launch == nil {
		return
	}
	rl.Command = slices.Clone(argv)
	if rl.Command == nil {
		rl.Command = []string{}
	}
	rl.LaunchedAs = append(slices.Clone(rl.Launch.Wrapper), argv...)
}

// shellWord writes one argument so that a shell would read it back as one word: bare when it
// holds only safe characters, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%~") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellLine(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = shellWord(a)
	}
	return strings.Join(words, " ")
}

// affinityCells are a launch record's CPUs allowed, memory nodes and process cells: what
// /proc said of the tool's process, or why nothing was read.
func affinityCells(a *vocab.Affinity, why string) (cpus, mems, proc string) {
	cpus, mems, proc = cell(why), "—", "—"
	if a != nil {
		cpus, mems = code(a.CPUs), code(a.Mems)
		if a.Mems == "" {
			mems = "—"
		}
		how := "exec'd by the wrapper"
		if a.How == vocab.LaunchChild {
			how = "the wrapper's child"
		}
		proc = code(fmt.Sprintf("PID %d", a.PID)) + " · " + how
	}
	return cpus, mems, proc
}

// tmLaunch writes the launch wrapper section: nothing when no leg has a launch record.
func tmLaunch(w *mdWriter, d *ThroughputStudy, plan *study.Plan) {
	var rows [][]string
	for _, l := range d.Legs {
		if l.Launch == nil {
			continue
		}
		label := l.Label
		if l.Role != study.RoleLeg {
			label += " [" + l.Role + "]"
		}
		cpus, mems, proc := affinityCells(l.Launch.Affinity, l.Launch.AffinityError)
		rows = append(rows, []string{code(fmt.Sprint(l.ID)), cell(label), code(shellLine(l.Command)), code(shellLine(l.LaunchedAs)), cpus, mems, proc})
	}
	if len(rows) == 0 {
		return
	}
	w.heading(2, "Launch wrapper")
	if len(plan.Build.LaunchWrapper) > 0 {
		w.line("The plan starts every leg and canary under the launch wrapper %s (%s).", code(shellLine(plan.Build.LaunchWrapper)), code("build.launch_wrapper"))
	} else {
		w.line("These legs were started under a launch wrapper.")
	}
	w.line("Each leg's canonical command is its own command line, unchanged: the one its %s entry and %s record. It was launched as the wrapper, its program resolved on %s, followed by that command line, argv only (no shell). The affinity is what %s said of llama-bench's own process while it ran (the same process when the wrapper exec'd it, else the wrapper's child in the leg's process group).",
		code("leg.started"), code(LegFile), code("PATH"), code("/proc/PID/status"))
	w.blank()
	w.table([]string{"Leg", "Label", "Canonical command", "Launched as", "CPUs allowed", "Memory nodes", "llama-bench process"}, "rllllll", rows)
}
