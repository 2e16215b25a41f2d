package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	fyneapp "fyne.io/fyne/v2/app"

	"sparkbench/app"
	"sparkbench/app/kinds"
	"sparkbench/assets"
	"sparkbench/store"
	"sparkbench/ui"
)

func cmdGUI(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("gui", stderr)
	llamaDir := fs.String("llama-dir", "", "folder holding llama-bench and llama-server")
	notebook := fs.String("notebook", "", "notebook file")
	section := fs.String("section", "last", "section to open: "+strings.Join(ui.Sections, ", ")+", or last (the one shown when the window last closed)")
	runDemo := fs.Bool("run-demo", false, "run the demo study as soon as the window opens")
	runID := fs.Int64("run", 0, "run (or resume) this study as soon as the window opens")
	showID := fs.Int64("study", 0, "open the Studies section on this study (without running it)")
	compareIDs := fs.String("compare", "", "open the Compare section on these studies, compared: ID,ID[,ID…] (the oldest, the lowest ID, is the baseline)")
	newKind := fs.String("new-kind", "throughput", "kind of study the New study section starts with: "+strings.Join(kinds.All, ", "))
	if pos, err := parseInterspersed(fs, args); err != nil {
		return usageError(err)
	} else if len(pos) > 0 {
		fprintf(stderr, "sparkbench: unexpected argument %q: the window takes flags only (`sparkbench gui --help`); `sparkbench help` lists the commands\n", pos[0])
		return 2
	}
	if !slices.Contains(kinds.All, *newKind) {
		fprintf(stderr, "sparkbench: --new-kind %q: want throughput, capacity or concurrency, or quant for a quantization ladder\n", *newKind)
		return 2
	}
	if *section != "last" && !slices.Contains(ui.Sections, *section) {
		fprintf(stderr, "sparkbench: --section %q: want one of %s, or last\n", *section, strings.Join(ui.Sections, ", "))
		return 2
	}
	compare, err := parseIDList(*compareIDs)
	if err != nil {
		fprintf(stderr, "sparkbench: --compare %q: %v\n", *compareIDs, err)
		return 2
	}
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fprintf(stderr, "sparkbench: no display ($DISPLAY and $WAYLAND_DISPLAY are unset); run it on a desktop, or under Xvfb: xvfb-run -a sparkbench (every feature is also a sub-command: sparkbench help)\n")
		return 2
	}
	if path := os.Getenv("SPARKBENCH_CPUPROFILE"); path != "" {
		// Diagnostics (scripts/gui-cost.sh): the window's own CPU profile, written when the
		// app is stopped by SIGTERM or Ctrl-C.
		if stop, err := startCPUProfile(path); err != nil {
			fprintf(stderr, "sparkbench: SPARKBENCH_CPUPROFILE: %v\n", err)
		} else {
			defer stop()
		}
	}
	nbPath, nbErr := notebookPath(*notebook)
	// The window's llama.cpp folder: the Bench section's choice, else --llama-dir. Runs start
	// after the window is built, so wb is set by then.
	var wb *ui.Workbench
	folder := func() string {
		if wb == nil {
			return *llamaDir
		}
		return wb.Bench.LlamaDir()
	}
	var lib app.ModelLibrary
	var studies ui.StudyService
	var registrar ui.Registrar
	var notebookSvc ui.NotebookService
	var capacitySvc ui.CapacityService
	var quantSvc ui.QuantService
	var compareSvc ui.CompareService
	var overviewSvc ui.OverviewService
	var hostsSvc ui.HostsService
	if nbErr == nil {
		nb, err := store.Open(nbPath)
		if err != nil {
			nbErr = err // shown in the Bench section with its fix; the rest of the window works
		} else {
			defer nb.Close()
			lib = notebookLibrary{nb}
			svc := studyService{nb: nb, llamaDir: *llamaDir, folder: folder}
			studies, registrar = svc, svc
			notebookSvc = notebookService{nb}
			capacitySvc = capacityService{nb: nb, llamaDir: *llamaDir, folder: folder}
			quantSvc = quantService{nb: nb, llamaDir: *llamaDir, folder: folder}
			compareSvc = compareService{nb}
			overviewSvc = newOverviewService(nb) // one for the window's life: it keeps what it read
			hostsSvc = hostsService{nb: nb}
		}
	}
	a := fyneapp.NewWithID(app.AppID)
	a.SetIcon(assets.Icon)
	wb = ui.NewWorkbench(a, ui.Deps{
		LlamaDir: *llamaDir,
		Doctor: func(ctx context.Context, dir string) app.DoctorReport {
			// Telemetry: the Bench machine card lists the samplers as doctor --telemetry does.
			return app.Doctor(ctx, app.DoctorOptions{LlamaDir: dir, NotebookPath: nbPath, NotebookErr: nbErr, Telemetry: true})
		},
		Library:   lib,
		Studies:   studies,
		Registrar: registrar,
		Notebook:  notebookSvc,
		Capacity:  capacitySvc,
		Quant:     quantSvc,
		Compare:   compareSvc,
		Overview:  overviewSvc,
		Hosts:     hostsSvc,
	})
	wb.ShowSection(*section)
	wb.Kind.SetSelected(*newKind)
	switch {
	case *runID > 0:
		wb.Studies.RunOnLoad(*runID)
	case *runDemo:
		wb.Studies.RunOnLoad(-1)
	case *showID > 0:
		wb.ShowSection("studies")
		wb.Studies.ShowOnLoad(*showID)
	case len(compare) > 0:
		wb.ShowSection("compare")
		wb.Compare.CompareOnLoad(compare)
	}
	wb.Window.ShowAndRun()
	return 0
}

// parseIDList reads "3,4[,5…]": two or more study IDs ("" is none).
func parseIDList(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ids []int64
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%q is not a study ID: write the IDs as 3,4", strings.TrimSpace(f))
		}
		ids = append(ids, id)
	}
	if len(ids) < 2 {
		return nil, fmt.Errorf("a comparison needs two or more studies, e.g. --compare 3,4")
	}
	return ids, nil
}

// startCPUProfile profiles the process into path until stop, or until SIGTERM or Ctrl-C
// (then the profile is written and the process exits 0).
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		stop()
		os.Exit(0)
	}()
	return stop, nil
}
