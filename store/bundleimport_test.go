package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sparkbench/app/canon"
	"sparkbench/runner/benchfmt"
)

// synthBundle is a bundle's study as cmd reads it from a verified bundle: a plan, one
// prediction, legs with rows, a computed and a human verdict, a finding and a chained
// journal excerpt (hashes real, so CheckImportedChain can walk it).
func synthBundle(t testing.TB, sha string, legs, rowsPerLeg int) BundleStudy {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "runner", "benchfmt", "testdata", "bench-jsonl.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	var row benchfmt.Result
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "{") {
			if row, err = benchfmt.ParseJSONLLine([]byte(l)); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	plan := []byte(`{"name":"synthetic","schema":"sparkbench.throughput/v1"}`)
	b := BundleStudy{BundleSHA256: sha, Source: "synthetic-bundle", Kind: StudyThroughput, Sparkbench: "test",
		OriginStudyID: 7, Name: "synthetic", OriginStatus: StatusComplete, OriginHeadSeq: 99, OriginHeadHash: strings.Repeat("ab", 32),
		Machines: []byte(`[{"fingerprint":"f00"}]`), PlanJSON: plan, PlanSHA256: SHA256Hex(plan),
		Predictions: []BundlePrediction{{Key: "P1", Kind: "band", Text: "tg above 1", Selector: []byte(`{"figure":"cell"}`), Spec: []byte(`{"id":"P1","lo":1}`)}},
		Verdicts:    []BundleVerdict{{Key: "P1", Source: "computed", Outcome: "HIT"}, {Human: true, Key: "P1", Outcome: "PASS", Rationale: "checked", Author: "me"}},
		Findings:    []BundleFinding{{Title: "tg is flat", OriginLegs: []int64{100}, Predictions: []string{"P1"}}},
		Notes:       []BundleNote{{Kind: "study.run", Payload: []byte(`{"legs_done":1}`)}}}
	for i := 0; i < legs; i++ {
		l := BundleLeg{OriginID: int64(100 + i), Dir: fmt.Sprintf("legs/%03d-l%d", i+1, i), Label: fmt.Sprintf("m/d%d", i), Kind: LegKindBench,
			Detail: []byte(`{"attempt":1,"plan_leg":"m","role":"leg"}`), State: LegFinished, Class: ClassOK,
			Argv: []string{"llama-bench", "-t", "1"}, StartedAt: "2026-01-02T03:04:05.000000001Z", EndedAt: "2026-01-02T03:04:06.000000002Z",
			Fingerprint: "fp", Transcript: []byte("| model | test |\n")}
		var rows []byte
		for k := 0; k < rowsPerLeg; k++ {
			r := row
			r.AvgTs += float64(i*rowsPerLeg + k)
			l.Rows = append(l.Rows, r)
			l.Statuses = append(l.Statuses, "result")
			js, err := r.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			rows = canon.AppendRowLine(rows, int64(k), "result", js)
		}
		l.RowsSHA256 = SHA256Hex(rows)
		b.Legs = append(b.Legs, l)
	}
	prev := GenesisHash
	for seq := int64(1); seq <= 3; seq++ {
		at := fmt.Sprintf("2026-01-02T03:04:0%d.000000000Z", seq)
		payload := []byte(fmt.Sprintf(`{"b":%q,"n":%d}`, sha[:4], seq))
		h, err := ChainHash(prev, EntryBytes(seq, "study.run", 7, at, payload))
		if err != nil {
			t.Fatal(err)
		}
		b.Journal = append(b.Journal, BundleEntry{Seq: seq, Kind: "study.run", StudyID: 7, At: at, Payload: payload, PrevHash: prev, Hash: h})
		prev = h
	}
	return b
}

func journalHead(t *testing.T, n *Notebook) (int64, string) {
	t.Helper()
	st := must[Stats](t)(n.Stats(ctx))
	return st.Tables["journal"], st.JournalHead
}

