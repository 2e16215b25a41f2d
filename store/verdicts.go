package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The notebook's verdicts, findings, receipts, gates.

// Verdict sources.
const (
	VerdictComputed = "computed"
	VerdictHuman    = "human"
)

// Verdict is a computed verdict on a prediction (HIT, MISS, MISS (edge), an arm, HOLDS, …)
// or a human one (PASS, FAIL, NOTE with a rationale).
type Verdict struct {
	ID           int64
	StudyID      int64
	PredictionID int64
	Source       string
	Outcome      string
	Observed     *float64
	Detail       json.RawMessage
	Rationale    string
	Author       string
	CreatedAt    time.Time
	JournalSeq   int64
}

// RecordVerdict records and journals a computed verdict.
func (n *Notebook) RecordVerdict(ctx context.Context, v Verdict) (Verdict, error) {
	v.Source = VerdictComputed
	return n.recordVerdict(ctx, v, KindVerdict)
}

// RecordHumanVerdict records and journals a human verdict: PASS, FAIL or NOTE, with a rationale.
func (n *Notebook) RecordHumanVerdict(ctx context.Context, v Verdict) (Verdict, error) {
	v.Source = VerdictHuman
	switch v.Outcome {
	case "PASS", "FAIL", "NOTE":
	default:
		return Verdict{}, fmt.Errorf("human verdict %q: must be PASS, FAIL or NOTE", v.Outcome)
	}
	if strings.TrimSpace(v.Rationale) == "" {
		return Verdict{}, errors.New("a human verdict needs a rationale")
	}
	return n.recordVerdict(ctx, v, KindHumanVerdict)
}

