package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The records held to the chain. The journal's hash chain proves the entries; the tables the
// app reads (legs, predictions, verdicts, …) are copies of what those entries recorded, so a
// row changed behind the store's back (a byte edited in the file) would change what a study
// shows while the chain still verifies. Verify therefore compares every column that decides
// which rows count, what a verdict reads or what a receipt shows with the entry that recorded
// it (each row's journal_seq, or the leg's leg.started and leg.finished entries), and the
// sample tables' study ids with their leg's. Columns recorded by no entry are listed in
// docs/notebook.md ("What verify covers") with the reason.
//
// Rows written before a column was journaled (before issue 30, entries without the keys: a leg's detail — plan leg, role,
// attempt —, its temperatures and peak RSS) cannot be held to an entry that does not hold
// them: Verify counts them (VerifyReport.OlderRule) and says so, never claiming them covered.

// OlderRuleCount is how many rows of one column Verify could not hold to the chain because
// they were recorded before the chain held that column.
type OlderRuleCount struct {
	Column string // table.column
	Rows   int64
	Noun   string // what a row is ("" : a leg)
}

// field is one column of a row compared with one value of its journal entry's payload.
type field struct {
	col  string // column name
	key  string // payload key, dotted for nested objects ("origin.head.seq")
	mode byte   // 't' text, 'i' integer (null ↔ NULL), 'f' real (null ↔ NULL), 'j' JSON (canonical bytes; absent ↔ def), 'a' the entry's time
	def  string // 'j': the column's value when the payload lacks the key or holds null ("" = NULL)
}

// journaledTable is a table whose rows each name the entry that recorded them (journal_seq).
type journaledTable struct {
	table  string
	kinds  []string // the entry kinds a row of the table may name
	fields []field
}

var journaledTables = []journaledTable{
	{"plans", []string{KindPlanRegistered}, []field{{"study_id", "study", 'i', ""}, {"sha256", "plan_sha256", 't', ""},
		{"canonical_json", "plan", 'j', ""}, {"registered_at", "", 'a', ""}}},
	{"predictions", []string{KindPredictionRegistered}, []field{{"study_id", "study", 'i', ""}, {"key", "key", 't', ""},
		{"kind", "kind", 't', ""}, {"text", "text", 't', ""}, {"selector_json", "selector", 'j', "{}"}, {"spec_json", "spec", 'j', "{}"},
		{"registered_at", "", 'a', ""}}},
	{"amendments", []string{KindAmendment}, []field{{"study_id", "study", 'i', ""}, {"target", "target", 't', ""},
		{"reason", "reason", 't', ""}, {"change_json", "change", 'j', "{}"}, {"created_at", "", 'a', ""}}},
	{"deviations", []string{KindDeviation}, []field{{"study_id", "study", 'i', ""}, {"leg_id", "leg", 'i', ""},
		{"description", "description", 't', ""}, {"detail_json", "detail", 'j', "{}"}, {"created_at", "", 'a', ""}}},
	{"verdicts", []string{KindVerdict, KindHumanVerdict}, []field{{"study_id", "study", 'i', ""}, {"prediction_id", "prediction", 'i', ""},
		{"source", "source", 't', ""}, {"outcome", "outcome", 't', ""}, {"observed", "observed", 'f', ""},
		{"detail_json", "detail", 'j', "{}"}, {"rationale", "rationale", 't', ""}, {"author", "author", 't', ""}, {"created_at", "", 'a', ""}}},
	{"findings", []string{KindFinding}, []field{{"number", "number", 'i', ""}, {"study_id", "study", 'i', ""},
		{"title", "title", 't', ""}, {"body", "body", 't', ""}, {"created_at", "", 'a', ""}}},
	{"receipts", []string{KindReceiptExported}, []field{{"study_id", "study", 'i', ""}, {"format", "format", 't', ""},
		{"sha256", "sha256", 't', ""}, {"bytes", "bytes", 'i', ""}, {"path", "path", 't', ""}, {"created_at", "", 'a', ""}}},
	{"imported_bundles", []string{KindStudyImported}, []field{{"study_id", "study", 'i', ""}, {"bundle_sha256", "bundle_sha256", 't', ""},
		{"kind", "kind", 't', ""}, {"source", "source", 't', ""}, {"sparkbench", "sparkbench", 't', ""},
		{"origin_study_id", "origin.study", 'i', ""}, {"origin_name", "origin.name", 't', ""}, {"origin_status", "origin.status", 't', ""},
		{"origin_head_seq", "origin.head.seq", 'i', ""}, {"origin_head_hash", "origin.head.hash", 't', ""},
		{"excerpt_first_seq", "excerpt.first_seq", 'i', ""}, {"excerpt_last_seq", "excerpt.last_seq", 'i', ""},
		{"excerpt_prev_hash", "excerpt.first_prev_hash", 't', ""}, {"excerpt_last_hash", "excerpt.last_hash", 't', ""},
		{"machines_json", "origin.machines", 'j', "[]"}, {"imported_at", "", 'a', ""}}},
	{"hosts", []string{KindHostRecorded}, []field{{"created_at", "", 'a', ""}}}, // the rest: checkHosts
}

