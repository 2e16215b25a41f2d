package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sparkbench/runner/fsread"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/charts"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/plots"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/benchfmt"
	"sparkbench/store"
)

// plotUsage is the line for `sparkbench help`.
const plotUsage = "plot STUDY|--data FILE.json --kind K --out FILE.png|svg|pdf [--metric tg|pp|tg128] [--line 70] [--width PX --height PX --dpi N]"

// cmdPlot draws one chart to a PNG, SVG or PDF file. The chart's input comes from a throughput
// STUDY in the notebook (kinds depth, repeatability, ubatch, ngl, energy), a capacity study (envelope,
// latency, slots; with a serving block serving_latency, serving_goodput, serving_search) or from
// --data, a JSON file of the kind's input type (docs/plots.md; every kind).
func cmdPlot(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plot", stderr)
	var kinds []string
	for _, k := range plots.Kinds() {
		kinds = append(kinds, string(k))
	}
	kind := fs.String("kind", "", "chart kind: "+strings.Join(kinds, "|"))
	data := fs.String("data", "", "JSON file with the chart's input (see docs/plots.md)")
	out := fs.String("out", "", "output file; the extension picks the format: .png, .svg or .pdf")
	width := fs.Int("width", 800, "width in pixels (1/96 inch for SVG and PDF)")
	height := fs.Int("height", 500, "height in pixels (1/96 inch for SVG and PDF)")
	dpi := fs.Int("dpi", plots.ScreenDPI, "PNG resolution: 192 draws twice as many pixels at the same size")
	metric := fs.String("metric", "", "with STUDY: the test to chart, tg, pp or exact (tg128); default tg (pp for ubatch)")
	line := fs.Float64("line", 0, "with STUDY and --kind depth: a reference line in t/s (e.g. 70), its crossings marked")
	nbFlag := fs.String("notebook", "", "with STUDY: notebook file")
	candidate := fs.String("candidate", "", "with a capacity STUDY: the candidate of an envelope or latency chart (default: the first)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	fail := func(code int, format string, a ...any) int {
		fprintf(stderr, "sparkbench plot: "+format+"\n", a...)
		return code
	}
	switch {
	case len(pos) > 1:
		return fail(2, "takes at most one STUDY (got %q)", strings.Join(pos, " "))
	case len(pos) == 1 && *data != "":
		return fail(2, "give a STUDY or --data FILE.json, not both")
	case *kind == "":
		return fail(2, "--kind is required: one of %s", strings.Join(kinds, ", "))
	case len(pos) == 0 && *data == "":
		return fail(2, "give a STUDY (id or name) or --data FILE.json with the chart's input")
	case *out == "":
		return fail(2, "--out FILE.png|svg|pdf is required")
	case *width < plots.MinWidthPx || *height < plots.MinHeightPx:
		return fail(2, "--width %d --height %d is too small: at least %d×%d pixels", *width, *height, plots.MinWidthPx, plots.MinHeightPx)
	case *width > 20000 || *height > 20000:
		return fail(2, "--width %d --height %d is too large: at most 20000 pixels a side", *width, *height)
	case *dpi < 24 || *dpi > 1200:
		return fail(2, "--dpi %d is out of range: give 24 to 1200", *dpi)
	}
	format, err := plots.FormatOf(*out)
	if err != nil {
		return fail(2, "%v", err)
	}
	if _, err := plots.New(plots.Kind(*kind)); err != nil {
		return fail(2, "%v", err)
	}

	var chart plots.Chart
	source := *data
	if len(pos) == 1 {
		source = "study " + pos[0]
		if chart, err = studyChart(pos[0], plots.Kind(*kind), *metric, *line, *candidate, *nbFlag); err != nil {
			return fail(2, "%v", err)
		}
	} else {
		b, err := fsread.ReadFile(*data, 256<<20, "chart data") // a FIFO is refused, not waited on
		if err != nil {
			return fail(2, "%v", err)
		}
		chart, err = plots.Decode(plots.Kind(*kind), bytes.NewReader(b))
		if err != nil {
			return fail(2, "%s: %v; see docs/plots.md for the %s input", *data, err, *kind)
		}
	}
	p, err := chart.Plot()
	if err != nil {
		return fail(2, "%s: %v", source, err)
	}
	for _, n := range plots.Notes(p) {
		fprintf(stderr, "sparkbench plot: note: %s\n", n)
	}

	// Write beside the target and rename, so a failed export leaves no half-written file.
	f, err := atomicfile.Create(*out, 0o644)
	if err != nil {
		return fail(1, "%v", err) // "create OUT: …"
	}
	if err := plots.ExportDPI(p, format, plots.Pixels(*width), plots.Pixels(*height), *dpi, f); err != nil {
		f.Abort()
		return fail(1, "write %s: %v", *out, err)
	}
	if err := f.Commit(); err != nil {
		return fail(1, "write %s: %v", *out, err)
	}
	size := fmt.Sprintf("%d×%d px", *width, *height)
	if format == plots.PNG && *dpi != plots.ScreenDPI {
		size = fmt.Sprintf("%d×%d px at %d dpi", *width**dpi/plots.ScreenDPI, *height**dpi/plots.ScreenDPI, *dpi)
	}
	fprintf(stdout, "wrote %s (%s chart, %s, %s)\n", *out, *kind, format, size)
	return 0
}

