package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sparkbench/runner/benchfmt"
)

// LegKindBatched is a llama-batched-bench run (schema 7); an imported batched-bench file is a
// leg of kind imported like any other import.
const LegKindBatched = "batched"

// BatchedModel names the model a leg's batched-bench rows measured: the -m argument as given
// and, when the run hashed it, the file's SHA-256. Imported files carry neither.
type BatchedModel struct {
	Filename string
	SHA256   string
}

// BatchedRow is one stored llama-batched-bench row with its leg.
type BatchedRow struct {
	LegID    int64
	Seq      int64
	StudyID  int64
	LegState string // running, finished, interrupted, imported
	LegClass string // ok, … (the leg's class; empty while it runs)
	Model    BatchedModel
	benchfmt.BatchedResult
}

// batchedColumns are the stored columns after (leg_id, seq, study_id), in insert order; the
// digest hashes them in this order too.
var batchedColumns = []string{"model_filename", "model_sha256", "pp", "tg", "b", "n_kv", "t_pp", "s_pp", "t_tg", "s_tg", "t", "s",
	"n_kv_max", "n_batch", "n_ubatch", "flash_attn", "is_pp_shared", "is_tg_separate", "n_gpu_layers", "n_threads",
	"n_threads_batch", "extra_json", "source_line"}

var batchedDigestCols = "seq, " + strings.Join(batchedColumns, ", ")

func insertBatchedTx(tx *sql.Tx, legID, studyID, seq int64, m BatchedModel, rows []benchfmt.BatchedResult) error {
	if len(rows) == 0 {
		return nil
	}
	q := "INSERT INTO batched_samples (leg_id, seq, study_id, " + strings.Join(batchedColumns, ", ") + ") VALUES (?, ?, ?" +
		strings.Repeat(", ?", len(batchedColumns)) + ")"
	stmt, err := tx.Prepare(q)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := range rows {
		r := &rows[i]
		if err := r.Check(); err != nil {
			return fmt.Errorf("batched-bench row %s: %w", r.Label(), err)
		}
		args := []any{legID, seq + int64(i), studyID, nullStr(m.Filename), nullStr(strings.ToLower(m.SHA256)),
			r.PP, r.TG, r.B, r.NKV, r.TPP, r.SPP, r.TTG, r.STG, r.T, r.S}
		for _, f := range r.BatchedSettings.Fields() {
			if *f == nil {
				args = append(args, nil)
			} else {
				args = append(args, **f)
			}
		}
		var extra any
		if len(r.Extra) > 0 {
			b, err := CanonicalJSON(r.Extra)
			if err != nil {
				return err
			}
			extra = string(b)
		}
		var line any
		if r.Line > 0 {
			line = int64(r.Line)
		}
		if _, err := stmt.Exec(append(args, extra, line)...); err != nil {
			return fmt.Errorf("store batched-bench row %s: %w", r.Label(), err)
		}
	}
	return nil
}

// AddBatched appends llama-batched-bench rows to a running leg (numbered after the rows it
// already has), in one transaction. A row that fails BatchedResult.Check is refused and
// nothing is written.
func (n *Notebook) AddBatched(ctx context.Context, legID int64, m BatchedModel, rows ...benchfmt.BatchedResult) error {
	if n.readOnly {
		return ErrReadOnly
	}
	if len(rows) == 0 {
		return nil
	}
	return n.write(ctx, func(tx *sql.Tx) error {
		var studyID, seq int64
		var state string
		err := tx.QueryRow("SELECT study_id, state FROM legs WHERE id = ?", legID).Scan(&studyID, &state)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("add batched-bench rows: no leg %d", legID)
		}
		if err != nil {
			return err
		}
		if state != LegRunning {
			return fmt.Errorf("add batched-bench rows: leg %d is %s; rows join a leg only while it runs", legID, state)
		}
		if err := tx.QueryRow("SELECT COALESCE(MAX(seq) + 1, 0) FROM batched_samples WHERE leg_id = ?", legID).Scan(&seq); err != nil {
			return err
		}
		return insertBatchedTx(tx, legID, studyID, seq, m, rows)
	})
}

