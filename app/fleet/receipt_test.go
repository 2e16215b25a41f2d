package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/canon"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/store"
)

// The test fleet: three hosts, one study each, tiny model, tg32 and pp32 at depths 0 and 64;
// host-b's plan has no bandwidth figure.
var (
	testHosts = []string{"local", "host-a", "host-b"}
	testBW    = map[string]float64{"local": 0.1, "host-a": 0.05}
	// mean t/s and SD by host, test and depth index
	testTS = map[string]map[string][2][2]float64{
		"local":  {"tg32": {{100, 2}, {90, 2}}, "pp32": {{400, 8}, {380, 8}}},
		"host-a": {"tg32": {{80, 1}, {72, 1}}, "pp32": {{300, 6}, {285, 6}}},
		"host-b": {"tg32": {{50, 0.5}, {45, 0.5}}, "pp32": {{200, 4}, {190, 4}}},
	}
	testDepths = []int64{0, 64}
)

const tinySHA = "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"

func tinyModel(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "models", "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rowTemplate(t *testing.T) benchfmt.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "runner", "benchfmt", "testdata", "tput-t2.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	r, err := benchfmt.ParseJSONLLine(line)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fleetNotebook writes the test fleet into a new notebook: per host a registered plan, a
// study.fleet entry, one leg per depth (pp32 and tg32 rows), a machine and build record.
func fleetNotebook(t *testing.T) (*store.Notebook, Fleet) {
	t.Helper()
	ctx := context.Background()
	nb, err := store.Open(filepath.Join(t.TempDir(), "nb.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nb.Close() })
	rec := store.StudyRecorder{N: nb}
	tmpl := rowTemplate(t)
	model := tinyModel(t)
	const fleetID = "unit fleet 2026-01-02T03:04:05Z"
	for i, h := range testHosts {
		bw := ""
		if g, ok := testBW[h]; ok {
			bw = fmt.Sprintf(`, "bandwidth": {"gbs": %g}`, g)
		}
		plan := fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": "unit @ %s",
  "models": [{"id": "tiny", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 64], "n_prompt": [32], "n_gen": [32], "reps": 5, "threads": [1]},
  "split": "per_depth"%s}`, h, model, tinySHA, bw)
		p, err := study.Decode("unit plan", []byte(plan))
		if err != nil {
			t.Fatal(err)
		}
		p.Defaults()
		sum, canonical, err := p.SHA256()
		if err != nil {
			t.Fatal(err)
		}
		id, _, err := rec.Register(ctx, study.NewStudy{Name: "unit @ " + h, PlanJSON: canonical, PlanSHA256: sum, PlanDir: filepath.Dir(model), PlanFile: "plan.json"})
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.Note(ctx, id, NoteKind, map[string]any{"fleet": fleetID, "host": h, "hosts": testHosts, "base_plan_sha256": "base"}); err != nil {
			t.Fatal(err)
		}
		mid, err := nb.UpsertMachine(ctx, store.Machine{Hostname: h, CPUModel: "cpu of " + h, Cores: 2 + 2*i, GPU: "none on " + h})
		if err != nil {
			t.Fatal(err)
		}
		bid, err := nb.UpsertBuild(ctx, store.Build{Dir: "/b/" + h, VersionLine: "version: 1 (" + h + ")", Commit: "c0ffee" + fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		for d, depth := range testDepths {
			label := fmt.Sprintf("tiny/d%d", depth)
			leg, sink, err := rec.StartLeg(ctx, study.LegStart{StudyID: id, Label: label, Kind: "bench", PlanLeg: label, Role: study.RoleLeg, Attempt: 1, MachineID: mid, BuildID: bid})
			if err != nil {
				t.Fatal(err)
			}
			var rows []benchfmt.Result
			for _, test := range []string{"pp32", "tg32"} {
				r := tmpl
				r.NDepth, r.NThreads = depth, 1
				if test == "pp32" {
					r.NPrompt, r.NGen = 32, 0
				} else {
					r.NPrompt, r.NGen = 0, 32
				}
				v := testTS[h][test][d]
				r.AvgTs, r.StddevTs = v[0], v[1]
				r.SamplesTs = []float64{v[0] - v[1], v[0], v[0] + v[1], v[0], v[0]}
				rows = append(rows, r)
			}
			if err := sink.AddBench(rows...); err != nil {
				t.Fatal(err)
			}
			if err := rec.FinishLeg(ctx, leg, study.LegEnd{Class: "ok", RowStatus: []string{"result", "result"}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.SetStatus(ctx, id, study.StatusComplete); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Find(ctx, nb, "unit fleet")
	if err != nil {
		t.Fatal(err)
	}
	return nb, f
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestFleetReceiptTableRatiosAndLadder: the fleet receipt of a notebook built here has the
// hosts with their fingerprints, every cell on every host with each host ÷ local, one chart
// per figure (pp32 and tg32 of tiny), and the constants ladder by host against values computed
// by hand (host-b has no bandwidth figure and its cell says so); the same notebook gives the
// same bytes, verify accepts the bundle and refuses an edited one.
func TestFleetReceiptTableRatiosAndLadder(t *testing.T) {
	ctx := context.Background()
	nb, f := fleetNotebook(t)
	r, err := ReceiptOf(ctx, nb, f)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "unit fleet" || r.Start != "2026-01-02T03:04:05Z" || r.Baseline != "local" || len(r.Hosts) != 3 {
		t.Fatalf("fleet: %q %q baseline %q, %d hosts", r.Name, r.Start, r.Baseline, len(r.Hosts))
	}
	for i, h := range r.Hosts {
		name := testHosts[i]
		if h.Host != name || h.Study != int64(i+1) || !h.Compared || h.CPU != "cpu of "+name || h.Cores != 2+2*i || h.Devices != "none on "+name ||
			h.LlamaCpp != "version: 1 ("+name+")" || h.FleetEntry.Kind != NoteKind || h.Last.Hash == "" || h.Entries == 0 {
			t.Errorf("host %d: %+v", i, h)
		}
	}
	if len(r.Cells) != 4 {
		t.Fatalf("%d cells, want 4 (pp32 and tg32 at 0 and 64)", len(r.Cells))
	}
	for _, c := range r.Cells {
		d := 0
		if c.Depth == 64 {
			d = 1
		}
		base := testTS["local"][c.Test][d][0]
		for i, v := range c.Values {
			want := testTS[testHosts[i]][c.Test][d]
			// five repetitions: t(0.975, 4) = 2.776 times SD / sqrt(5)
			half := 2.7764451051977987 * want[1] / math.Sqrt(5)
			if v.Host != testHosts[i] || !v.Present || v.Mean != want[0] || v.SD != want[1] || v.Reps != 5 || math.Abs(v.Half-half) > 1e-6 {
				t.Errorf("%s %s d%d %s: %+v, want mean %g ± %g", c.Model, c.Test, c.Depth, testHosts[i], v, want[0], half)
			}
			switch {
			case i == 0 && v.Ratio != nil:
				t.Errorf("the baseline has a ratio: %g", *v.Ratio)
			case i > 0 && (v.Ratio == nil || !near(*v.Ratio, want[0]/base)):
				t.Errorf("%s %s d%d %s ÷ local: %v, want %g", c.Model, c.Test, c.Depth, testHosts[i], v.Ratio, want[0]/base)
			}
		}
	}
	if len(r.Figures) != 2 || r.Figures[0].Test != "pp32" || r.Figures[1].Test != "tg32" {
		t.Fatalf("figures: %+v", r.Figures)
	}
	for _, fig := range r.Figures {
		if len(fig.Chart.Series) != 3 || fig.Chart.Series[1].Label != "host-a" || len(fig.Chart.Series[1].Points) != 2 {
			t.Errorf("figure %s: series %+v", fig.Test, fig.Chart.Series)
		}
	}
	checkLadder(t, r)
	checkReceiptFiles(t, nb, f, r)
}

// checkLadder: efficiency = tg32 at d0 × active bytes per token ÷ (bandwidth × 1e9), one
// member per host; host-b's cell names the missing bandwidth.
func checkLadder(t *testing.T, r *workbench.FleetReceipt) {
	t.Helper()
	hdr, err := gguf.ReadFile(tinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	bytesPerToken := float64(hdr.ActiveBytesPerToken())
	if len(r.Ladder.Rows) != 1 {
		t.Fatalf("ladder rows: %+v", r.Ladder.Rows)
	}
	row := r.Ladder.Rows[0]
	if row.Architecture != "llama" || row.Backend != "CPU" || len(row.Hosts) != 3 {
		t.Fatalf("ladder row: %+v", row)
	}
	for i, h := range row.Hosts[:2] {
		want := testTS[testHosts[i]]["tg32"][0][0] * bytesPerToken / (testBW[testHosts[i]] * 1e9)
		if c := h.Constant; c == nil || c.N != 1 || !near(c.Mean, want) || !near(c.Min, want) || !near(c.Max, want) || c.Members[0].Study != int64(i+1) {
			t.Errorf("ladder on %s: %+v, want efficiency %g (n 1)", h.Host, h.Constant, want)
		}
	}
	if b := row.Hosts[2]; b.Constant != nil || !strings.Contains(b.Missing, "no bandwidth figure (study 3") {
		t.Errorf("ladder on host-b: %+v", b)
	}
	if len(r.Ladder.Unresolved) != 0 {
		t.Errorf("unresolved: %+v", r.Ladder.Unresolved)
	}
}

// checkReceiptFiles: two writes give the same bytes; the Markdown has the table, ratios, two
// charts and the ladder; verify accepts it and refuses an edited Markdown or chart.
func checkReceiptFiles(t *testing.T, nb *store.Notebook, f Fleet, r *workbench.FleetReceipt) {
	t.Helper()
	ctx := context.Background()
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	var first map[string][]byte
	for _, dir := range dirs {
		_, files, err := ExportReceipt(ctx, nb, f, dir)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = files
			continue
		}
		for name, b := range first {
			again, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !bytes.Equal(again, b) {
				t.Errorf("%s differs between two writes (%v)", name, err)
			}
		}
	}
	charts := 0
	for name := range first {
		if strings.HasPrefix(name, "plots/") {
			charts++
		}
	}
	if charts != len(r.Figures) || first["plots/fleet-01.png"] == nil || first["plots/fleet-02.png"] == nil {
		t.Errorf("%d charts for %d figures", charts, len(r.Figures))
	}
	md := string(first[workbench.FileFleetMD])
	for _, want := range []string{"| tiny (ub512 b2048 fa-auto kv-f16/f16 t1 ngl-1) | tg32 | 0 | 100.00 ± 2.48 | 80.00 ± 1.24 | 0.800 | 50.00 ± 0.62 | 0.500 |",
		"| llama | ALL_F32 | CPU | 0.5921 (n=1, 0.5921–0.5921) | 0.9474 (n=1, 0.9474–0.9474) | no bandwidth figure (study 3", "no bandwidth figure (study 3", "![tg32 of tiny against depth, one series per host](plots/fleet-02.png)",
		"| host-a | 2 unit @ host-a | complete | cpu of host-a (4 cores) | none on host-a | version: 1 (host-a) (commit `c0ffee1`) | 0.05 GB/s (entered) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("fleet.md lacks %q:\n%s", want, md)
		}
	}
	verify := func() bool {
		v, err := workbench.VerifyBundle(ctx, workbench.VerifyRequest{Path: dirs[0]})
		if err != nil {
			t.Fatal(err)
		}
		return v.OK()
	}
	if !verify() {
		t.Fatal("verify refused the fleet receipt as written")
	}
	for _, name := range []string{workbench.FileFleetMD, "plots/fleet-01.png"} {
		p := filepath.Join(dirs[0], name)
		if err := os.WriteFile(p, append(bytes.Clone(first[name]), ' '), 0o644); err != nil {
			t.Fatal(err)
		}
		if verify() {
			t.Errorf("verify accepted an edited %s", name)
		}
		if err := os.WriteFile(p, first[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !verify() {
		t.Error("verify refused the restored receipt")
	}
}

// TestFleetReceiptLeavesOutIncompleteMembers: an incomplete member is listed, not compared
// (two hosts side by side); with one complete member the receipt is refused with the count,
// and nothing is written.
func TestFleetReceiptLeavesOutIncompleteMembers(t *testing.T) {
	ctx := context.Background()
	nb, f := fleetNotebook(t)
	setIncomplete := func(id int64) Fleet {
		t.Helper()
		if err := nb.SetStudyStatus(ctx, id, string(study.StatusIncomplete)); err != nil {
			t.Fatal(err)
		}
		f, err := Find(ctx, nb, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	r, err := ReceiptOf(ctx, nb, setIncomplete(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hosts) != 3 || r.Hosts[2].Compared || len(r.Cells) != 4 || len(r.Cells[0].Values) != 2 || len(r.Ladder.Rows[0].Hosts) != 2 ||
		len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "host-b (study 3) is incomplete") {
		t.Fatalf("host-b incomplete: hosts %+v, %d cells, notes %q", r.Hosts, len(r.Cells), r.Notes)
	}
	if md := workbench.FleetMarkdown(r); !strings.Contains(md, "| host-b | 3 unit @ host-b | incomplete (not compared) |") {
		t.Errorf("fleet.md does not list host-b as not compared:\n%s", md)
	}
	out := filepath.Join(t.TempDir(), "r")
	_, _, err = ExportReceipt(ctx, nb, setIncomplete(2), out)
	var few *TooFewError
	if !errors.As(err, &few) || few.Complete != 1 || few.Total != 3 || !strings.Contains(err.Error(), "1 complete member(s) of 3") {
		t.Fatalf("one complete member: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("something was written: %v", err)
	}
}

// TestFleetReceiptHoldsItsFiguresToEachOther: a number edited in fleet.json alone, with
// SHA256SUMS re-made, is refused by verify naming what no longer holds (a mean whose ratio
// was not changed with it, a ladder member's efficiency).
func TestFleetReceiptHoldsItsFiguresToEachOther(t *testing.T) {
	ctx := context.Background()
	nb, f := fleetNotebook(t)
	for _, c := range []struct {
		edit func(r *workbench.FleetReceipt)
		want string
	}{
		{func(r *workbench.FleetReceipt) { r.Cells[2].Values[1].Mean = 81 }, "ratio 0.8 is not its mean ÷ the baseline's"},
		{func(r *workbench.FleetReceipt) {
			r.Cells[2].Values[1].Mean = 81
			x := 0.81
			r.Cells[2].Values[1].Ratio = &x
		}, "the figures are not the charts of the cells"},
		{func(r *workbench.FleetReceipt) { r.Ladder.Rows[0].Hosts[0].Constant.Members[0].Efficiency = 0.6 }, "efficiency 0.6 is not"},
		{func(r *workbench.FleetReceipt) { r.Ladder.Rows[0].Hosts[1].Constant.Mean = 0.5 }, "are not its members'"},
	} {
		r, err := ReceiptOf(ctx, nb, f)
		if err != nil {
			t.Fatal(err)
		}
		files, err := workbench.FleetFiles(r)
		if err != nil {
			t.Fatal(err)
		}
		c.edit(r)
		if files[workbench.FileFleet], err = canon.Marshal(r); err != nil {
			t.Fatal(err)
		}
		files[receipt.FileSums] = receipt.Sums(files)
		rep := workbench.VerifyFleet(files)
		found := false
		for _, p := range rep.Problems {
			found = found || p.File == workbench.FileFleet && strings.Contains(p.What, c.want)
		}
		if !found {
			t.Errorf("want a problem with %s: %q; got %v", workbench.FileFleet, c.want, rep.Problems)
		}
	}
}

// TestForgedFleetFigureFailsVerify: a fleet receipt carries its members' rows and verify
// re-derives every cell from them. A mean changed with its ratio, the charts, fleet.md and
// SHA256SUMS all re-made by the program's own functions (what the figures-to-each-other check
// cannot see) fails, naming the cell and the figure; a receipt of the old layout (no rows)
// still verifies, saying it was held to itself only.
func TestForgedFleetFigureFailsVerify(t *testing.T) {
	ctx := context.Background()
	nb, f := fleetNotebook(t)
	r, err := ReceiptOf(ctx, nb, f)
	if err != nil {
		t.Fatal(err)
	}
	files, err := workbench.FleetFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	if rep := workbench.VerifyFleet(files); !rep.OK() || !strings.Contains(strings.Join(rep.Checked, "\n"), "cells (means, SDs, repetitions, half-widths, ratios) re-derived from the") {
		t.Fatalf("the made receipt: %v %v", rep.Problems, rep.Checked)
	}
	c := &r.Cells[2]
	real := c.Values[1].Mean
	c.Values[1].Mean = real * 1.25
	ratio := c.Values[1].Mean / c.Values[0].Mean
	c.Values[1].Ratio = &ratio
	r.Figures = workbench.FleetFigures(r.Cells, r.Hosts)
	forged, err := workbench.FleetFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	rep := workbench.VerifyFleet(forged)
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.String())
	}
	text := strings.Join(got, "\n")
	want := fmt.Sprintf("fleet.json: cell %s %s d%d [%s]: cells[2].values[1].mean_ts is %s, the rows give %s", c.Model, c.Test, c.Depth, c.Config,
		must(canon.Marshal(c.Values[1].Mean)), must(canon.Marshal(real)))
	if rep.OK() || !strings.Contains(text, want) || !strings.Contains(text, "fleet.md: differs from the one re-made from fleet.json (its figures as the rows it carries give them): line ") {
		t.Errorf("a forged fleet mean: want %q and fleet.md named; got\n%s", want, text)
	}

	r.Rows = nil
	old, err := workbench.FleetFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	if rep := workbench.VerifyFleet(old); !rep.OK() || !rep.SelfConsistencyOnly || !strings.Contains(strings.Join(rep.Limits, "\n"), "an old-layout fleet receipt (made before fleet receipts carried their rows)") {
		t.Errorf("an old-layout receipt: %v %v %v", rep.Problems, rep.Limits, rep.SelfConsistencyOnly)
	}
}

func must(b []byte, err error) string {
	if err != nil {
		panic(err)
	}
	return string(b)
}