// rowDamage is a row that differs from the entry that recorded it.
func rowDamage(seq int64, kind, table string, id int64, col, what string) *BrokenEntry {
	return &BrokenEntry{Seq: seq, Kind: kind, Table: table, RowID: id, Column: col,
		Reason: fmt.Sprintf("%s row %d, column %s: %s", table, id, col, what)}
}

// checkRecords holds the tables to the entries that recorded them; the first damaged row is
// named (table, row id, column). err is for I/O problems.
func (n *Notebook) checkRecords(ctx context.Context, rep *VerifyReport) (*BrokenEntry, error) {
	if b, err := n.checkStudies(ctx, rep); b != nil || err != nil {
		return b, err
	}
	for _, t := range journaledTables {
		if ok, err := hasTable(ctx, n.rdb, t.table); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		if b, err := n.checkJournaledTable(ctx, rep, t); b != nil || err != nil {
			return b, err
		}
	}
	if b, err := n.checkFindingEvidence(ctx, rep); b != nil || err != nil {
		return b, err
	}
	legFP, b, err := n.checkLegRecords(ctx, rep)
	if b != nil || err != nil {
		return b, err
	}
	if b, err := n.checkMachinesBuilds(ctx, rep, legFP); b != nil || err != nil {
		return b, err
	}
	if b, err := n.checkArtefacts(ctx, rep); b != nil || err != nil {
		return b, err
	}
	if b, err := n.checkVerdictPredictions(ctx, rep.HeadSeq); b != nil || err != nil {
		return b, err
	}
	if b, err := n.checkSampleStudies(ctx); b != nil || err != nil {
		return b, err
	}
	if b, err := n.checkTranscriptSizes(ctx); b != nil || err != nil {
		return b, err
	}
	return n.checkImportedExcerpts(ctx)
}