// BatchedQuery selects stored batched-bench rows.
type BatchedQuery struct {
	LegID int64 // one leg (every row, whatever the leg's class)
	// Model matches a row's model: its SHA-256 (64 hex digits, either case), or its -m path as
	// given, or that path's base name.
	Model   string
	StudyID int64 // 0: every study
	// AllLegs also takes rows of legs that did not end ok (crashed, stopped, still running …);
	// by default only finished legs of class ok and imported legs count.
	AllLegs bool
}

// BatchedRows reads one leg's batched-bench rows in order.
func (n *Notebook) BatchedRows(ctx context.Context, legID int64) ([]BatchedRow, error) {
	return n.BatchedRowsFor(ctx, BatchedQuery{LegID: legID, AllLegs: true})
}

// BatchedRowsFor reads batched-bench rows by leg, model and study, ordered by leg and row.
// A notebook older than schema 7 has none.
func (n *Notebook) BatchedRowsFor(ctx context.Context, q BatchedQuery) ([]BatchedRow, error) {
	if ok, err := hasTable(ctx, n.rdb, "batched_samples"); err != nil || !ok {
		return nil, err
	}
	var where []string
	var args []any
	if q.LegID != 0 {
		where, args = append(where, "s.leg_id = ?"), append(args, q.LegID)
	}
	if q.StudyID != 0 {
		where, args = append(where, "s.study_id = ?"), append(args, q.StudyID)
	}
	if q.Model != "" {
		where = append(where, "(s.model_sha256 = lower(?) OR s.model_filename = ? OR s.model_filename LIKE ? ESCAPE '\\')")
		base := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(q.Model)
		args = append(args, q.Model, q.Model, "%/"+base)
	}
	if !q.AllLegs {
		where = append(where, "((l.state = 'finished' AND l.class = 'ok') OR l.state = 'imported')")
	}
	sqlText := "SELECT s.leg_id, s.seq, s.study_id, l.state, l.class, s." + strings.Join(batchedColumns, ", s.") +
		" FROM batched_samples s JOIN legs l ON l.id = s.leg_id"
	if len(where) > 0 {
		sqlText += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := n.rdb.QueryContext(ctx, sqlText+" ORDER BY s.leg_id, s.seq", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BatchedRow
	for rows.Next() {
		var r BatchedRow
		var file, sum, extra sql.NullString
		var line sql.NullInt64
		set := make([]sql.NullInt64, len(benchfmt.BatchedSettingNames))
		dst := []any{&r.LegID, &r.Seq, &r.StudyID, &r.LegState, &r.LegClass, &file, &sum,
			&r.PP, &r.TG, &r.B, &r.NKV, &r.TPP, &r.SPP, &r.TTG, &r.STG, &r.T, &r.S}
		for i := range set {
			dst = append(dst, &set[i])
		}
		if err := rows.Scan(append(dst, &extra, &line)...); err != nil {
			return nil, err
		}
		r.Model = BatchedModel{Filename: file.String, SHA256: sum.String}
		for i, f := range r.BatchedSettings.Fields() {
			if set[i].Valid {
				v := set[i].Int64
				*f = &v
			}
		}
		if extra.Valid {
			if err := json.Unmarshal([]byte(extra.String), &r.Extra); err != nil {
				return nil, fmt.Errorf("leg %d row %d: extra_json: %w", r.LegID, r.Seq, err)
			}
		}
		r.Line = int(line.Int64)
		out = append(out, r)
	}
	return out, rows.Err()
}

// batchedTests names the shapes of batched-bench rows for an import's summary, in order of
// appearance: "pp128+tg128 B=1,2,4,8".
func batchedTests(rows []benchfmt.BatchedResult) []string {
	type shape struct{ pp, tg int64 }
	var order []shape
	bs := map[shape][]string{}
	for _, r := range rows {
		k := shape{r.PP, r.TG}
		if _, ok := bs[k]; !ok {
			order = append(order, k)
		}
		bs[k] = append(bs[k], strconv.FormatInt(r.B, 10))
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, fmt.Sprintf("pp%d+tg%d B=%s", k.pp, k.tg, strings.Join(bs[k], ",")))
	}
	return out
}

func hasTable(ctx context.Context, q querier, name string) (bool, error) {
	var c int64
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", name).Scan(&c)
	return c > 0, err
}
