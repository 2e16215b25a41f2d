package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sparkbench/app/overview"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/telemetry"
	"sparkbench/store"
)

// Issue 30, item 3: a damaged record must not pass `notebook verify`. The fixture is a real
// notebook: the demo study run on the real llama-bench, then a finding, a human verdict, a
// deviation, a second study with an amendment, imported llama-bench and llama-batched-bench
// files, a receipt, that receipt imported back as a study, and a bench host — every table a
// figure, a verdict or a receipt reads gets rows. Each case edits one value in its own copy
// behind the store's back (the append-only triggers dropped for the edit, CHECK constraints
// ignored: what a byte edit of the file does), then runs `notebook verify`.

// tamperFixture builds the sweep's notebook; it returns its path and the demo study's id.
func tamperFixture(t *testing.T) (string, string) {
	t.Helper()
	base := t.TempDir()
	// The demo study, as demoNotebook runs it, except that a leg flagged by the CV gate on
	// this loaded machine (the study then ends incomplete, exit 1) still leaves a notebook
	// whose every record the sweep can edit.
	loc := llamatest.Binaries(t)
	home := filepath.Join(base, "home", "al")
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	nb := filepath.Join(home, ".local", "share", "sparkbench", "notebook.db")
	code, out, errOut := runCLI("demo", "--run", "--notebook", nb, "--llama-dir", loc.Dir)
	m := regexp.MustCompile(`demo study (\d+) `).FindStringSubmatch(out)
	if code != 0 && !(code == 1 && strings.Contains(errOut, " incomplete: ")) || m == nil {
		t.Fatalf("demo --run: %d\n%s\n%s", code, out, errOut)
	}
	id := m[1]
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	plan := writePlan(t, base, "tamper amend", tiny, moe, 2, 8, retryPredictions)
	code, out, errOut = runCLI("study", "register", plan, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	id2 := registeredID(t, out)
	bundle := filepath.Join(base, "receipt")
	for _, args := range [][]string{
		{"finding", "add", id, "--text", "tamper sweep finding", "--leg", "1", "--prediction", "P1"},
		{"verdict", id, "--prediction", "P1", "--human", "NOTE", "--why", "a note for the sweep"},
		{"amend", id, "--prediction", "P1", "--set-text", "reworded after the run", "--reason", "sweep: a deviation", "--as-deviation"},
		{"amend", id2, "--prediction", "P3", "--set-lo", "2", "--reason", "sweep: an amendment"},
		{"import", "--study", "sweep imports", filepath.Join("..", "..", "runner", "benchfmt", "testdata", "bench-jsonl.stdout"),
			filepath.Join("..", "..", "runner", "benchfmt", "testdata", "batched-md.stdout")},
		{"receipt", id, "--out", bundle},
		{"import", bundle},
		{"host", "add", "sweep-host", "--ssh", "bench@sweep", "--llama-dir", "/opt/llama", "--model-dir", "/models", "--label", "gpu=none"},
	} {
		if code, out, errOut := runCLI(append(args, "--notebook", nb)...); code != 0 {
			t.Fatalf("%s: %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	serverLeg(t, nb, id2)
	summarizeStudy(t, nb, id)
	if code, out, errOut := runCLI("notebook", "verify", "--notebook", nb); code != 0 || !strings.Contains(out, ": intact: ") {
		t.Fatalf("the fixture does not verify: %d\n%s\n%s", code, out, errOut)
	}
	os.Remove(nb + ".anchor") // each copy is judged by its rows, not by a head seen before
	return nb, id
}

// summarizeStudy keeps the demo study's overview summary at its current version, as a run
// does when it ends (the demo's own summary went stale with the entries written since), so
// that study_summaries holds a row the overview reads instead of the rows.
func summarizeStudy(t *testing.T, path, studyID string) {
	t.Helper()
	nb, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	var sid int64
	fmt.Sscan(studyID, &sid)
	if err := overview.Summarize(context.Background(), nb, sid); err != nil {
		t.Fatal(err)
	}
}

// serverLeg records a llama-server leg with request records and telemetry samples through
// the store, as the capacity recorder and the telemetry sampler write them (a real capacity
// run takes minutes on this machine), so that request_samples and telemetry_samples have rows
// for the sweep to edit.
func serverLeg(t *testing.T, path, studyID string) {
	t.Helper()
	nb, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ctx := context.Background()
	var sid int64
	fmt.Sscan(studyID, &sid)
	leg, sw, err := nb.StartLeg(ctx, store.LegSpec{StudyID: sid, Label: "server q4 s2", Kind: store.LegKindServer,
		Argv: []string{"llama-server", "-m", "tiny.gguf", "--parallel", "2"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	var recs []store.RequestRecord
	for i := 0; i < 2; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		recs = append(recs, store.RequestRecord{Candidate: "q4", Arm: "f16", Slots: 2, Clients: 2, Pass: "forward", Phase: "measured",
			Index: i, Client: i, TSend: at, TFirst: at.Add(20 * time.Millisecond), TLast: at.Add(300 * time.Millisecond), TEnd: at.Add(310 * time.Millisecond),
			HTTPStatus: 200, NPredict: 32, TokensPredicted: 32, TokensEvaluated: 64, StopType: "limit", PromptMs: 12.5, PredictedMs: 280.25,
			PredictedPerSecond: 114.2, Error: "none", Extra: json.RawMessage(`{"slot":1}`)})
	}
	if err := sw.AddRequests(recs...); err != nil {
		t.Fatal(err)
	}
	if err := nb.AddTelemetry(ctx, leg.ID, []telemetry.Sample{{Source: "hwmon", T: 5 * time.Millisecond, Points: []telemetry.Point{{Device: "cpu", Metric: "temp_c", Value: 51.5}}, Err: "partial read"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := nb.FinishLeg(ctx, leg.ID, store.LegOutcome{PeakRSSBytes: 123456789}); err != nil {
		t.Fatal(err)
	}
}

// tamperDB opens a copy for editing behind the store's back.
func tamperDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("PRAGMA ignore_check_constraints = ON"); err != nil {
		t.Fatal(err)
	}
	return db
}

// withoutTriggers runs edit with table's triggers dropped, then puts them back.
func withoutTriggers(t *testing.T, db *sql.DB, table string, edit func() error) error {
	t.Helper()
	rows, err := db.Query("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?", table)
	if err != nil {
		t.Fatal(err)
	}
	var names, defs []string
	for rows.Next() {
		var n, s string
		if err := rows.Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		names, defs = append(names, n), append(defs, s)
	}
	rows.Close()
	for _, n := range names {
		if _, err := db.Exec("DROP TRIGGER " + n); err != nil {
			t.Fatal(err)
		}
	}
	editErr := edit()
	for _, s := range defs {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return editErr
}

// TestFaultsNotebookDamagedLegRecord is the repro: "plan_leg":"tiny/d0" rewritten as
// "tiny/dX" inside notebook.db (same length). verify must name the row, the column and the
// entry, exit 1; the untouched copy verifies.
func TestFaultsNotebookDamagedLegRecord(t *testing.T) {
	fixture, _ := tamperFixture(t)
	nb := filepath.Join(t.TempDir(), "notebook.db")
	copyNotebook(t, fixture, nb)
	db := tamperDB(t, nb)
	var leg, seq int64
	if err := db.QueryRow(`SELECT l.id, j.seq FROM legs l JOIN journal j ON j.kind = 'leg.started' AND json_extract(j.payload, '$.leg') = l.id
		WHERE l.detail_json LIKE '%"plan_leg":"tiny/d0"%' ORDER BY l.id LIMIT 1`).Scan(&leg, &seq); err != nil {
		t.Fatal(err)
	}
	var detail string
	if err := withoutTriggers(t, db, "legs", func() error {
		if _, err := db.Exec(`UPDATE legs SET detail_json = replace(detail_json, '"tiny/d0"', '"tiny/dX"') WHERE id = ?`, leg); err != nil {
			return err
		}
		return db.QueryRow("SELECT detail_json FROM legs WHERE id = ?", leg).Scan(&detail)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := notebookCounts(t, nb)
	code, out, errOut := runCLI("notebook", "verify", "--notebook", nb)
	want := fmt.Sprintf("notebook %s: DAMAGED: legs row %d, column detail_json: %q, the journal recorded %s (journal entry %d (leg.started) recorded it); "+
		"the journal's chain holds, but this row no longer says what was recorded: %s\n",
		nb, leg, detail, strings.Replace(detail, "tiny/dX", "tiny/d0", 1), seq, recoverAdvice)
	if code != 1 || out != want || errOut != "" {
		t.Fatalf("verify of a damaged leg record: exit %d, want 1\nstdout %q\nwant   %q\nstderr %q", code, out, want, errOut)
	}
	if after := notebookCounts(t, nb); after.JournalSeq != before.JournalSeq || after.JournalHead != before.JournalHead {
		t.Fatalf("verify wrote to the notebook: %+v -> %+v", before, after)
	}
}

// sweepExempt: columns that feed no figure, verdict or receipt, each with the reason. An
// edit of one of them must change nothing any reader shows; the sweep still edits them and
// reports what verify said.
var sweepExempt = map[string]string{
	"legs.owner_host":  "who records a running leg: read only to recover the legs of a dead process, shown nowhere",
	"legs.owner_pid":   "as owner_host",
	"legs.owner_token": "as owner_host",
	// The study's bookkeeping times: the times a study shows are its journal entries' (the
	// study list's last activity is its latest entry's time; updated_at only without one).
	"studies.created_at":   "bookkeeping time; shown nowhere (a study's times are its entries')",
	"studies.updated_at":   "bookkeeping time; read only for a study without journal entries, which the chain makes impossible",
	"machines.created_at":  "bookkeeping time of the machine record; shown nowhere",
	"builds.created_at":    "bookkeeping time of the build record; shown nowhere",
	"artefacts.created_at": "bookkeeping time of the hash cache row; shown nowhere",
	"artefacts.updated_at": "bookkeeping time of the hash cache row; shown nowhere",
	// A row's own id that no other row names: editing it changes nothing a reader shows but
	// the rows' order, which verify holds to the journal's (ids are given in journal order;
	// a row moved past another is caught — with one row there is no order to change).
	"amendments.id": "an id nothing names", "deviations.id": "an id nothing names", "receipts.id": "an id nothing names",
	"hosts.id": "an id nothing names (the latest row of a name wins: order, held to the journal's)", "plans.id": "an id nothing names (a plan is read by its study)",
	"bench_configs.key_sha256":  "the lookup key for reusing a configuration row when rows are written; every read joins by id",
	"bench_samples.source_line": "the line of llama-bench's output a row was read from; no figure, verdict or receipt reads it (rows.jsonl is the row's fields)",
	"transcript_chunks.seq":     "orders a leg's chunks: the transcript digest covers their concatenation in that order, so a reorder is caught; a leg of one chunk has no order to change",
	"transcript_chunks.codec":   "every chunk is read as gzip whatever it says (the only codec); the data itself is hashed",
	// gates: written for the record by the study engine; no figure, verdict, receipt or view
	// reads the table (store.Gates has no caller outside tests).
	"gates.id": "see gates", "gates.study_id": "see gates", "gates.leg_id": "see gates", "gates.cell_json": "see gates",
	"gates.name": "see gates", "gates.code": "see gates", "gates.passed": "see gates", "gates.observed": "see gates",
	"gates.limit_value": "see gates", "gates.detail_json": "see gates", "gates.created_at": "see gates",
	// study_summaries: a cache of the overview's series, read by kind, study and the study's
	// current version; verify recomputes the payload of every row a reader would use from the
	// rows (overview.CheckSummaries). An edit of these columns makes the row one no reader
	// uses (the overview reads the rows again), or, if it lands on a version in use, a row
	// whose payload verify compares.
	"study_summaries.study_id":   "moves the summary to a study whose current version it does not carry: read by no one",
	"study_summaries.kind":       "a kind no reader asks for: read by no one",
	"study_summaries.version":    "a version the study is not at: read by no one",
	"study_summaries.created_at": "bookkeeping time of the cache row; shown nowhere",
}

// sweepNotCovered: columns that DO feed what the app shows and that verify does not catch
// yet. Listed so the figures stay honest; the test fails when one of them is caught (take it
// off the list) and when a column outside the list is missed.
var sweepNotCovered = map[string]string{}

// sweepRowOrder: the row a table's edit goes to, where the first is not the one that matters.
// study_summaries: the newest, the summary the overview reads (the older ones are of versions
// the study has moved past, which no reader uses).
var sweepRowOrder = map[string]string{"study_summaries": " DESC"}

// sweepValue: for a column with a CHECK constraint, another value it allows (a value it
// does not allow is caught by SQLite's integrity check, which verify runs: that would not
// show whether verify holds the column to the journal).
var sweepValue = map[string][]any{
	"studies.status": {"halted", "complete"}, "legs.kind": {"bench", "canary"}, "legs.state": {"interrupted", "finished"},
	"predictions.kind": {"fork", "band"}, "verdicts.source": {"human", "computed"}, "bench_row_status.status": {"flagged", "result"},
	"hosts.removed": {int64(1), int64(0)},
}

// mutate returns another value of the same type.
var lastAlnum = regexp.MustCompile(`[0-9A-Za-z][^0-9A-Za-z]*$`)

func mutate(v any, declType string, pk bool) any {
	switch x := v.(type) {
	case int64:
		switch {
		case pk:
			return x + 1000000
		case x == 0:
			return int64(1)
		case x == 1:
			return int64(0)
		}
		return x + 1
	case float64:
		return x*1.5 + 1
	case string:
		loc := lastAlnum.FindStringIndex(x)
		if loc == nil {
			return x + "x"
		}
		c := x[loc[0]]
		switch {
		case c == '9':
			c = '0'
		case c == 'z':
			c = 'a'
		case c == 'Z':
			c = 'A'
		default:
			c++
		}
		return x[:loc[0]] + string(c) + x[loc[0]+1:]
	case []byte:
		y := append([]byte{}, x...)
		if len(y) == 0 {
			return []byte("x")
		}
		y[len(y)/2] ^= 0x5a
		return y
	case nil:
		switch strings.ToUpper(declType) {
		case "INTEGER":
			return int64(1)
		case "REAL":
			return 1.5
		case "BLOB":
			return []byte("x")
		}
		return "x"
	}
	panic(fmt.Sprintf("mutate %T", v))
}

// TestFaultsNotebookTamperSweep: for every column of every table (from the schema, PRAGMA
// table_info), one value changed in a copy of the fixture; `notebook verify` must catch it
// (exit 1, DAMAGED or BROKEN), except the columns exempted (they feed nothing) and those
// listed as not covered yet. A table without rows in the fixture is reported, not tried.
func TestFaultsNotebookTamperSweep(t *testing.T) {
	fixture, _ := tamperFixture(t)
	db := tamperDB(t, fixture)
	var tables []string
	rows, err := db.Query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	type column struct {
		table, name, typ string
		pk               int
	}
	var cols []column
	keys := map[string][]string{} // table → the columns that name one row
	for _, tb := range tables {
		r, err := db.Query("SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", tb)
		if err != nil {
			t.Fatal(err)
		}
		var pks []column
		for r.Next() {
			var c column
			c.table = tb
			if err := r.Scan(&c.name, &c.typ, &c.pk); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
			if c.pk > 0 {
				pks = append(pks, c)
			}
		}
		r.Close()
		if _, err := db.Exec("SELECT rowid FROM " + tb + " LIMIT 1"); err == nil {
			keys[tb] = []string{"rowid"}
		} else {
			sort.Slice(pks, func(i, j int) bool { return pks[i].pk < pks[j].pk })
			for _, p := range pks {
				keys[tb] = append(keys[tb], p.name)
			}
		}
	}
	db.Close()

	var tried, caught, exemptTried, empty int
	var missed, unexpected, emptyTables []string
	emptySeen := map[string]bool{}
	dir := t.TempDir()
	for i, c := range cols {
		name := c.table + "." + c.name
		nb := filepath.Join(dir, fmt.Sprintf("%03d.db", i))
		copyNotebook(t, fixture, nb)
		os.Remove(nb + ".anchor")
		db := tamperDB(t, nb)
		key := strings.Join(keys[c.table], ", ")
		q := "SELECT " + key + ", " + c.name + " FROM " + c.table
		var vals []any
		for _, cond := range []string{" WHERE " + c.name + " IS NOT NULL", ""} {
			r, err := db.Query(q + cond + " ORDER BY " + key + sweepRowOrder[c.table] + " LIMIT 1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Next() {
				vals = make([]any, len(keys[c.table])+1)
				ptrs := make([]any, len(vals))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := r.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
			}
			r.Close()
			if vals != nil {
				break
			}
		}
		if vals == nil {
			db.Close()
			empty++
			if !emptySeen[c.table] {
				emptySeen[c.table] = true
				emptyTables = append(emptyTables, c.table)
			}
			continue
		}
		old := vals[len(vals)-1]
		neu := mutate(old, c.typ, c.pk > 0)
		for _, v := range sweepValue[name] { // the first allowed value that is not the old one
			if v != old && fmt.Sprint(v) != fmt.Sprint(old) {
				neu = v
				break
			}
		}
		where := make([]string, len(keys[c.table]))
		for i, k := range keys[c.table] {
			where[i] = k + " = ?"
		}
		args := append([]any{neu}, vals[:len(vals)-1]...)
		if err := withoutTriggers(t, db, c.table, func() error {
			_, err := db.Exec("UPDATE "+c.table+" SET "+c.name+" = ? WHERE "+strings.Join(where, " AND "), args...)
			if err != nil && strings.Contains(err.Error(), "UNIQUE") { // the edit made another row's key: edit it further
				neu = mutate(neu, c.typ, true)
				if s, ok := neu.(string); ok {
					neu = s + "~"
				}
				args[0] = neu
				_, err = db.Exec("UPDATE "+c.table+" SET "+c.name+" = ? WHERE "+strings.Join(where, " AND "), args...)
			}
			return err
		}); err != nil {
			t.Fatalf("%s: edit %v -> %v: %v", name, old, neu, err)
		}
		db.Close()
		code, out, errOut := runCLI("notebook", "verify", "--notebook", nb)
		hit := code == 1 && (strings.Contains(out, ": DAMAGED: ") || strings.Contains(out, ": BROKEN at "))
		first, _, _ := strings.Cut(out+errOut, "\n")
		_, exempt := sweepExempt[name]
		_, known := sweepNotCovered[name]
		switch {
		case exempt:
			exemptTried++
			t.Logf("exempt   %-34s %v -> %v: exit %d %s", name, shortVal(old), shortVal(neu), code, first)
			continue
		case hit && known:
			unexpected = append(unexpected, name)
		case !hit && !known:
			missed = append(missed, fmt.Sprintf("%s (%v -> %v): exit %d %s", name, shortVal(old), shortVal(neu), code, first))
		}
		tried++
		if hit {
			caught++
		}
		label := map[bool]string{true: "caught", false: "MISSED"}[hit]
		if !hit && known {
			label = "gap"
		}
		t.Logf("%-8s %-34s %v -> %v: exit %d %s", label, name, shortVal(old), shortVal(neu), code, first)
	}
	t.Logf("tamper sweep: %d columns of %d tables; %d tried, %d caught; %d exempt (feed nothing), %d not covered yet; %d columns in tables without rows (%s)",
		len(cols), len(tables), tried, caught, exemptTried, len(sweepNotCovered), empty, strings.Join(emptyTables, ", "))
	if len(missed) > 0 {
		t.Errorf("verify missed %d tampered columns:\n  %s", len(missed), strings.Join(missed, "\n  "))
	}
	if len(unexpected) > 0 {
		t.Errorf("now caught, take them off sweepNotCovered: %s", strings.Join(unexpected, ", "))
	}
}

func shortVal(v any) string {
	s := fmt.Sprint(v)
	if b, ok := v.([]byte); ok {
		s = fmt.Sprintf("%d bytes", len(b))
	}
	if len(s) > 40 {
		s = s[:37] + "…"
	}
	return s
}