// payloadAt finds a dotted key in a payload (found false: absent).
func payloadAt(p map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	head, rest, nested := strings.Cut(key, ".")
	v, ok := p[head]
	if !ok || !nested {
		return v, ok
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(v, &inner) != nil {
		return nil, false
	}
	return payloadAt(inner, rest)
}

// sameValue compares a column's value with the payload's value for it; "" when they agree,
// else what differs.
func sameValue(f field, col any, raw json.RawMessage, present bool, at string) string {
	isNull := !present || string(raw) == "null"
	show := func(v any) string {
		switch x := v.(type) {
		case nil:
			return "NULL"
		case []byte:
			return strconv.Quote(string(x))
		case string:
			return strconv.Quote(x)
		}
		return fmt.Sprint(v)
	}
	differ := func(want string) string {
		return fmt.Sprintf("%s, the journal recorded %s", show(col), want)
	}
	switch f.mode {
	case 'a':
		if s, ok := colText(col); !ok || s != at {
			return differ(strconv.Quote(at) + " (the entry's time)")
		}
	case 't':
		var want string
		if !isNull && json.Unmarshal(raw, &want) != nil {
			return differ(string(raw))
		}
		if s, ok := colText(col); !ok || s != want {
			return differ(strconv.Quote(want))
		}
	case 'i':
		if isNull {
			if col != nil {
				return differ("null")
			}
			return ""
		}
		want, err := strconv.ParseInt(string(raw), 10, 64)
		c, ok := col.(int64)
		if err != nil || !ok || c != want {
			return differ(string(raw))
		}
	case 'f':
		if isNull {
			if col != nil {
				return differ("null")
			}
			return ""
		}
		want, err := strconv.ParseFloat(string(raw), 64)
		var c float64
		switch x := col.(type) {
		case float64:
			c = x
		case int64:
			c = float64(x)
		default:
			return differ(string(raw))
		}
		if err != nil || c != want && !(math.IsNaN(c) && math.IsNaN(want)) {
			return differ(string(raw))
		}
	case 'j':
		s, isText := colText(col)
		if isNull {
			if f.def == "" && col == nil || isText && s == f.def {
				return ""
			}
			return differ("nothing (" + map[bool]string{true: "NULL", false: f.def}[f.def == ""] + ")")
		}
		want, err := CanonicalJSON(raw)
		if err != nil || !isText || !bytes.Equal(want, []byte(s)) {
			return differ(string(raw))
		}
	}
	return ""
}

func colText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

// checkJournaledTable compares each row of t with the entry its journal_seq names.
func (n *Notebook) checkJournaledTable(ctx context.Context, rep *VerifyReport, t journaledTable) (*BrokenEntry, error) {
	cols := make([]string, len(t.fields))
	for i, f := range t.fields {
		cols[i] = "t." + f.col
	}
	q := "SELECT t.id, t.journal_seq, COALESCE(j.kind, ''), COALESCE(j.study_id, 0), COALESCE(j.at, ''), COALESCE(j.payload, ''), " +
		strings.Join(cols, ", ") + " FROM " + t.table + " t LEFT JOIN journal j ON j.seq = t.journal_seq ORDER BY t.id"
	rows, err := n.rdb.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seen := map[int64]int64{} // journal_seq → row
	var lastSeq, lastID int64
	vals := make([]any, 6+len(t.fields))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		id, _ := vals[0].(int64)
		seq, _ := vals[1].(int64)
		kind, _ := colText(vals[2])
		at, _ := colText(vals[4])
		payload, _ := colText(vals[5])
		if kind != "" && seq > rep.HeadSeq {
			continue // recorded after the chain was walked (another process is recording): the next verify judges it
		}
		ownKind := false
		for _, k := range t.kinds {
			ownKind = ownKind || k == kind
		}
		if !ownKind {
			return rowDamage(seq, kind, t.table, id, "journal_seq", fmt.Sprintf("names journal entry %d, which is not a %s entry (the row was changed or written outside the store)",
				seq, strings.Join(t.kinds, " or "))), nil
		}
		if seq < lastSeq { // ids are given in the order the entries were journaled (one transaction each)
			return rowDamage(seq, kind, t.table, id, "id", fmt.Sprintf("comes after row %d but names an earlier journal entry (%d, row %d's is %d): a row's id or journal_seq was changed",
				lastID, seq, lastID, lastSeq)), nil
		}
		lastSeq, lastID = seq, id
		if other, dup := seen[seq]; dup {
			return rowDamage(seq, kind, t.table, id, "journal_seq", fmt.Sprintf("names journal entry %d, which row %d names too", seq, other)), nil
		}
		seen[seq] = id
		var p map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			return rowDamage(seq, kind, t.table, id, "journal_seq", "its entry's payload does not read: "+err.Error()), nil
		}
		if t.table == "verdicts" { // the source is the entry's kind
			src := VerdictComputed
			if kind == KindHumanVerdict {
				src = VerdictHuman
			}
			p["source"], _ = json.Marshal(src)
		}
		for i, f := range t.fields {
			raw, present := payloadAt(p, f.key)
			if d := sameValue(f, vals[6+i], raw, present, at); d != "" {
				return rowDamage(seq, kind, t.table, id, f.col, d), nil
			}
		}
		rep.RecordsChecked++
	}
	return nil, rows.Err()
}

