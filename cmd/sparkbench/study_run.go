package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sparkbench/app/fleet"
	"sparkbench/app/hostlist"
	"sparkbench/app/study"
	"sparkbench/app/textsafe"
	"sparkbench/app/workbench"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

// studyRun: sparkbench study run ID|FILE [--llama-dir D] [--notebook P].
func studyRun(args []string, stdout, stderr io.Writer) int {
	if runVerbFor(args, "study") == "capacity" { // a capacity plan or study: one verb runs any kind (run_any.go)
		return capacityRunKnown(args, true, stdout, stderr)
	}
	return studyRunOwn(args, stdout, stderr)
}

// studyRunOwn is `study run` of a throughput or quant study or plan file.
func studyRunOwn(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study run", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	llamaDir := fs.String("llama-dir", "", "folder holding llama-bench (default: the plan's build.dir, $SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)")
	var retry multiFlag
	fs.Var(&retry, "retry", "run this plan leg once more although its failures reached the plan's retries (repeatable); only a leg without results")
	on := fs.String("on", "", "run the plan file as a fleet on these hosts, comma-separated names from the hosts file (local: this machine), one study each (docs/fleet.md)")
	hosts := fs.String("hosts", "", "with --on: the "+hostsFlagHelp)
	trust := fs.Bool("trust-cache", false, "take the models' hashes from the notebook's cache instead of reading the files before the first leg (for models too large to read at every run; journaled, and a model written in place with its size, mtime, inode and ctime put back goes unnoticed)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench study run: want one study id (or name) or one plan file\n")
		return 2
	}
	if *on != "" {
		return studyRunOn(pos[0], *on, *hosts, *llamaDir, *nbFlag, len(retry) > 0, stdout, stderr)
	}
	if *hosts != "" {
		fprintf(stderr, "sparkbench study run: --hosts names the hosts file of --on HOST,…; give --on too, or drop --hosts\n")
		return 2
	}
	nb, code := openStudyNotebook("study run", *nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	ref := pos[0]
	if st, err := os.Stat(ref); err == nil && !st.IsDir() {
		_, sid, code := registerAnyFile(ctx, nb, "study", ref, stdout, stderr)
		if code != 0 {
			return code
		}
		ref = fmt.Sprint(sid)
	}
	k, id, err := workbench.FindStudy(ctx, nb, "study", ref, takesRun)
	if err != nil {
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	}
	if err := refuseImportedRun(ctx, nb, id); err != nil { // importbundle.go
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	}
	return runKind(ctx, nb, k, id, "study run", workbench.RunRequest{LlamaDir: *llamaDir, Retry: retry, TrustCache: *trust}, stdout, stderr)
}

// runKind runs (or resumes) a registered study through its kind (req: the flags' part of the
// request), each event shown as it happens (on a terminal with a status line; the kind's side
// lines on stderr; with req.JSON, the events' JSON on stdout and what the run did on stderr),
// then what the run did. Exit 0 complete; 1 work left, stopped or failed; 2 bad input or a
// refused plan.
func runKind(ctx context.Context, nb *store.Notebook, k *workbench.Kind, id int64, cmd string, req workbench.RunRequest, stdout, stderr io.Writer) int {
	s, err := nb.Study(ctx, id)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 1
	}
	pr := newRunPrinter(stdout)
	req.Terminal, req.Event, req.Bar, req.Hash = pr.tty, pr.line, pr.bar, hashShow(stderr)
	req.Progress = func(line string) { fprintf(stderr, "%s\n", line) }
	info := stdout
	if req.JSON != nil {
		info = stderr
	}
	done, err := k.Run(ctx, nb, s, req)
	pr.close()
	if errors.As(err, new(*workbench.RequestError)) {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 2
	}
	if err != nil {
		return reportRefusal(cmd, err, stderr)
	}
	for _, l := range done.Lines {
		fprintf(info, "%s\n", l)
	}
	for _, l := range done.Notes {
		fprintf(stderr, "%s\n", l)
	}
	if !done.Complete {
		return 1
	}
	return 0
}

// runPrinter shows a run's lines and, on a terminal, its status line redrawn in place below
// them.
type runPrinter struct {
	w      io.Writer
	tty    bool
	barLen int
	view   func(study.Event)
}

func newRunPrinter(w io.Writer) *runPrinter { return &runPrinter{w: w, tty: isTerminal(w)} }

// line prints a line (above the status line, which it clears).
func (p *runPrinter) line(text string) {
	if p.tty && p.barLen > 0 {
		fprintf(p.w, "\r\033[K")
		p.barLen = 0
	}
	// Recorded text (a model path, llama-bench's own output) reaches the terminal escaped.
	fprintf(p.w, "%s\n", textsafe.Escape(text))
}

// bar redraws the status line; done keeps it (the last one).
func (p *runPrinter) bar(text string, done bool) {
	fprintf(p.w, "\r\033[K%s", text)
	p.barLen = len(text)
	if done {
		fprintf(p.w, "\n")
		p.barLen = 0
	}
}

// event shows a throughput run's event as `study run` does (workbench.ThroughputView).
func (p *runPrinter) event(e study.Event) {
	if p.view == nil {
		p.view = workbench.ThroughputView(p.tty, p.line, p.bar)
	}
	p.view(e)
}

func (p *runPrinter) close() {
	if p.tty && p.barLen > 0 {
		fprintf(p.w, "\n")
	}
}

// studyRunOn is `study run PLAN --on HOST,…`: the plan file run as a fleet (fleet run without
// a fleet file), one study per host, then the same cells side by side.
func studyRunOn(plan, on, hostsFile, llamaDir, notebook string, retry bool, stdout, stderr io.Writer) int {
	if retry {
		fprintf(stderr, "sparkbench study run: --retry resumes one study; --on starts a fleet of new ones: give one or the other\n")
		return 2
	}
	if st, err := os.Stat(plan); err != nil || st.IsDir() {
		fprintf(stderr, "sparkbench study run: --on runs a plan file on hosts; %q is not a plan file (a registered study runs where it was registered)\n", plan)
		return 2
	}
	p, err := study.Load(plan)
	if err != nil {
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	}
	var names []string
	for _, h := range strings.Split(on, ",") {
		if h = strings.TrimSpace(h); h != "" {
			names = append(names, h)
		}
	}
	var hf *remote.HostsFile
	if slices.ContainsFunc(names, func(n string) bool { return n != remote.Local }) { // only local: no hosts file needed
		var found hostlist.Found
		if found, err = findHosts(hostsFile, notebook); err != nil {
			fprintf(stderr, "sparkbench study run: %v\n", err)
			return 2
		}
		hf = found.Hosts
	}
	abs, _ := filepath.Abs(plan)
	f, err := fleet.New(p.Name, abs, names, hf)
	if err != nil {
		fprintf(stderr, "sparkbench study run: --on %s: %v\n", on, err)
		return 2
	}
	return runFleet("study run", f, hf, llamaDir, notebook, stdout, stderr)
}