// TestImportBundleOnceAllOrNothing: a bundle's study becomes new rows here (legs finished with
// their own times and rows, verdicts, a finding with its legs and prediction mapped), the home
// chain verifies with the imported legs re-hashed, the excerpt is kept and re-walks; the same
// bundle again is refused by its SHA-256, and a bundle whose rows do not hash to its rows.jsonl
// writes nothing.
func TestImportBundleOnceAllOrNothing(t *testing.T) {
	n := must[*Notebook](t)(Open(filepath.Join(t.TempDir(), "nb.db")))
	defer n.Close()
	b := synthBundle(t, strings.Repeat("1", 64), 3, 4)
	id := must[int64](t)(n.ImportBundle(ctx, b))
	s := must[Study](t)(n.Study(ctx, id))
	if s.Status != StatusImported || s.Name != "synthetic" {
		t.Fatalf("study %+v", s)
	}
	legs := must[[]Leg](t)(n.LegTimeline(ctx, id))
	if len(legs) != 3 {
		t.Fatalf("%d legs", len(legs))
	}
	for i, l := range legs {
		if l.State != LegFinished || l.Class != ClassOK || FormatTime(l.StartedAt) != b.Legs[i].StartedAt || FormatTime(l.EndedAt) != b.Legs[i].EndedAt {
			t.Errorf("leg %d: %+v", i, l)
		}
	}
	rows, err := StudyRecorder{n}.Rows(ctx, id)
	if err != nil || len(rows) != 12 {
		t.Fatalf("rows %d %v", len(rows), err)
	}
	for i, r := range rows {
		want := b.Legs[i/4].Rows[i%4]
		if !reflect.DeepEqual(r.Result, want) || r.Status != "result" {
			t.Fatalf("row %d differs:\n%+v\n%+v", i, r.Result, want)
		}
	}
	st, err := StudyRecorder{n}.Study(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if v := st.Verdicts["P1"]; v.Computed == nil || v.Computed.Outcome != "HIT" || v.Human == nil || v.Human.Outcome != "PASS" {
		t.Errorf("verdicts %+v", st.Verdicts)
	}
	if len(st.Findings) != 1 || st.Findings[0].LegIDs[0] != legs[0].ID || st.Findings[0].Predictions[0] != "P1" {
		t.Errorf("findings %+v", st.Findings)
	}
	// Not run here: its status does not change.
	if err := n.SetStudyStatus(ctx, id, StatusRunning); !errors.Is(err, ErrImportedStudy) {
		t.Fatalf("a run of the imported study: %v", err)
	}
	rep := must[VerifyReport](t)(n.Verify(ctx))
	if !rep.OK() || rep.LegsChecked != 3 {
		t.Fatalf("verify after import: %+v", rep)
	}
	o, found, err := n.ImportedOriginOf(ctx, id)
	if err != nil || !found || o.BundleSHA256 != b.BundleSHA256 || o.OriginHeadSeq != 99 || o.LastHash != b.Journal[2].Hash {
		t.Fatalf("origin %+v %v %v", o, found, err)
	}
	if err := n.CheckImportedChain(ctx, o); err != nil {
		t.Fatal(err)
	}
	kept := must[[]BundleEntry](t)(n.ImportedJournal(ctx, o.ImportID))
	if !reflect.DeepEqual(kept, b.Journal) {
		t.Fatalf("kept excerpt differs:\n%+v\n%+v", kept, b.Journal)
	}

	// Twice: refused, nothing added.
	seq, head := journalHead(t, n)
	_, err = n.ImportBundle(ctx, b)
	var dup *AlreadyImportedError
	if !errors.As(err, &dup) || dup.StudyID != id {
		t.Fatalf("second import: %v", err)
	}
	if s2, h2 := journalHead(t, n); s2 != seq || h2 != head {
		t.Fatal("a refused import journaled something")
	}
	// Another bundle of the same study (another export: other bytes, the same excerpt): refused.
	again := b
	again.BundleSHA256 = strings.Repeat("5", 64)
	if _, err = n.ImportBundle(ctx, again); !errors.As(err, &dup) || !dup.SameExcerpt || dup.StudyID != id || !strings.Contains(err.Error(), "same study") {
		t.Fatalf("another export of the same study: %v", err)
	}
	// Rows that do not hash to the bundle's rows.jsonl: nothing written.
	bad := synthBundle(t, strings.Repeat("2", 64), 2, 2)
	bad.Legs[1].RowsSHA256 = strings.Repeat("0", 64)
	if _, err := n.ImportBundle(ctx, bad); err == nil || !strings.Contains(err.Error(), bad.Legs[1].Dir) {
		t.Fatalf("bad rows: %v", err)
	}
	if s2, h2 := journalHead(t, n); s2 != seq || h2 != head {
		t.Fatal("a failed import left entries")
	}
	if all := must[[]StudySummary](t)(n.Studies(ctx)); len(all) != 1 {
		t.Fatalf("a failed import left a study: %d studies", len(all))
	}
	// The same study under another bundle: a second study, its name marked.
	other := synthBundle(t, strings.Repeat("3", 64), 1, 1)
	id2 := must[int64](t)(n.ImportBundle(ctx, other))
	if s := must[Study](t)(n.Study(ctx, id2)); s.Name != "synthetic (imported 333333333333)" {
		t.Errorf("second name %q", s.Name)
	}
	// A changed kept entry is named by CheckImportedChain.
	db := rawDB(t, n.Path())
	if _, err := db.Exec("DROP TRIGGER imported_journal_no_update"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE imported_journal SET payload = '{\"n\":5}' WHERE import_id = ? AND seq = 2", o.ImportID); err != nil {
		t.Fatal(err)
	}
	if err := n.CheckImportedChain(ctx, o); err == nil || !strings.Contains(err.Error(), "entry 2") {
		t.Fatalf("a changed kept entry: %v", err)
	}
}

// TestMigration9ImportedBundles: a schema 8 notebook opens and migrates; its study is not
// imported; a read-only open of an unmigrated one answers "not imported" too; the new tables
// are append-only.
func TestMigration9ImportedBundles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nb.db")
	old := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 8}))
	st := must[Study](t)(old.CreateStudy(ctx, Study{Name: "old", Kind: StudyThroughput}))
	old.Close()
	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	if _, found, err := ro.ImportedOriginOf(ctx, st.ID); err != nil || found {
		t.Fatalf("schema 8, read only: %v %v", found, err)
	}
	ro.Close()
	n := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 9}))
	defer n.Close()
	if stats := must[Stats](t)(n.Stats(ctx)); stats.SchemaVersion != 9 {
		t.Fatalf("schema %d", stats.SchemaVersion)
	}
	if _, found, err := n.ImportedOriginOf(ctx, st.ID); err != nil || found {
		t.Fatalf("old study: %v %v", found, err)
	}
	id := must[int64](t)(n.ImportBundle(ctx, synthBundle(t, strings.Repeat("4", 64), 1, 1)))
	for _, q := range []string{"UPDATE imported_bundles SET source = 'x'", "DELETE FROM imported_bundles", "DELETE FROM imported_journal",
		"UPDATE imported_journal SET kind = 'x'"} {
		if _, err := n.w.db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() || id == 0 {
		t.Fatalf("verify: %+v", rep)
	}
}

