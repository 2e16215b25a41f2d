package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
)

var ctx = context.Background()

func openTemp(t testing.TB) (*Notebook, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "notebook.db")
	n, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, path
}

// rawDB opens the file with a plain connection, as a tamperer would.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", dsn(path, "_busy_timeout=5000"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func benchTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "runner", "benchfmt", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseRows(t testing.TB, name string) []benchfmt.Result {
	t.Helper()
	rows, _, err := benchfmt.ParseFile(name, benchTestdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestOpenCreatesNotebook(t *testing.T) {
	n, path := openTemp(t)
	st := must[Stats](t)(n.Stats(ctx))
	if st.SchemaVersion != SchemaVersion || SchemaVersion < 2 {
		t.Fatalf("schema version %d, head %d", st.SchemaVersion, SchemaVersion)
	}
	var appID int64
	if err := n.rdb.QueryRow("PRAGMA application_id").Scan(&appID); err != nil || appID != ApplicationID {
		t.Fatalf("application_id %x %v", appID, err)
	}
	var mode string
	if err := n.rdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q %v", mode, err)
	}
	n.Close()
	n2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n2.Close()
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(EnvNotebook, "")
	t.Setenv("XDG_DATA_HOME", "/xdg")
	if p, _ := DefaultPath(); p != "/xdg/sparkbench/notebook.db" {
		t.Fatal(p)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/home/u/.local/share/sparkbench/notebook.db" {
		t.Fatal(p)
	}
	t.Setenv(EnvNotebook, "/tmp/x.db")
	if p, _ := DefaultPath(); p != "/tmp/x.db" {
		t.Fatal(p)
	}
}

