package overview

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"sparkbench/app/study"
	"sparkbench/store"
)

// countingStore is the notebook's Source, SummaryStore included, counting the studies whose
// rows were read.
type countingStore struct {
	notebookSource
	rows atomic.Int64
}

func (c *countingStore) Rows(ctx context.Context, id int64) ([]study.StoredRow, error) {
	c.rows.Add(1)
	return c.notebookSource.Rows(ctx, id)
}

// summaryNotebook is a notebook of three finished bench studies, a throughput study without a
// plan (left out) and, when running, a study with a running leg (no version: never summarised).
func summaryNotebook(t *testing.T, running bool) (*store.Notebook, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notebook.db")
	nb, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	addBenchStudies(t, nb, 3)
	ctx := context.Background()
	if _, err := nb.CreateStudy(ctx, store.Study{Name: "no plan", Kind: store.StudyThroughput, Status: store.StatusComplete}); err != nil {
		t.Fatal(err)
	}
	if running {
		addBenchStudiesFrom(t, nb, 3, 1) // study 5: the same plan as study 1 would be study 1
		rec := store.StudyRecorder{N: nb}
		if _, _, err := rec.StartLeg(ctx, study.LegStart{StudyID: 5, Label: "m0/d0", Kind: "bench", PlanLeg: "m0/d0", Role: study.RoleLeg, Attempt: 2}); err != nil {
			t.Fatal(err)
		}
	}
	return nb, path
}

var summaryOpts = Options{Line: 85, Test: "tg128"}

// openWith opens a new Service over src; the overview and its JSON.
func openWith(t *testing.T, src Source, opts Options) (*Overview, string) {
	t.Helper()
	ov, err := (&Service{Src: src, ReadHeader: benchHeader}).Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ov.Options.FromRows = false // compared with the others'
	b, _ := json.Marshal(ov)
	return ov, string(b)
}

func fromRows(o Options) Options { o.FromRows = true; return o }

// TestSummariesGiveTheRowsOverview: a cold open of a writable notebook reads the rows and keeps
// a summary of each finished study (none of the running one); a new Service then reads only the
// running study's rows and computes the same overview (reflect.DeepEqual) as one from the rows.
func TestSummariesGiveTheRowsOverview(t *testing.T) {
	nb, _ := summaryNotebook(t, true)
	defer nb.Close()
	ctx := context.Background()
	first := &countingStore{notebookSource: notebookSource{nb}}
	want, _ := openWith(t, first, summaryOpts)
	if first.rows.Load() != 4 { // the study without a plan is not read
		t.Fatalf("first open read %d studies' rows, want 4", first.rows.Load())
	}
	sums, err := nb.StudySummaries(ctx, SummaryKind)
	if err != nil || len(sums) != 4 || sums[5] != nil {
		t.Fatalf("summaries kept for %d studies (want 1–4, not the running 5): %v", len(sums), err)
	}
	second := &countingStore{notebookSource: notebookSource{nb}}
	got, _ := openWith(t, second, summaryOpts)
	if second.rows.Load() != 1 {
		t.Errorf("open with summaries read %d studies' rows, want 1 (the running one)", second.rows.Load())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("overview from summaries differs from the rows'")
	}
	rows := &countingStore{notebookSource: notebookSource{nb}}
	if again, _ := openWith(t, rows, fromRows(summaryOpts)); !reflect.DeepEqual(again, want) || rows.rows.Load() != 4 {
		t.Errorf("FromRows read %d studies' rows, same overview %v", rows.rows.Load(), reflect.DeepEqual(again, want))
	}
	// 20 badge rows: four models' (the running study 5 benches m3)
	if len(want.Studies) != 5 || want.Studies[3].Skipped == "" || len(want.Badges.Rows) != 20 {
		t.Errorf("overview: %d studies, %d badge rows", len(want.Studies), len(want.Badges.Rows))
	}
}