// BenchmarkImportBundleStore1000Legs: the notebook's part of merging a 1,000-leg bundle (2,000
// rows): ImportBundle's one transaction into a fresh notebook (the bundle's verification,
// which comes first, is BenchmarkImportBundle1000Legs in cmd/sparkbench).
func BenchmarkImportBundleStore1000Legs(b *testing.B) {
	bs := synthBundle(b, strings.Repeat("6", 64), 1000, 2)
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, err := Open(filepath.Join(dir, fmt.Sprintf("nb-%d.db", i)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := n.ImportBundle(ctx, bs); err != nil {
			b.Fatal(err)
		}
		n.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/import")
}

// TestImportBundleServerLegRequests: a server leg (a capacity lifetime) comes in with its
// request records as request_samples rows; the rows stored here must hash to the origin's
// samples_sha256, or nothing of the bundle is written.
func TestImportBundleServerLegRequests(t *testing.T) {
	dir := t.TempDir()
	origin := must[*Notebook](t)(Open(filepath.Join(dir, "origin.db")))
	defer origin.Close()
	st := must[Study](t)(origin.CreateStudy(ctx, Study{Name: "cap", Kind: StudyCapacity, Status: StatusRegistered}))
	leg, sw, err := origin.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "forward/a/p1", Kind: LegKindServer, Argv: []string{"llama-server"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var reqs []RequestRecord
	for i := 0; i < 3; i++ {
		reqs = append(reqs, RequestRecord{Candidate: "a", Slots: 1, Clients: 1, Pass: "forward", Phase: PhaseMeasured, Index: i,
			TSend: t0.Add(time.Duration(i) * time.Millisecond), TEnd: t0.Add(time.Duration(i+5) * time.Millisecond), HTTPStatus: 200,
			NPredict: 8, TokensPredicted: 8, Extra: []byte(`{"seq":` + fmt.Sprint(i) + `}`)})
	}
	if err := sw.AddRequests(reqs...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := origin.FinishLeg(ctx, leg.ID, LegOutcome{Class: ClassOK}); err != nil {
		t.Fatal(err)
	}
	var want string
	for _, e := range must[[]JournalEntry](t)(origin.Journal(ctx, st.ID, 0, 0)) {
		if e.Kind == KindLegFinished {
			var p legFinishedPayload
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatal(err)
			}
			want = p.SamplesSHA256
		}
	}
	b := synthBundle(t, strings.Repeat("2", 64), 0, 0)
	b.Kind, b.Findings = StudyCapacity, nil
	b.Legs = []BundleLeg{{OriginID: 100, Dir: "forward/a/p1", Label: "forward/a/p1", Kind: LegKindServer, State: LegFinished, Class: ClassOK,
		Argv: []string{"llama-server"}, StartedAt: "2026-01-02T03:04:05.000000001Z", EndedAt: "2026-01-02T03:04:06.000000002Z",
		Requests: reqs, SamplesSHA256: want}}
	bad := b
	bad.BundleSHA256 = strings.Repeat("3", 64)
	bad.Legs = []BundleLeg{b.Legs[0]}
	bad.Legs[0].Requests = append([]RequestRecord{}, reqs[:2]...)
	n := must[*Notebook](t)(Open(filepath.Join(dir, "home.db")))
	defer n.Close()
	_, head := journalHead(t, n)
	if _, err := n.ImportBundle(ctx, bad); err == nil || !strings.Contains(err.Error(), "the origin's leg.finished recorded "+want) {
		t.Fatalf("rows that do not hash to the origin's: %v", err)
	}
	if _, after := journalHead(t, n); after != head {
		t.Fatalf("a refused import journaled something")
	}
	id := must[int64](t)(n.ImportBundle(ctx, b))
	legs := must[[]Leg](t)(n.LegTimeline(ctx, id))
	if len(legs) != 1 || legs[0].Kind != LegKindServer || legs[0].RequestRows != 3 {
		t.Fatalf("legs %+v", legs)
	}
}