func (n *Notebook) recordVerdict(ctx context.Context, v Verdict, kind string) (Verdict, error) {
	if v.Outcome == "" {
		return Verdict{}, errors.New("a verdict needs an outcome")
	}
	detail := "{}"
	if len(v.Detail) > 0 {
		detail = jsonOr(v.Detail, "{}")
	}
	err := n.write(ctx, func(tx *sql.Tx) error {
		var study int64
		var key string
		if err := tx.QueryRow("SELECT study_id, key FROM predictions WHERE id = ?", v.PredictionID).Scan(&study, &key); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("verdict: prediction %d does not exist", v.PredictionID)
			}
			return err
		}
		v.StudyID = study
		je, err := n.appendJournalTx(tx, kind, study, map[string]any{"study": study, "prediction": v.PredictionID, "key": key,
			"source": v.Source, "outcome": v.Outcome, "observed": floatPtr(v.Observed), "detail": json.RawMessage(detail),
			"rationale": v.Rationale, "author": v.Author})
		if err != nil {
			return err
		}
		res, err := tx.Exec(`INSERT INTO verdicts (study_id, prediction_id, source, outcome, observed, detail_json, rationale, author, created_at, journal_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, study, v.PredictionID, v.Source, v.Outcome, floatPtr(v.Observed), detail, v.Rationale, v.Author, FormatTime(je.At), je.Seq)
		if err != nil {
			return fmt.Errorf("record verdict: %w", err)
		}
		v.ID, _ = res.LastInsertId()
		v.CreatedAt, v.JournalSeq, v.Detail = je.At, je.Seq, json.RawMessage(detail)
		return nil
	})
	return v, err
}

// Finding is a numbered free-text finding (F1, F2, …) with its evidence.
type Finding struct {
	ID            int64
	Number        int // 0 on AddFinding: the next number
	StudyID       int64
	Title         string
	Body          string
	LegIDs        []int64
	PredictionIDs []int64
	CreatedAt     time.Time
	JournalSeq    int64
}

// Label is "F<number>".
func (f Finding) Label() string { return "F" + strconv.Itoa(f.Number) }

// AddFinding records and journals a finding.
func (n *Notebook) AddFinding(ctx context.Context, f Finding) (Finding, error) {
	if strings.TrimSpace(f.Title) == "" {
		return Finding{}, errors.New("a finding needs a title")
	}
	if f.LegIDs == nil {
		f.LegIDs = []int64{}
	}
	if f.PredictionIDs == nil {
		f.PredictionIDs = []int64{}
	}
	err := n.write(ctx, func(tx *sql.Tx) error {
		if f.Number == 0 {
			if err := tx.QueryRow("SELECT COALESCE(MAX(number), 0) + 1 FROM findings").Scan(&f.Number); err != nil {
				return err
			}
		}
		je, err := n.appendJournalTx(tx, KindFinding, f.StudyID, map[string]any{"number": f.Number, "label": f.Label(), "study": nullID(f.StudyID),
			"title": f.Title, "body": f.Body, "legs": f.LegIDs, "predictions": f.PredictionIDs})
		if err != nil {
			return err
		}
		res, err := tx.Exec("INSERT INTO findings (number, study_id, title, body, created_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?)",
			f.Number, nullID(f.StudyID), f.Title, f.Body, FormatTime(je.At), je.Seq)
		if err != nil {
			return fmt.Errorf("record finding %s: %w", f.Label(), err)
		}
		f.ID, _ = res.LastInsertId()
		for _, l := range f.LegIDs {
			if _, err := tx.Exec("INSERT INTO finding_evidence (finding_id, leg_id) VALUES (?, ?)", f.ID, l); err != nil {
				return fmt.Errorf("finding %s evidence leg %d: %w", f.Label(), l, err)
			}
		}
		for _, p := range f.PredictionIDs {
			if _, err := tx.Exec("INSERT INTO finding_evidence (finding_id, prediction_id) VALUES (?, ?)", f.ID, p); err != nil {
				return fmt.Errorf("finding %s evidence prediction %d: %w", f.Label(), p, err)
			}
		}
		f.CreatedAt, f.JournalSeq = je.At, je.Seq
		return nil
	})
	return f, err
}

// Receipt records an exported receipt (its bytes live in a file; the notebook keeps the hash).
type Receipt struct {
	ID         int64
	StudyID    int64
	Format     string // md, json, bundle
	SHA256     string
	Bytes      int64
	Path       string
	CreatedAt  time.Time
	JournalSeq int64
}

// RecordReceipt journals receipt.exported.
func (n *Notebook) RecordReceipt(ctx context.Context, r Receipt) (Receipt, error) {
	if len(r.SHA256) != 64 {
		return Receipt{}, errors.New("a receipt needs its SHA-256")
	}
	err := n.write(ctx, func(tx *sql.Tx) error {
		je, err := n.appendJournalTx(tx, KindReceiptExported, r.StudyID, map[string]any{"study": r.StudyID, "format": r.Format, "sha256": r.SHA256, "bytes": r.Bytes, "path": r.Path})
		if err != nil {
			return err
		}
		res, err := tx.Exec("INSERT INTO receipts (study_id, format, sha256, bytes, path, created_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
			r.StudyID, r.Format, r.SHA256, r.Bytes, r.Path, FormatTime(je.At), je.Seq)
		if err != nil {
			return fmt.Errorf("record receipt: %w", err)
		}
		r.ID, _ = res.LastInsertId()
		r.CreatedAt, r.JournalSeq = je.At, je.Seq
		return nil
	})
	return r, err
}

// Gate is one gate evaluation: a cell's SLO gate, a CV gate, a backend marker gate, …
type Gate struct {
	ID       int64
	StudyID  int64
	LegID    int64           // 0: not one leg's
	Cell     json.RawMessage // e.g. {"candidate":"Q8","slots":4,"clients":8,"pass":"forward"}
	Name     string
	Code     string // failure code when not passed
	Passed   bool
	Observed *float64
	Limit    *float64
	Detail   json.RawMessage
}

// RecordGates stores gate results (in one transaction).
func (n *Notebook) RecordGates(ctx context.Context, gates []Gate) error {
	return n.write(ctx, func(tx *sql.Tx) error {
		now := n.nowText()
		for _, g := range gates {
			cell, detail := "{}", "{}"
			if len(g.Cell) > 0 {
				cell = jsonOr(g.Cell, "{}")
			}
			if len(g.Detail) > 0 {
				detail = jsonOr(g.Detail, "{}")
			}
			passed := 0
			if g.Passed {
				passed = 1
			}
			if _, err := tx.Exec(`INSERT INTO gates (study_id, leg_id, cell_json, name, code, passed, observed, limit_value, detail_json, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.StudyID, nullID(g.LegID), cell, g.Name, g.Code, passed, floatPtr(g.Observed), floatPtr(g.Limit), detail, now); err != nil {
				return fmt.Errorf("record gate %s: %w", g.Name, err)
			}
		}
		return nil
	})
}

// Gates lists a study's gate results.
func (n *Notebook) Gates(ctx context.Context, studyID int64) ([]Gate, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT id, study_id, COALESCE(leg_id, 0), cell_json, name, code, passed, observed, limit_value, detail_json FROM gates WHERE study_id = ? ORDER BY id", studyID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Gate
	for rows.Next() {
		var g Gate
		var cell, detail string
		var obs, lim sql.NullFloat64
		if err := rows.Scan(&g.ID, &g.StudyID, &g.LegID, &cell, &g.Name, &g.Code, &g.Passed, &obs, &lim, &detail); err != nil {
			return nil, err
		}
		g.Cell, g.Detail = json.RawMessage(cell), json.RawMessage(detail)
		if obs.Valid {
			g.Observed = &obs.Float64
		}
		if lim.Valid {
			g.Limit = &lim.Float64
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