// studyChart builds a chart from a study in the notebook: a throughput study's depth,
// repeatability or ubatch chart, or an assembled capacity study's envelope, latency or slots.
func studyChart(ref string, kind plots.Kind, metric string, line float64, candidate, nbFlag string) (plots.Chart, error) {
	path, err := notebookPath(nbFlag)
	if err != nil {
		return nil, err
	}
	nb, err := store.OpenWith(path, store.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer nb.Close()
	ctx := context.Background()
	s, err := nb.FindStudy(ctx, ref)
	if err != nil {
		return nil, err
	}
	if s.Kind == store.StudyCapacity || s.Kind == store.StudyConcurrency {
		a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, s.ID)
		if err != nil {
			return nil, err
		}
		if a.Result == nil {
			return nil, fmt.Errorf("study %d: %s", s.ID, a.Problem)
		}
		return receipt.CapacityChart(a.Result, kind, candidate)
	}
	id, err := findStudy(ctx, nb, ref)
	if err != nil {
		return nil, err
	}
	rep, err := study.Show(ctx, store.StudyRecorder{N: nb}, id)
	if err != nil {
		return nil, err
	}
	if metric == "" {
		metric = "tg"
		if kind == plots.KindUbatch {
			metric = "pp"
		}
	}
	if err := charts.CheckMetric(rep, metric); err != nil {
		return nil, err
	}
	// The title names the build and machine the rows came from, as the receipt's charts do.
	stored, err := store.StudyRecorder{N: nb}.Rows(ctx, id)
	if err != nil {
		return nil, err
	}
	rows := make([]benchfmt.Result, 0, len(stored))
	for _, r := range stored {
		rows = append(rows, r.Result)
	}
	switch kind {
	case plots.KindDepth:
		if line == 0 { // the line the study's crossing prediction names, as on its receipt
			line = charts.CrossingLine(rep, metric)
		}
		ch, err := charts.Depth(rep, metric, line)
		if err == nil {
			ch.Meta = charts.MetaFromRows(ch.Meta, rows)
		}
		return ch, err
	case plots.KindRepeatability:
		ch, err := charts.Repeatability(rep, metric)
		if err == nil {
			ch.Meta = charts.MetaFromRows(ch.Meta, rows)
		}
		return ch, err
	case plots.KindUbatch:
		ch, err := charts.Ubatch(rep, metric)
		if err == nil {
			ch.Meta = charts.MetaFromRows(ch.Meta, rows)
		}
		return ch, err
	case plots.KindNGL:
		ch, err := charts.NGL(rep, metric)
		if err == nil {
			ch.Meta = charts.MetaFromRows(ch.Meta, rows)
		}
		return ch, err
	case plots.KindEnergy: // a study with telemetry samples (docs/telemetry.md)
		ch, err := charts.Energy(rep, metric)
		if err == nil {
			ch.Meta = charts.MetaFromRows(ch.Meta, rows)
		}
		return ch, err
	}
	return nil, fmt.Errorf("--kind %s charts a capacity study; study %d is a throughput study: depth, repeatability, ubatch, ngl or energy", kind, id)
}
