package main

import (
	"context"
	"io"
	"os/signal"
	"path/filepath"
	"sync"

	"sparkbench/app/fleet"
	"sparkbench/app/study"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

const fleetUsage = "fleet run FLEET [--hosts F] [--llama-dir D] [--notebook P]"

func cmdFleet(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "list" || args[0] == "show" || args[0] == "receipt") {
		return cmdFleetRead(args[0], args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "run" {
		fprintf(stderr, "usage: sparkbench %s | %s\n", fleetUsage, fleetReadUsage)
		return 2
	}
	fs := newFlagSet("fleet run", stderr)
	hosts := fs.String("hosts", "", hostsFlagHelp)
	llamaDir := fs.String("llama-dir", "", "this machine's llama.cpp folder, for the local member")
	notebook := fs.String("notebook", "", "notebook file (default: $SPARKBENCH_NOTEBOOK, then the user's data folder)")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench fleet run: give one fleet file (docs/fleet.md)\n")
		return 2
	}
	found, err := findHosts(*hosts, *notebook)
	if err != nil {
		fprintf(stderr, "sparkbench fleet run: %v\n", err)
		return 2
	}
	hf := found.Hosts
	f, err := fleet.Load(pos[0], hf)
	if err != nil {
		fprintf(stderr, "sparkbench fleet run: %v\n", err)
		return 2
	}
	return runFleet("fleet run", f, hf, *llamaDir, *notebook, stdout, stderr)
}

// runFleet runs a fleet (fleet run, and study run --on) and prints each member's study and
// the same cells side by side.
func runFleet(verb string, f *fleet.File, hf *remote.HostsFile, llamaDir, notebook string, stdout, stderr io.Writer) int {
	path, err := notebookPath(notebook)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return 1
	}
	// SIGHUP and SIGTERM stop the run as Ctrl-C does (its legs stopped here and on the hosts,
	// each study halted with its record), not kill it with its studies left running.
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	nb, err := store.Open(path)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return 1
	}
	defer nb.Close()
	// the members' plans (their names say the host) are written beside the notebook
	dataDir := filepath.Dir(path)
	var mu sync.Mutex
	on := func(host string, ev study.Event) {
		if ev.Kind == study.EventLegFinished {
			mu.Lock()
			fprintf(stderr, "%s: leg %s finished\n", host, ev.Leg)
			mu.Unlock()
		}
	}
	id, members, err := fleet.Run(ctx, nb, fleet.Request{File: f, Hosts: hf, LlamaDir: llamaDir, DataDir: dataDir, OnEvent: on})
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return 1
	}
	fprintf(stdout, "fleet %q: %d hosts\n", id, len(members))
	code := 0
	for _, m := range members {
		fprintf(stdout, "  %-10s study %d  %s", m.Host, m.StudyID, m.Status)
		if m.Clock != nil && m.Clock.FarOff() {
			fprintf(stdout, "  (clock far off: %s)", m.Clock.Skew)
		}
		if m.Err != "" {
			fprintf(stdout, "  %s", m.Err)
		}
		fprintf(stdout, "\n")
		if m.Status != string(study.StatusComplete) {
			code = 1
		}
	}
	rows, err := fleet.Compare(ctx, nb, members)
	if err != nil {
		fprintf(stderr, "sparkbench %s: compare: %v\n", verb, err)
		return 1
	}
	fleet.WriteTable(stdout, members, rows)
	return code
}