// checkFindingEvidence: a finding's evidence rows are the legs and predictions its entry lists.
func (n *Notebook) checkFindingEvidence(ctx context.Context, rep *VerifyReport) (*BrokenEntry, error) {
	type evRow struct{ rowid, finding, leg, pred int64 }
	var evs []evRow
	rows, err := n.rdb.QueryContext(ctx, "SELECT rowid, finding_id, COALESCE(leg_id, 0), COALESCE(prediction_id, 0) FROM finding_evidence ORDER BY rowid")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var e evRow
		if err := rows.Scan(&e.rowid, &e.finding, &e.leg, &e.pred); err != nil {
			rows.Close()
			return nil, err
		}
		evs = append(evs, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The findings are read after their evidence: a finding recorded meanwhile (with its
	// evidence, in one transaction) is then known, and judged below only if the walk saw it.
	type finding struct {
		seq     int64
		payload string
	}
	findings := map[int64]finding{}
	var order []int64
	fr, err := n.rdb.QueryContext(ctx, "SELECT f.id, f.journal_seq, COALESCE(j.payload, '') FROM findings f LEFT JOIN journal j ON j.seq = f.journal_seq ORDER BY f.id")
	if err != nil {
		return nil, err
	}
	for fr.Next() {
		var id int64
		var f finding
		if err := fr.Scan(&id, &f.seq, &f.payload); err != nil {
			fr.Close()
			return nil, err
		}
		findings[id] = f
		order = append(order, id)
	}
	fr.Close()
	if err := fr.Err(); err != nil {
		return nil, err
	}
	type ev struct{ legs, preds []int64 }
	have := map[int64]*ev{}
	for _, e := range evs {
		if _, ok := findings[e.finding]; !ok {
			return &BrokenEntry{Table: "finding_evidence", RowID: e.rowid, Column: "finding_id",
				Reason: fmt.Sprintf("finding_evidence row %d, column finding_id: finding %d does not exist (the row was changed or written outside the store)", e.rowid, e.finding)}, nil
		}
		h := have[e.finding]
		if h == nil {
			h = &ev{}
			have[e.finding] = h
		}
		if e.leg != 0 {
			h.legs = append(h.legs, e.leg)
		}
		if e.pred != 0 {
			h.preds = append(h.preds, e.pred)
		}
	}
	for _, id := range order {
		f := findings[id]
		if f.seq > rep.HeadSeq {
			continue // recorded after the chain was walked
		}
		var p struct {
			Legs        []int64 `json:"legs"`
			Predictions []int64 `json:"predictions"`
		}
		_ = json.Unmarshal([]byte(f.payload), &p) // a payload that does not read was reported by checkJournaledTable
		e := have[id]
		if e == nil {
			e = &ev{}
		}
		if !equalIDs(e.legs, p.Legs) || !equalIDs(e.preds, p.Predictions) {
			return &BrokenEntry{Seq: f.seq, Kind: KindFinding, Table: "finding_evidence", RowID: id, Column: "leg_id, prediction_id",
				Reason: fmt.Sprintf("finding_evidence of finding %d: legs %v and predictions %v, the journal recorded legs %v and predictions %v",
					id, e.legs, e.preds, p.Legs, p.Predictions)}, nil
		}
		rep.RecordsChecked += int64(len(e.legs) + len(e.preds))
	}
	return nil, nil
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkSampleStudies: every sample row and plot aggregate belongs to its leg's study (the
// digests hash the rows without it; the figure queries select by it).
func (n *Notebook) checkSampleStudies(ctx context.Context) (*BrokenEntry, error) {
	for _, table := range []string{"bench_samples", "request_samples", "batched_samples", "telemetry_samples", "bench_series"} {
		if ok, err := hasTable(ctx, n.rdb, table); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		key := "s.seq"
		if table == "bench_series" {
			key = "s.n_depth"
		}
		var leg, seq, have, want int64
		err := n.rdb.QueryRowContext(ctx, "SELECT s.leg_id, "+key+", s.study_id, COALESCE(l.study_id, -1) FROM "+table+
			" s LEFT JOIN legs l ON l.id = s.leg_id WHERE l.study_id IS NOT s.study_id LIMIT 1").Scan(&leg, &seq, &have, &want)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, err
		}
		what := fmt.Sprintf("%s row (leg %d, seq %d)", table, leg, seq)
		if table == "bench_series" {
			what = fmt.Sprintf("%s row (leg %d, depth %d)", table, leg, seq)
		}
		reason := fmt.Sprintf("%s, column study_id: %d, but leg %d belongs to study %d", what, have, leg, want)
		if want == -1 {
			reason = fmt.Sprintf("%s, column leg_id: leg %d does not exist", what, leg)
		}
		return &BrokenEntry{Table: table, RowID: leg, Column: "study_id", Reason: reason}, nil
	}
	return nil, nil
}

// checkTranscriptSizes: each transcript chunk's raw_bytes (a leg's transcript size as shown)
// is the size of its data decompressed (the transcript digest covers the data).
func (n *Notebook) checkTranscriptSizes(ctx context.Context) (*BrokenEntry, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT leg_id, seq, raw_bytes, data FROM transcript_chunks ORDER BY leg_id, seq")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var leg, seq, raw int64
		var data []byte
		if err := rows.Scan(&leg, &seq, &raw, &data); err != nil {
			return nil, err
		}
		size, err := gunzipSize(data)
		if err != nil || size != raw {
			what := fmt.Sprintf("%d, the chunk decompresses to %d bytes", raw, size)
			if err != nil {
				what = fmt.Sprintf("the chunk does not decompress: %v", err)
			}
			return &BrokenEntry{Table: "transcript_chunks", RowID: leg, Column: "raw_bytes",
				Reason: fmt.Sprintf("transcript_chunks row (leg %d, chunk %d), column raw_bytes: %s", leg, seq, what)}, nil
		}
	}
	return nil, rows.Err()
}

// checkImportedExcerpts walks every imported study's kept journal excerpt again, from the
// first prev_hash to the last hash its import recorded (the study.imported entry holds both).
func (n *Notebook) checkImportedExcerpts(ctx context.Context) (*BrokenEntry, error) {
	if ok, err := hasTable(ctx, n.rdb, "imported_bundles"); err != nil || !ok {
		return nil, err
	}
	rows, err := n.rdb.QueryContext(ctx, "SELECT "+importedCols+" FROM imported_bundles ORDER BY id")
	if err != nil {
		return nil, err
	}
	var origins []ImportedOrigin
	for rows.Next() {
		o, err := scanOrigin(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		origins = append(origins, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, o := range origins {
		if err := n.CheckImportedChain(ctx, o); err != nil {
			return &BrokenEntry{Seq: o.JournalSeq, Kind: KindStudyImported, Table: "imported_journal", RowID: o.ImportID,
				Reason: "imported_journal of import " + strconv.FormatInt(o.ImportID, 10) + ": " + err.Error()}, nil
		}
	}
	return nil, nil
}

// checkVerdictPredictions: a verdict's prediction is the one its entry named (by id and key),
// so a prediction whose id or key changed loses no verdict silently.
func (n *Notebook) checkVerdictPredictions(ctx context.Context, head int64) (*BrokenEntry, error) {
	rows, err := n.rdb.QueryContext(ctx, `SELECT v.id, v.journal_seq, COALESCE(j.kind, ''), COALESCE(j.payload, ''), COALESCE(p.key, ''), COALESCE(p.study_id, 0), p.id IS NULL
		FROM verdicts v LEFT JOIN journal j ON j.seq = v.journal_seq LEFT JOIN predictions p ON p.id = v.prediction_id ORDER BY v.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, seq, study int64
		var kind, payload, key string
		var missing bool
		if err := rows.Scan(&id, &seq, &kind, &payload, &key, &study, &missing); err != nil {
			return nil, err
		}
		var p struct {
			Study int64  `json:"study"`
			Key   string `json:"key"`
		}
		_ = json.Unmarshal([]byte(payload), &p)
		if kind != "" && seq > head {
			continue // recorded after the chain was walked
		}
		if missing || key != p.Key || study != p.Study {
			return rowDamage(seq, kind, "predictions", id, "id, key", fmt.Sprintf("verdict %d's prediction is %q of study %d, the journal recorded %q of study %d (a prediction's id, key or study was changed)",
				id, key, study, p.Key, p.Study)), nil
		}
	}
	return nil, rows.Err()
}
