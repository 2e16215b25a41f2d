package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"sparkbench/runner/benchfmt"
)

// StudySummary is a study with its status and counts, for the studies list.
type StudySummary struct {
	Study
	PlanSHA256   string // "" until registered
	Legs         int
	RunningLegs  int
	Predictions  int
	Findings     int
	LastActivity time.Time
}

// Studies lists every study, most recently active first.
func (n *Notebook) Studies(ctx context.Context) ([]StudySummary, error) {
	return n.studies(ctx, "")
}

// StudySummaryOf is one study as Studies lists it (sql.ErrNoRows, wrapped: no such study).
func (n *Notebook) StudySummaryOf(ctx context.Context, id int64) (StudySummary, error) {
	out, err := n.studies(ctx, " WHERE s.id = ?", id)
	if err != nil {
		return StudySummary{}, err
	}
	if len(out) == 0 {
		return StudySummary{}, fmt.Errorf("study %d: %w", id, sql.ErrNoRows)
	}
	return out[0], nil
}

func (n *Notebook) studies(ctx context.Context, where string, args ...any) ([]StudySummary, error) {
	rows, err := n.rdb.QueryContext(ctx, `SELECT s.id, s.name, s.kind, s.status, s.description, s.created_at, s.updated_at,
		COALESCE((SELECT sha256 FROM plans p WHERE p.study_id = s.id), ''),
		(SELECT COUNT(*) FROM legs l WHERE l.study_id = s.id),
		(SELECT COUNT(*) FROM legs l WHERE l.study_id = s.id AND l.state = 'running'),
		(SELECT COUNT(*) FROM predictions p WHERE p.study_id = s.id),
		(SELECT COUNT(*) FROM findings f WHERE f.study_id = s.id),
		COALESCE((SELECT MAX(at) FROM journal j WHERE j.study_id = s.id), s.updated_at)
		FROM studies s`+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StudySummary
	for rows.Next() {
		var s StudySummary
		var c, u, last string
		if err := rows.Scan(&s.ID, &s.Name, &s.Kind, &s.Status, &s.Description, &c, &u, &s.PlanSHA256, &s.Legs, &s.RunningLegs,
			&s.Predictions, &s.Findings, &last); err != nil {
			return nil, err
		}
		s.CreatedAt, s.UpdatedAt, s.LastActivity = mustParseTime(c), mustParseTime(u), mustParseTime(last)
		if s.LastActivity.Before(s.UpdatedAt) {
			s.LastActivity = s.UpdatedAt
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].LastActivity.Equal(out[j].LastActivity) {
			return out[i].LastActivity.After(out[j].LastActivity)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// BenchRows reads a leg's llama-bench rows back as Results (with Known as recorded).
func (n *Notebook) BenchRows(ctx context.Context, legID int64) ([]benchfmt.Result, error) {
	cols := append(append([]string{}, configColumns...), "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns",
		"avg_ts", "stddev_ts", "samples_ns", "samples_ts", "extra_json", "known_mask", "source_line")
	rows, err := n.rdb.QueryContext(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM bench_rows WHERE leg_id = ? ORDER BY seq", legID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return scanResults(rows, len(cols))
}

func scanResults(rows *sql.Rows, ncols int) ([]benchfmt.Result, error) {
	vals := make([]any, ncols)
	ptrs := make([]any, ncols)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []benchfmt.Result
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r, err := resultFromRow(vals)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// resultFromRow builds a Result from the 44 field columns + extra_json, known_mask, source_line.
func resultFromRow(vals []any) (benchfmt.Result, error) {
	var b []byte
	b = append(b, '{')
	first := true
	for f := benchfmt.Field(0); f < benchfmt.NumFields; f++ {
		v := vals[f]
		if v == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendCanonicalString(b, f.Name())
		b = append(b, ':')
		switch x := v.(type) {
		case []byte:
			v = string(x)
		}
		switch x := v.(type) {
		case string:
			if f == benchfmt.FSamplesNs || f == benchfmt.FSamplesTs {
				b = append(b, x...)
			} else {
				b = appendCanonicalString(b, x)
			}
		case int64:
			b = fmt.Appendf(b, "%d", x)
		case float64:
			b = appendFloat(b, x)
		default:
			return benchfmt.Result{}, fmt.Errorf("column %s: unexpected %T", f.Name(), v)
		}
	}
	b = append(b, '}')
	r, err := benchfmt.ParseJSONLLine(b)
	if err != nil {
		return r, fmt.Errorf("stored row: %w", err)
	}
	if x, ok := vals[benchfmt.NumFields].(string); ok && x != "" {
		var extra map[string]json.RawMessage
		if err := json.Unmarshal([]byte(x), &extra); err != nil {
			return r, fmt.Errorf("stored row extra: %w", err)
		}
		r.Extra = extra
	}
	if k, ok := vals[benchfmt.NumFields+1].(int64); ok {
		r.Known = benchfmt.FieldSet(k) & r.Known // a stored NULL is never known
	}
	if l, ok := vals[benchfmt.NumFields+2].(int64); ok {
		r.Line = int(l)
	}
	return r, nil
}

// RequestRows reads a leg's request records.
func (n *Notebook) RequestRows(ctx context.Context, legID int64) ([]RequestRecord, error) {
	rows, err := n.rdb.QueryContext(ctx, `SELECT candidate, arm, slots, clients, pass, phase, req_index, COALESCE(client_index, 0),
		t_send_ns, t_first_ns, t_last_ns, t_end_ns, COALESCE(http_status, 0), COALESCE(n_predict, 0), COALESCE(tokens_predicted, 0),
		COALESCE(tokens_evaluated, 0), stop_type, COALESCE(prompt_ms, 0), COALESCE(predicted_ms, 0), COALESCE(predicted_per_second, 0),
		error, extra_json FROM request_samples WHERE leg_id = ? ORDER BY seq`, legID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RequestRecord
	for rows.Next() {
		var r RequestRecord
		var send int64
		var first, last, end sql.NullInt64
		var extra sql.NullString
		if err := rows.Scan(&r.Candidate, &r.Arm, &r.Slots, &r.Clients, &r.Pass, &r.Phase, &r.Index, &r.Client, &send, &first, &last, &end,
			&r.HTTPStatus, &r.NPredict, &r.TokensPredicted, &r.TokensEvaluated, &r.StopType, &r.PromptMs, &r.PredictedMs,
			&r.PredictedPerSecond, &r.Error, &extra); err != nil {
			return nil, err
		}
		r.TSend = time.Unix(0, send)
		if first.Valid {
			r.TFirst = time.Unix(0, first.Int64)
		}
		if last.Valid {
			r.TLast = time.Unix(0, last.Int64)
		}
		if end.Valid {
			r.TEnd = time.Unix(0, end.Int64)
		}
		if extra.Valid {
			r.Extra = json.RawMessage(extra.String)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ScoreRow is one line of a prediction scoreboard: the prediction, its latest computed
// verdict and its latest human verdict.
type ScoreRow struct {
	Prediction Prediction
	Computed   *Verdict
	Human      *Verdict
}

// Scoreboard lists a study's predictions with their latest verdicts.
func (n *Notebook) Scoreboard(ctx context.Context, studyID int64) ([]ScoreRow, error) {
	preds, err := n.Predictions(ctx, studyID)
	if err != nil {
		return nil, err
	}
	out := make([]ScoreRow, len(preds))
	for i, p := range preds {
		out[i].Prediction = p
		for _, src := range []string{VerdictComputed, VerdictHuman} {
			v, err := n.latestVerdict(ctx, p.ID, src)
			if err != nil {
				return nil, err
			}
			if src == VerdictComputed {
				out[i].Computed = v
			} else {
				out[i].Human = v
			}
		}
	}
	return out, nil
}

func (n *Notebook) latestVerdict(ctx context.Context, predictionID int64, source string) (*Verdict, error) {
	var v Verdict
	var obs sql.NullFloat64
	var detail, at string
	err := n.rdb.QueryRowContext(ctx, `SELECT id, study_id, prediction_id, source, outcome, observed, detail_json, rationale, author, created_at, journal_seq
		FROM verdicts WHERE prediction_id = ? AND source = ? ORDER BY id DESC LIMIT 1`, predictionID, source).
		Scan(&v.ID, &v.StudyID, &v.PredictionID, &v.Source, &v.Outcome, &obs, &detail, &v.Rationale, &v.Author, &at, &v.JournalSeq)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if obs.Valid {
		v.Observed = &obs.Float64
	}
	v.Detail, v.CreatedAt = json.RawMessage(detail), mustParseTime(at)
	return &v, nil
}

// Findings lists findings in number order (studyID 0: all).
func (n *Notebook) Findings(ctx context.Context, studyID int64) ([]Finding, error) {
	q := "SELECT id, number, COALESCE(study_id, 0), title, body, created_at, journal_seq FROM findings"
	var args []any
	if studyID != 0 {
		q += " WHERE study_id = ?"
		args = append(args, studyID)
	}
	rows, err := n.rdb.QueryContext(ctx, q+" ORDER BY number", args...)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for rows.Next() {
		var f Finding
		var at string
		if err := rows.Scan(&f.ID, &f.Number, &f.StudyID, &f.Title, &f.Body, &at, &f.JournalSeq); err != nil {
			rows.Close()
			return nil, err
		}
		f.CreatedAt = mustParseTime(at)
		out = append(out, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		ev, err := n.rdb.QueryContext(ctx, "SELECT COALESCE(leg_id, 0), COALESCE(prediction_id, 0) FROM finding_evidence WHERE finding_id = ? ORDER BY rowid", out[i].ID)
		if err != nil {
			return nil, err
		}
		for ev.Next() {
			var l, p int64
			if err := ev.Scan(&l, &p); err != nil {
				ev.Close()
				return nil, err
			}
			if l != 0 {
				out[i].LegIDs = append(out[i].LegIDs, l)
			}
			if p != 0 {
				out[i].PredictionIDs = append(out[i].PredictionIDs, p)
			}
		}
		ev.Close()
	}
	return out, nil
}

// Stats summarises the notebook.
type Stats struct {
	Path          string
	FileBytes     int64 // main file + WAL
	SchemaVersion int
	SQLite        string
	Tables        map[string]int64 // row counts
	JournalHead   string
	JournalSeq    int64
}

// Stats counts rows per table.
func (n *Notebook) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Path: n.path, SQLite: SQLiteVersion(), Tables: map[string]int64{}, JournalHead: GenesisHash}
	for _, f := range []string{n.path, n.path + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			st.FileBytes += fi.Size()
		}
	}
	if err := n.rdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&st.SchemaVersion); err != nil {
		return st, err
	}
	for _, t := range []string{"machines", "builds", "artefacts", "studies", "plans", "predictions", "amendments", "deviations",
		"legs", "bench_samples", "bench_configs", "request_samples", "transcript_chunks", "gates", "verdicts", "findings", "receipts", "journal"} {
		var c int64
		if err := n.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&c); err != nil {
			if strings.Contains(err.Error(), "no such table") {
				continue
			}
			return st, err
		}
		st.Tables[t] = c
	}
	// batched-bench rows (schema 7) and telemetry samples (schema 8) are listed once there are
	// some, so the statistics of a notebook without any read as before
	for _, table := range []string{"batched_samples", "telemetry_samples"} {
		if ok, err := hasTable(ctx, n.rdb, table); err != nil {
			return st, err
		} else if ok {
			var c int64
			if err := n.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&c); err != nil {
				return st, err
			}
			if c > 0 {
				st.Tables[table] = c
			}
		}
	}
	err := n.rdb.QueryRowContext(ctx, "SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").Scan(&st.JournalSeq, &st.JournalHead)
	if err != nil && err != sql.ErrNoRows {
		return st, err
	}
	return st, nil
}