// fillStudy records a complete throughput study and returns its id and leg.
func fillStudy(t testing.TB, n *Notebook, name string) (int64, int64) {
	t.Helper()
	st := must[Study](t)(n.CreateStudy(ctx, Study{Name: name, Kind: StudyThroughput, Description: "depth curves"}))
	must[Plan](t)(n.RegisterPlan(ctx, st.ID, map[string]any{"models": []string{"tiny"}, "depths": []int{0, 128}, "reps": 2}))
	must[Prediction](t)(n.RegisterPrediction(ctx, Prediction{StudyID: st.ID, Key: "Q1", Kind: PredictionBand, Text: "tg32 in 10-100k",
		Selector: json.RawMessage(`{"test":"tg32","depth":0}`), Spec: json.RawMessage(`{"lo":10,"hi":100000}`)}))
	leg, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "tiny d0,128", Argv: []string{"llama-bench", "-m", "tiny.gguf", "-o", "jsonl"},
		Env: map[string]string{"NO_COLOR": "1"}, Conditions: []string{"download running"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.AddBench(parseRows(t, "bench-depth-jsonl.stdout")...); err != nil {
		t.Fatal(err)
	}
	if err := sw.AddTranscript([]byte("line one\r\nline two\r\n")); err != nil {
		t.Fatal(err)
	}
	exit := 0
	if _, _, err := n.FinishLeg(ctx, leg.ID, LegOutcome{ExitCode: &exit, Transcript: []byte("build: Debian (11669)\r\n")}); err != nil {
		t.Fatal(err)
	}
	return st.ID, leg.ID
}

func TestStudyLifecycle(t *testing.T) {
	n, _ := openTemp(t)
	studyID, legID := fillStudy(t, n, "depth")
	preds := must[[]Prediction](t)(n.Predictions(ctx, studyID))
	if len(preds) != 1 || preds[0].Key != "Q1" {
		t.Fatalf("predictions %+v", preds)
	}
	// a prediction after a leg ran is refused
	if _, err := n.RegisterPrediction(ctx, Prediction{StudyID: studyID, Key: "late", Kind: PredictionQuestion}); err == nil || !strings.Contains(err.Error(), "before any leg runs") {
		t.Fatalf("late prediction: %v", err)
	}
	obs := 1872.16
	must[Verdict](t)(n.RecordVerdict(ctx, Verdict{PredictionID: preds[0].ID, Outcome: "HIT", Observed: &obs}))
	if _, err := n.RecordHumanVerdict(ctx, Verdict{PredictionID: preds[0].ID, Outcome: "MAYBE", Rationale: "x"}); err == nil {
		t.Fatal("MAYBE accepted")
	}
	must[Verdict](t)(n.RecordHumanVerdict(ctx, Verdict{PredictionID: preds[0].ID, Outcome: "PASS", Rationale: "stack healthy", Author: "Alastair"}))
	f := must[Finding](t)(n.AddFinding(ctx, Finding{StudyID: studyID, Title: "tg holds at depth 128", Body: "tiny model, KV-read fraction small", LegIDs: []int64{legID}, PredictionIDs: []int64{preds[0].ID}}))
	if f.Label() != "F1" {
		t.Fatalf("finding %s", f.Label())
	}
	must[Amendment](t)(n.AddAmendment(ctx, Amendment{StudyID: studyID, Target: "prediction:Q1", Reason: "asymmetric tolerance", Change: json.RawMessage(`{"hi":null}`)}))
	must[Deviation](t)(n.AddDeviation(ctx, Deviation{StudyID: studyID, LegID: legID, Description: "sg wrapper retained"}))
	must[Receipt](t)(n.RecordReceipt(ctx, Receipt{StudyID: studyID, Format: "md", SHA256: SHA256Hex([]byte("receipt")), Bytes: 7}))
	if err := n.RecordGates(ctx, []Gate{{StudyID: studyID, LegID: legID, Name: "cv", Passed: true, Observed: &obs}}); err != nil {
		t.Fatal(err)
	}

	rep := must[VerifyReport](t)(n.Verify(ctx))
	if !rep.OK() || rep.Entries != 11 || rep.LegsChecked != 1 || rep.SamplesChecked != 4 {
		t.Fatalf("verify: %+v %v", rep, rep.Broken)
	}
	var kinds []string
	for _, e := range must[[]JournalEntry](t)(n.Journal(ctx, 0, 0, 0)) {
		kinds = append(kinds, e.Kind)
	}
	want := []string{KindStudyCreated, KindPlanRegistered, KindPredictionRegistered, KindLegStarted, KindLegFinished, KindVerdict,
		KindHumanVerdict, KindFinding, KindAmendment, KindDeviation, KindReceiptExported}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("journal kinds %v", kinds)
	}

	// the rows read back equal what was recorded
	got := must[[]benchfmt.Result](t)(n.BenchRows(ctx, legID))
	in := parseRows(t, "bench-depth-jsonl.stdout")
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("bench rows differ\n got %+v\nwant %+v", got[0], in[0])
	}
	// a finished leg takes no more rows
	if sw, err := n.SampleWriter(ctx, legID); err == nil || sw != nil {
		t.Fatal("SampleWriter for a finished leg")
	}
	tr := must[[]byte](t)(n.Transcript(ctx, legID))
	if string(tr) != "line one\r\nline two\r\nbuild: Debian (11669)\r\n" {
		t.Fatalf("transcript %q", tr)
	}
	leg := must[Leg](t)(n.Leg(ctx, legID))
	if leg.State != LegFinished || leg.Class != ClassOK || *leg.ExitCode != 0 || leg.BenchRows != 4 || leg.Argv[0] != "llama-bench" ||
		leg.Env["NO_COLOR"] != "1" || leg.Conditions[0] != "download running" || leg.EndedAt.IsZero() || leg.TranscriptBytes != 43 {
		t.Fatalf("leg %+v", leg)
	}

	series := must[[]BenchSeries](t)(n.BenchSeries(ctx, studyID, LegFilter{}))
	if len(series) != 2 || series[0].Test != "pp64" || series[1].Test != "tg32" || len(series[1].Points) != 2 ||
		series[1].Points[1].Depth != 128 || series[1].Points[1].Mean != 563.041561 || series[0].Model != "llama ?B (guessed) all F32" {
		t.Fatalf("series %+v", series)
	}
	board := must[[]ScoreRow](t)(n.Scoreboard(ctx, studyID))
	if len(board) != 1 || board[0].Computed.Outcome != "HIT" || board[0].Human.Outcome != "PASS" || *board[0].Computed.Observed != obs {
		t.Fatalf("scoreboard %+v", board)
	}
	fs := must[[]Finding](t)(n.Findings(ctx, 0))
	if len(fs) != 1 || fs[0].LegIDs[0] != legID || fs[0].PredictionIDs[0] != preds[0].ID {
		t.Fatalf("findings %+v", fs)
	}
	studies := must[[]StudySummary](t)(n.Studies(ctx))
	if len(studies) != 1 || studies[0].Status != StatusRegistered || studies[0].Legs != 1 || studies[0].PlanSHA256 == "" || studies[0].Findings != 1 {
		t.Fatalf("studies %+v", studies)
	}
	for q, kind := range map[string]string{"guessed": "model", "depth": "study", "KV-read": "finding", "f1": "finding"} {
		hits := must[[]SearchHit](t)(n.Search(ctx, q, 10))
		if len(hits) == 0 || hits[0].Kind != kind {
			t.Errorf("search %q: %+v", q, hits)
		}
	}
	if hits := must[[]SearchHit](t)(n.Search(ctx, "100%", 10)); len(hits) != 0 {
		t.Errorf("LIKE wildcard not escaped: %+v", hits)
	}
}