// TestStaleSummaryIsNotRead: a summary of another version than the study's current one (here
// a decodable one with a made-up value, and the one kept before the study gained a leg) is
// not used: the study is read from its rows, and the overview is the rows'.
func TestStaleSummaryIsNotRead(t *testing.T) {
	nb, _ := summaryNotebook(t, false)
	defer nb.Close()
	ctx := context.Background()
	openWith(t, Notebook(nb), summaryOpts) // keeps the summaries
	fake := cached{series: []Series{{Model: "m0", File: "m0.gguf", SHA256: strings.Repeat("0", 64), Test: "tg128", Backend: "CPU", Config: "fake",
		Points: []Cell{{Study: 1, Leg: "m0/d0", Row: "leg 1 seq 1", TS: 12345}}}}}
	if err := nb.PutStudySummary(ctx, 1, SummaryKind, "complete/4/old", encodeSummary(fake)); err != nil {
		t.Fatal(err)
	}
	rec := store.StudyRecorder{N: nb}
	leg, _, err := rec.StartLeg(ctx, study.LegStart{StudyID: 2, Label: "canary after m1/d0", Kind: "canary", Role: "canary", Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.FinishLeg(ctx, leg, study.LegEnd{Class: "ok", RowStatus: []string{}}); err != nil {
		t.Fatal(err)
	}
	src := &countingStore{notebookSource: notebookSource{nb}}
	got, js := openWith(t, src, summaryOpts)
	if src.rows.Load() != 1 {
		t.Errorf("read %d studies' rows, want 1 (study 2, changed)", src.rows.Load())
	}
	if want, _ := openWith(t, Notebook(nb), fromRows(summaryOpts)); !reflect.DeepEqual(got, want) || strings.Contains(js, "12345") || strings.Contains(js, "fake") {
		t.Errorf("overview with a stale summary differs from the rows'")
	}
	sums, _ := nb.StudySummaries(ctx, SummaryKind)
	if len(sums[2]) != 2 || len(sums[1]) != 2 {
		t.Errorf("study 2 has %d summaries (want the old and the new version), study 1 %d", len(sums[2]), len(sums[1]))
	}
}

// TestReadOnlyNotebookWithoutSummaries: a read-only notebook with no summaries opens from its
// rows, twice, and nothing is written to it.
func TestReadOnlyNotebookWithoutSummaries(t *testing.T) {
	nb, _ := summaryNotebook(t, false)
	_, want := openWith(t, &countingStore{notebookSource: notebookSource{nb}}, fromRows(summaryOpts))
	ctx := context.Background()
	if sums, _ := nb.StudySummaries(ctx, SummaryKind); len(sums) != 4 {
		t.Fatalf("writable notebook: %d summaries", len(sums))
	}
	nb.Close()
	fresh, path2 := summaryNotebook(t, false)
	fresh.Close()
	ro, err := store.OpenWith(path2, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		src := &countingStore{notebookSource: notebookSource{ro}}
		if _, got := openWith(t, src, summaryOpts); got != want || src.rows.Load() != 3 {
			t.Errorf("read-only open %d read %d studies' rows (want 3), same overview %v", i, src.rows.Load(), got == want)
		}
	}
	if err := Summarize(ctx, ro, 1); err == nil {
		t.Error("Summarize wrote to a read-only notebook")
	}
	ro.Close()
	rw, err := store.Open(path2)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if sums, err := rw.StudySummaries(ctx, SummaryKind); err != nil || len(sums) != 0 {
		t.Errorf("the read-only opens wrote %d summaries (%v)", len(sums), err)
	}
}

// TestUndecodableSummaryIsIgnored: a summary of the current version that does not decode (cut
// short, or not one at all) is passed over: the study is read from its rows, without an error.
func TestUndecodableSummaryIsIgnored(t *testing.T) {
	nb, _ := summaryNotebook(t, false)
	defer nb.Close()
	ctx := context.Background()
	refs, err := Notebook(nb).ThroughputStudies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ver := map[int64]string{}
	for _, r := range refs {
		ver[r.ID] = r.Version
	}
	good := encodeSummary(cached{series: []Series{{Model: "m", Points: []Cell{{Leg: "l", Row: "r", TS: 1}}}}})
	for id, payload := range map[int64][]byte{1: {0xff, 0xff}, 2: good[:len(good)-3], 3: append(good, 0)} {
		if err := nb.PutStudySummary(ctx, id, SummaryKind, ver[id], payload); err != nil {
			t.Fatal(err)
		}
	}
	src := &countingStore{notebookSource: notebookSource{nb}}
	got, _ := openWith(t, src, summaryOpts)
	want, _ := openWith(t, Notebook(nb), fromRows(summaryOpts))
	if src.rows.Load() != 3 || !reflect.DeepEqual(got, want) {
		t.Errorf("read %d studies' rows (want 3), same overview as the rows' %v", src.rows.Load(), reflect.DeepEqual(got, want))
	}
}

// TestSummaryRoundTrip: a study's series (the model path included) come back from the payload
// as studySeries computed them; every shorter prefix is an error, not a panic.
func TestSummaryRoundTrip(t *testing.T) {
	nb, _ := summaryNotebook(t, false)
	defer nb.Close()
	ctx := context.Background()
	refs, err := Notebook(nb).ThroughputStudies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		var c cached
		if c.series, c.skipped, err = studySeries(ctx, Notebook(nb), ref); err != nil {
			t.Fatal(err)
		}
		payload := encodeSummary(c)
		back, err := decodeSummary(payload, ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.series, c.series) && !(len(back.series) == 0 && len(c.series) == 0) || back.skipped != c.skipped {
			t.Fatalf("study %d: decoded\n%+v\nwant\n%+v", ref.ID, back, c)
		}
		if len(c.series) > 0 && back.series[0].path == "" {
			t.Fatalf("study %d: the model path was lost", ref.ID)
		}
		for n := 0; n < len(payload); n++ {
			if _, err := decodeSummary(payload[:n], ref.ID); err == nil {
				t.Fatalf("study %d: a payload cut to %d of %d bytes decoded", ref.ID, n, len(payload))
			}
		}
	}
}

// A payload whose counts claim more items than it has bytes is an error, never an allocation
// of that size or a panic (the window would go down instead of reading the rows).
func TestSummaryWithAHugeCountIsAnError(t *testing.T) {
	for _, payload := range [][]byte{
		{0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},       // the string table's count
		{0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, // the series count
		{0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0x7f},                         // series and points
	} {
		if _, err := decodeSummary(payload, 1); err == nil {
			t.Errorf("payload % x decoded", payload)
		}
	}
}
