package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The notebook's predictions, amendments, deviations.

// Prediction kinds.
const (
	PredictionBand       = "band"
	PredictionFork       = "fork"
	PredictionComparison = "comparison"
	PredictionQuestion   = "question"
)

// Prediction is a pre-registered expectation. Selector says what it is about (a cell or a
// derived figure), Spec the expectation (band limits, fork arms, …); both are the app's JSON.
type Prediction struct {
	ID           int64
	StudyID      int64
	Key          string // e.g. "Q1", "2a"
	Kind         string
	Text         string
	Selector     json.RawMessage
	Spec         json.RawMessage
	RegisteredAt time.Time
	JournalSeq   int64
}

// RegisterPrediction records a prediction and journals it. It is refused once any leg of the
// study (other than imported ones) has started: a prediction must precede its results.
func (n *Notebook) RegisterPrediction(ctx context.Context, p Prediction) (Prediction, error) {
	if strings.TrimSpace(p.Key) == "" {
		return Prediction{}, errors.New("a prediction needs a key (e.g. Q1)")
	}
	sel, spec := jsonOr(p.Selector, "{}"), jsonOr(p.Spec, "{}")
	if len(p.Selector) == 0 {
		sel = "{}"
	}
	if len(p.Spec) == 0 {
		spec = "{}"
	}
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		var started int
		if err := tx.QueryRow("SELECT COUNT(*) FROM legs WHERE study_id = ? AND kind <> 'imported'", p.StudyID).Scan(&started); err != nil {
			return err
		}
		if started > 0 {
			return fmt.Errorf("prediction %s: study %d already has %d leg(s) started; predictions must be registered before any leg runs (record a deviation instead)", p.Key, p.StudyID, started)
		}
		je, err := n.appendJournalTx(tx, KindPredictionRegistered, p.StudyID, map[string]any{
			"study": p.StudyID, "key": p.Key, "kind": p.Kind, "text": p.Text,
			"selector": json.RawMessage(sel), "spec": json.RawMessage(spec)})
		if err != nil {
			return err
		}
		res, err := tx.Exec(`INSERT INTO predictions (study_id, key, kind, text, selector_json, spec_json, registered_at, journal_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, p.StudyID, p.Key, p.Kind, p.Text, sel, spec, FormatTime(je.At), je.Seq)
		if err != nil {
			return fmt.Errorf("register prediction %s: %w", p.Key, err)
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return Prediction{}, err
	}
	ps, err := n.predictions(ctx, "p.id = ?", id)
	if err != nil || len(ps) == 0 {
		return Prediction{}, err
	}
	return ps[0], nil
}

// Predictions lists a study's predictions in registration order.
func (n *Notebook) Predictions(ctx context.Context, studyID int64) ([]Prediction, error) {
	return n.predictions(ctx, "p.study_id = ?", studyID)
}

func (n *Notebook) predictions(ctx context.Context, where string, arg any) ([]Prediction, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT p.id, p.study_id, p.key, p.kind, p.text, p.selector_json, p.spec_json, p.registered_at, p.journal_seq FROM predictions p WHERE "+where+" ORDER BY p.id", arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Prediction
	for rows.Next() {
		var p Prediction
		var sel, spec, at string
		if err := rows.Scan(&p.ID, &p.StudyID, &p.Key, &p.Kind, &p.Text, &sel, &spec, &at, &p.JournalSeq); err != nil {
			return nil, err
		}
		p.Selector, p.Spec, p.RegisteredAt = json.RawMessage(sel), json.RawMessage(spec), mustParseTime(at)
		out = append(out, p)
	}
	return out, rows.Err()
}

// Amendment changes a plan or prediction before any leg it touches has run (the app checks
// that); it references its target and carries a reason.
type Amendment struct {
	ID         int64
	StudyID    int64
	Target     string // e.g. "prediction:Q1", "plan"
	Reason     string
	Change     json.RawMessage
	CreatedAt  time.Time
	JournalSeq int64
}

// AddAmendment records and journals an amendment.
func (n *Notebook) AddAmendment(ctx context.Context, a Amendment) (Amendment, error) {
	if strings.TrimSpace(a.Reason) == "" || strings.TrimSpace(a.Target) == "" {
		return Amendment{}, errors.New("an amendment needs a target and a reason")
	}
	change := "{}"
	if len(a.Change) > 0 {
		change = jsonOr(a.Change, "{}")
	}
	err := n.write(ctx, func(tx *sql.Tx) error {
		je, err := n.appendJournalTx(tx, KindAmendment, a.StudyID, map[string]any{"study": a.StudyID, "target": a.Target, "reason": a.Reason, "change": json.RawMessage(change)})
		if err != nil {
			return err
		}
		res, err := tx.Exec("INSERT INTO amendments (study_id, target, reason, change_json, created_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?)",
			a.StudyID, a.Target, a.Reason, change, FormatTime(je.At), je.Seq)
		if err != nil {
			return fmt.Errorf("record amendment: %w", err)
		}
		a.ID, _ = res.LastInsertId()
		a.CreatedAt, a.JournalSeq, a.Change = je.At, je.Seq, json.RawMessage(change)
		return nil
	})
	return a, err
}

// Deviation is a change recorded after legs ran; receipts show them as such.
type Deviation struct {
	ID          int64
	StudyID     int64
	LegID       int64 // 0: not about one leg
	Description string
	Detail      json.RawMessage
	CreatedAt   time.Time
	JournalSeq  int64
}

// AddDeviation records and journals a deviation.
func (n *Notebook) AddDeviation(ctx context.Context, d Deviation) (Deviation, error) {
	if strings.TrimSpace(d.Description) == "" {
		return Deviation{}, errors.New("a deviation needs a description")
	}
	detail := "{}"
	if len(d.Detail) > 0 {
		detail = jsonOr(d.Detail, "{}")
	}
	err := n.write(ctx, func(tx *sql.Tx) error {
		je, err := n.appendJournalTx(tx, KindDeviation, d.StudyID, map[string]any{"study": d.StudyID, "leg": nullID(d.LegID), "description": d.Description, "detail": json.RawMessage(detail)})
		if err != nil {
			return err
		}
		res, err := tx.Exec("INSERT INTO deviations (study_id, leg_id, description, detail_json, created_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?)",
			d.StudyID, nullID(d.LegID), d.Description, detail, FormatTime(je.At), je.Seq)
		if err != nil {
			return fmt.Errorf("record deviation: %w", err)
		}
		d.ID, _ = res.LastInsertId()
		d.CreatedAt, d.JournalSeq, d.Detail = je.At, je.Seq, json.RawMessage(detail)
		return nil
	})
	return d, err
}

// Deviations lists a study's deviations.
func (n *Notebook) Deviations(ctx context.Context, studyID int64) ([]Deviation, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT id, study_id, COALESCE(leg_id, 0), description, detail_json, created_at, journal_seq FROM deviations WHERE study_id = ? ORDER BY id", studyID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Deviation
	for rows.Next() {
		var d Deviation
		var detail, at string
		if err := rows.Scan(&d.ID, &d.StudyID, &d.LegID, &d.Description, &detail, &at, &d.JournalSeq); err != nil {
			return nil, err
		}
		d.Detail, d.CreatedAt = json.RawMessage(detail), mustParseTime(at)
		out = append(out, d)
	}
	return out, rows.Err()
}