func TestMachinesBuildsArtefacts(t *testing.T) {
	n, _ := openTemp(t)
	m1 := must[int64](t)(n.UpsertMachine(ctx, Machine{Hostname: "spark", CPUModel: "AMD EPYC", Cores: 2}))
	m2 := must[int64](t)(n.UpsertMachine(ctx, Machine{Hostname: "spark", CPUModel: "AMD EPYC", Cores: 2}))
	b1 := must[int64](t)(n.UpsertBuild(ctx, Build{Dir: "/opt/llama.cpp/bin", VersionLine: "version: 0.7.0 (build 11669, commit Debian)", BuildNumber: 11669, Binaries: map[string]string{"llama-bench": strings.Repeat("a", 64)}}))
	if m1 != m2 || b1 == 0 {
		t.Fatalf("machine ids %d %d build %d", m1, m2, b1)
	}
	if m := must[Machine](t)(n.Machine(ctx, m1)); m.ID != m1 || m.Hostname != "spark" || m.CPUModel != "AMD EPYC" || m.Cores != 2 || len(m.Fingerprint) != 64 || m.CreatedAt.IsZero() {
		t.Errorf("machine %+v", m)
	}
	if b := must[Build](t)(n.Build(ctx, b1)); b.ID != b1 || b.BuildNumber != 11669 || b.Dir != "/opt/llama.cpp/bin" || b.Binaries["llama-bench"] != strings.Repeat("a", 64) || len(b.Fingerprint) != 64 {
		t.Errorf("build %+v", b)
	}
	if _, err := n.Machine(ctx, 999); err == nil {
		t.Error("machine 999 read")
	}
	if _, err := n.Build(ctx, 999); err == nil {
		t.Error("build 999 read")
	}
	mt := time.Unix(1700000000, 5)
	a := must[Artefact](t)(n.UpsertArtefact(ctx, Artefact{Path: "/srv/models/qwen.gguf", Size: 18556686752, MTime: mt, Name: "Qwen3-30B-A3B", Quant: "Q4_K_M"}))
	if a.Status != ArtefactPending {
		t.Fatalf("status %s", a.Status)
	}
	sum := strings.Repeat("ab", 32)
	if s := must[string](t)(n.SetArtefactHash(ctx, a.ID, sum)); s != ArtefactPending {
		t.Fatalf("hash only: %s", s)
	}
	if s := must[string](t)(n.SetArtefactExpected(ctx, a.ID, strings.ToUpper(sum))); s != ArtefactVerified {
		t.Fatalf("matching: %s", s)
	}
	if s := must[string](t)(n.SetArtefactExpected(ctx, a.ID, strings.Repeat("cd", 32))); s != ArtefactMismatch {
		t.Fatalf("mismatch: %s", s)
	}
	c, ok, err := n.CachedArtefact(ctx, "/srv/models/qwen.gguf", 18556686752, mt)
	if err != nil || !ok || c.SHA256 != sum {
		t.Fatalf("cache: %+v %v %v", c, ok, err)
	}
	if _, ok, _ := n.CachedArtefact(ctx, "/srv/models/qwen.gguf", 18556686752, mt.Add(time.Second)); ok {
		t.Fatal("cache hit after mtime changed")
	}
	if hits := must[[]SearchHit](t)(n.Search(ctx, "qwen3", 5)); len(hits) != 1 || hits[0].Kind != "artefact" {
		t.Fatalf("search %+v", hits)
	}
	if _, err := n.SetArtefactHash(ctx, a.ID, "nothex"); err == nil {
		t.Fatal("bad hash accepted")
	}
}

func TestCanonicalJSON(t *testing.T) {
	cases := map[string]string{
		`{"b":1,"a":[true,null,"x"]}`:            `{"a":[true,null,"x"],"b":1}`,
		` { "z" : { "y":2, "x":1.50 } } `:        `{"z":{"x":1.5,"y":2}}`,
		`{"n":-0,"e":1E3,"f":0.000001,"g":1e21}`: `{"e":1000,"f":0.000001,"g":1e+21,"n":0}`,
		`{"s":"<&>\u00e9\n\u0001"}`:              "{\"s\":\"<&>\u00e9\\n\\u0001\"}",
		`{"big":123456789012345678901234567890}`: `{"big":123456789012345678901234567890}`,
		`{"f":1e-7}`:                             `{"f":1e-7}`,
	}
	for in, want := range cases {
		got, err := CanonicalJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	a, _ := CanonicalJSON(map[string]any{"b": 2, "a": 1})
	b, _ := CanonicalJSON(struct {
		A int `json:"a"`
		B int `json:"b"`
	}{1, 2})
	if !bytes.Equal(a, b) {
		t.Fatalf("%s vs %s", a, b)
	}
	for _, bad := range []string{``, `{`, `{"a":1} {}`, "\"\xff\""} {
		if _, err := CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestTamperDetectedAndTriggers(t *testing.T) {
	n, path := openTemp(t)
	studyID, legID := fillStudy(t, n, "tamper")
	_ = studyID
	entries := must[[]JournalEntry](t)(n.Journal(ctx, 0, 0, 0))
	if len(entries) != 5 {
		t.Fatalf("%d entries", len(entries))
	}
	db := rawDB(t, path)
	// With the triggers in place, UPDATE and DELETE fail.
	for _, q := range []string{
		"UPDATE journal SET payload = '{}' WHERE seq = 3",
		"DELETE FROM journal WHERE seq = 5",
		"UPDATE bench_samples SET avg_ts = 1 WHERE leg_id = " + itoa(legID),
		"DELETE FROM bench_samples",
		"UPDATE plans SET canonical_json = '{}'",
		"UPDATE predictions SET text = 'edited'",
		"UPDATE legs SET class = 'ok' WHERE id = " + itoa(legID),
		"DELETE FROM legs",
	} {
		_, err := db.Exec(q)
		if err == nil || !strings.Contains(err.Error(), "append-only") && !strings.Contains(err.Error(), "frozen") && !strings.Contains(err.Error(), "cannot be deleted") {
			t.Errorf("%s: %v", q, err)
		}
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("intact notebook fails: %v", rep.Broken)
	}

	// Change one journal row behind the trigger's back: Verify names exactly that entry.
	if _, err := db.Exec("DROP TRIGGER journal_no_update"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE journal SET payload = replace(payload, '"hi":100000', '"hi":90') WHERE seq = 3`); err != nil {
		t.Fatal(err)
	}
	rep := must[VerifyReport](t)(n.Verify(ctx))
	if rep.OK() || rep.Broken.Seq != 3 || rep.Broken.Kind != KindPredictionRegistered || rep.Entries != 2 {
		t.Fatalf("tampered payload: %+v %v", rep, rep.Broken)
	}
	// Restore it, then forge a consistent hash for entry 3: the next entry's link breaks.
	if _, err := db.Exec(`UPDATE journal SET payload = replace(payload, '"hi":90', '"hi":100000') WHERE seq = 3`); err != nil {
		t.Fatal(err)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("restored: %v", rep.Broken)
	}
	if _, err := db.Exec(`UPDATE journal SET at = '2020-01-01T00:00:00.000000000Z' WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	var kind, at, payload, prev string
	var study int64
	db.QueryRow("SELECT kind, at, payload, prev_hash, study_id FROM journal WHERE seq = 2").Scan(&kind, &at, &payload, &prev, &study)
	forged, _ := ChainHash(prev, EntryBytes(2, kind, study, at, []byte(payload)))
	if _, err := db.Exec("UPDATE journal SET hash = ? WHERE seq = 2", forged); err != nil {
		t.Fatal(err)
	}
	rep = must[VerifyReport](t)(n.Verify(ctx))
	if rep.OK() || rep.Broken.Seq != 3 || !strings.Contains(rep.Broken.Reason, "prev_hash") {
		t.Fatalf("forged hash: %v", rep.Broken)
	}
	if _, err := db.Exec("DROP TRIGGER journal_no_delete"); err != nil {
		t.Fatal(err)
	}
	db.Exec("UPDATE journal SET hash = '' WHERE seq = 2")

	// A changed sample is caught through the leg.finished digest.
	n2, path2 := openTemp(t)
	_, leg2 := fillStudy(t, n2, "samples")
	db2 := rawDB(t, path2)
	db2.Exec("DROP TRIGGER bench_samples_no_update")
	if _, err := db2.Exec("UPDATE bench_samples SET avg_ts = avg_ts * 1.1 WHERE leg_id = ? AND seq = 1", leg2); err != nil {
		t.Fatal(err)
	}
	rep = must[VerifyReport](t)(n2.Verify(ctx))
	if rep.OK() || rep.Broken.Kind != KindLegFinished || rep.Broken.Seq != 5 || !strings.Contains(rep.Broken.Reason, "samples") {
		t.Fatalf("changed sample: %v", rep.Broken)
	}
	// So is a changed plot aggregate.
	n2b, path2b := openTemp(t)
	_, leg2b := fillStudy(t, n2b, "series")
	db2b := rawDB(t, path2b)
	if _, err := db2b.Exec("UPDATE bench_series SET max_ts = max_ts * 2 WHERE leg_id = ?", leg2b); err != nil {
		t.Fatal(err)
	}
	rep = must[VerifyReport](t)(n2b.Verify(ctx))
	if rep.OK() || rep.Broken.Seq != 5 || !strings.Contains(rep.Broken.Reason, "aggregates") {
		t.Fatalf("changed aggregate: %v", rep.Broken)
	}
	// A deleted entry is a sequence gap.
	n3, path3 := openTemp(t)
	fillStudy(t, n3, "gap")
	db3 := rawDB(t, path3)
	db3.Exec("DROP TRIGGER journal_no_delete")
	if _, err := db3.Exec("DELETE FROM journal WHERE seq = 2"); err != nil {
		t.Fatal(err)
	}
	rep = must[VerifyReport](t)(n3.Verify(ctx))
	if rep.OK() || rep.Broken.Seq != 3 || !strings.Contains(rep.Broken.Reason, "gap") {
		t.Fatalf("deleted entry: %v", rep.Broken)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestMigrationFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := OpenWith(path, Options{migrateTo: 1})
	if err != nil {
		t.Fatal(err)
	}
	studyID, legID := fillStudy(t, old, "v1 study")
	before := must[VerifyReport](t)(old.Verify(ctx))
	old.Close()
	db := rawDB(t, path)
	var v int
	db.QueryRow("PRAGMA user_version").Scan(&v)
	var tables int
	db.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'gates'").Scan(&tables)
	if v != 1 || tables != 0 {
		t.Fatalf("v1 notebook: version %d, gates table %d", v, tables)
	}
	db.Close()

	n, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	st := must[Stats](t)(n.Stats(ctx))
	if st.SchemaVersion != SchemaVersion || st.Tables["bench_samples"] != 4 || st.Tables["journal"] != 5 {
		t.Fatalf("after migration: %+v", st)
	}
	after := must[VerifyReport](t)(n.Verify(ctx))
	if !after.OK() || after.Head != before.Head || after.Entries != before.Entries {
		t.Fatalf("chain changed by migration: %+v vs %+v", after, before)
	}
	if rows := must[[]benchfmt.Result](t)(n.BenchRows(ctx, legID)); !reflect.DeepEqual(rows, parseRows(t, "bench-depth-jsonl.stdout")) {
		t.Fatal("bench rows changed by migration")
	}
	if s := must[Study](t)(n.Study(ctx, studyID)); s.Name != "v1 study" {
		t.Fatal(s)
	}
	// the new table works, and so does the old data
	if err := n.RecordGates(ctx, []Gate{{StudyID: studyID, LegID: legID, Name: "cv", Code: "cv_above_maximum"}}); err != nil {
		t.Fatal(err)
	}
	if g := must[[]Gate](t)(n.Gates(ctx, studyID)); len(g) != 1 || g[0].Passed {
		t.Fatalf("gates %+v", g)
	}
	_, sw, err := n.StartLeg(ctx, LegSpec{StudyID: studyID})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.AddBench(parseRows(t, "bench-jsonl.stdout")...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.FinishLeg(ctx, sw.Leg(), LegOutcome{}); err != nil {
		t.Fatal(err)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() || rep.Entries != before.Entries+2 {
		t.Fatalf("%+v", rep)
	}
}

func TestRefusesNewerAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	// newer schema
	newer := filepath.Join(dir, "newer.db")
	n, err := Open(newer)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	db := rawDB(t, newer)
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(newer)
	if !errors.Is(err, ErrTooNew) || !strings.Contains(err.Error(), "schema version 99") || !strings.Contains(err.Error(), "upgrade sparkbench") {
		t.Fatalf("newer: %v", err)
	}

	// another application's SQLite file is refused and left untouched
	foreign := filepath.Join(dir, "foreign.db")
	fdb := rawDB(t, foreign)
	if _, err := fdb.Exec("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	fdb.Close()
	orig, _ := os.ReadFile(foreign)
	_, err = Open(foreign)
	if !errors.Is(err, ErrNotNotebook) || !strings.Contains(err.Error(), "another application's SQLite file") {
		t.Fatalf("foreign: %v", err)
	}
	if now, _ := os.ReadFile(foreign); !bytes.Equal(now, orig) {
		t.Fatal("foreign file was modified")
	}
	if _, err := os.Stat(foreign + "-wal"); err == nil {
		t.Fatal("foreign file was switched to WAL")
	}
	// another application id
	other := filepath.Join(dir, "other.db")
	odb := rawDB(t, other)
	odb.Exec("PRAGMA application_id = 1234")
	odb.Exec("CREATE TABLE t (x)")
	odb.Close()
	if _, err := Open(other); !errors.Is(err, ErrNotNotebook) || !strings.Contains(err.Error(), "0x000004d2") {
		t.Fatalf("other app id: %v", err)
	}
	// not SQLite at all
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello, this is not a database at all......"), 0o600)
	if _, err := Open(text); !errors.Is(err, ErrNotNotebook) || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("text file: %v", err)
	}
	// an empty file becomes a notebook
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	n, err = Open(empty)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	// read-only of a missing file
	if _, err := OpenWith(filepath.Join(dir, "missing.db"), Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only open created a notebook")
	}
}

func TestReadOnly(t *testing.T) {
	n, path := openTemp(t)
	fillStudy(t, n, "ro")
	ro, err := OpenWith(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if rep := must[VerifyReport](t)(ro.Verify(ctx)); !rep.OK() || rep.Entries != 5 {
		t.Fatalf("%+v", rep)
	}
	if _, err := ro.CreateStudy(ctx, Study{Name: "x", Kind: StudyThroughput}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write on read-only: %v", err)
	}
}

func TestSampleBatchesCommitWithin250ms(t *testing.T) {
	var commits atomic.Int64
	path := filepath.Join(t.TempDir(), "nb.db")
	n, err := OpenWith(path, Options{OnCommit: func(CommitInfo) { commits.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	st := must[Study](t)(n.CreateStudy(ctx, Study{Name: "s", Kind: StudyThroughput}))
	_, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID})
	if err != nil {
		t.Fatal(err)
	}
	rows := parseRows(t, "bench-jsonl.stdout")
	start := time.Now()
	if err := sw.AddBench(rows[0]); err != nil {
		t.Fatal(err)
	}
	// without an explicit flush the row becomes visible to readers within the interval
	for {
		var c int
		n.rdb.QueryRow("SELECT COUNT(*) FROM bench_samples").Scan(&c)
		if c == 1 {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("row not committed after 2 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if el := time.Since(start); el > 400*time.Millisecond {
		t.Errorf("row committed after %v", el)
	}
	if commits.Load() != 1 {
		t.Errorf("%d commits", commits.Load())
	}
	// many rows in quick succession share one batch
	for i := 0; i < 100; i++ {
		sw.AddBench(rows[1])
	}
	if err := sw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := commits.Load(); c > 3 {
		t.Errorf("100 rows took %d commits", c)
	}
}

func TestRateSeries(t *testing.T) {
	n, _ := openTemp(t)
	st := must[Study](t)(n.CreateStudy(ctx, Study{Name: "cap", Kind: StudyCapacity}))
	leg, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Kind: LegKindServer})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	var recs []RequestRecord
	// 2 clients, 64 tokens each, both passes: forward takes 2 s, reverse 1.6 s
	for _, pass := range []struct {
		name string
		dur  time.Duration
	}{{"forward", 2 * time.Second}, {"reverse", 1600 * time.Millisecond}} {
		for c := 0; c < 2; c++ {
			recs = append(recs, RequestRecord{Candidate: "Q8", Slots: 2, Clients: 2, Pass: pass.name, Phase: PhaseMeasured, Index: c, Client: c,
				TSend: t0, TFirst: t0.Add(100 * time.Millisecond), TLast: t0.Add(pass.dur - 100*time.Millisecond), TEnd: t0.Add(pass.dur),
				HTTPStatus: 200, NPredict: 64, TokensPredicted: 64})
		}
		recs = append(recs, RequestRecord{Candidate: "Q8", Slots: 2, Clients: 2, Pass: pass.name, Phase: PhaseWarmup, TSend: t0, TEnd: t0.Add(time.Hour), TokensPredicted: 9999})
	}
	if err := sw.AddRequests(recs...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.FinishLeg(ctx, leg.ID, LegOutcome{}); err != nil {
		t.Fatal(err)
	}
	rs := must[[]RateSeries](t)(n.RateSeries(ctx, st.ID, LegFilter{}))
	if len(rs) != 1 || len(rs[0].Cells) != 1 {
		t.Fatalf("%+v", rs)
	}
	c := rs[0].Cells[0]
	// forward 128/2 = 64 t/s, reverse 128/1.6 = 80 t/s, median 72
	if c.Rate != 72 || c.PassRates["forward"] != 64 || c.Requests != 4 || c.Completed != 4 {
		t.Fatalf("cell %+v", c)
	}
	if got := must[[]RequestRecord](t)(n.RequestRows(ctx, leg.ID)); len(got) != 6 || !got[0].TFirst.Equal(recs[0].TFirst) {
		t.Fatalf("request rows %+v", got)
	}
	var buf bytes.Buffer
	if k, err := n.ExportStudy(ctx, &buf, st.ID, ExportOptions{Format: ExportCSV, Rows: ExportRequests}); err != nil || k != 6 {
		t.Fatalf("export %d %v", k, err)
	}
	if !strings.Contains(buf.String(), "ttft_ms") || !strings.Contains(buf.String(), ",100,") {
		t.Fatalf("requests csv:\n%s", buf.String())
	}
	// a crashed leg's rows are not plotted
	leg2, sw2, _ := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Kind: LegKindServer})
	sw2.AddRequests(RequestRecord{Candidate: "Q4", Slots: 1, Clients: 1, Phase: PhaseMeasured, TSend: t0, TEnd: t0.Add(time.Second), TokensPredicted: 64})
	n.FinishLeg(ctx, leg2.ID, LegOutcome{Class: ClassCrash})
	if rs := must[[]RateSeries](t)(n.RateSeries(ctx, st.ID, LegFilter{})); len(rs) != 1 {
		t.Fatalf("crashed leg plotted: %+v", rs)
	}
	if rs := must[[]RateSeries](t)(n.RateSeries(ctx, st.ID, LegFilter{AllLegs: true})); len(rs) != 2 {
		t.Fatalf("AllLegs: %+v", rs)
	}
}

func TestLateSamplesRefused(t *testing.T) {
	n, _ := openTemp(t)
	st := must[Study](t)(n.CreateStudy(ctx, Study{Name: "late", Kind: StudyThroughput}))
	leg, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID})
	if err != nil {
		t.Fatal(err)
	}
	rows := parseRows(t, "bench-jsonl.stdout")
	sw.AddBench(rows[0])
	if _, _, err := n.FinishLeg(ctx, leg.ID, LegOutcome{}); err != nil {
		t.Fatal(err)
	}
	sw.AddBench(rows[1])
	if err := sw.Flush(ctx); err == nil || !strings.Contains(err.Error(), "running leg") {
		t.Fatalf("late row: %v", err)
	}
	if err := sw.AddBench(rows[1]); err == nil {
		t.Fatal("sticky error not reported")
	}
	if got := must[Leg](t)(n.Leg(ctx, leg.ID)); got.BenchRows != 1 {
		t.Fatalf("%d rows", got.BenchRows)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatal(rep.Broken)
	}
	if _, _, err := n.FinishLeg(ctx, leg.ID, LegOutcome{}); err == nil {
		t.Fatalf("finish twice: %v", err)
	}
}

func TestFinishTwiceRefused(t *testing.T) {
	n, _ := openTemp(t)
	_, legID := fillStudy(t, n, "twice")
	if _, _, err := n.FinishLeg(ctx, legID, LegOutcome{}); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Fatalf("finish twice: %v", err)
	}
}
