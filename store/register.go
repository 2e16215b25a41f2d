package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sparkbench/app/study"
)

// registration is what registering a study freezes, whatever its kind.
type registration struct {
	Kind, Name, Description string
	PlanJSON                []byte
	PlanSHA256              string
	PlanDir, PlanFile       string
	SourceNote              string // the journal kind of the plan-source note ("": none)
	Predictions             []registeredPrediction
	// samePlan, when set, is filled with the study of one of sameKinds (none: Kind) already
	// registered with this plan (looked up inside the registration's transaction, so two
	// registrations at once make one study); nothing is then written. skipImported: a study
	// imported from a bundle is not one.
	samePlan     *int64
	sameKinds    []string
	skipImported bool
}

// registeredPrediction is one prediction as the notebook stores it: its selector and its
// whole specification as canonical JSON.
type registeredPrediction struct {
	ID, Kind, Text string
	About, Spec    any
}

// register creates the study, freezes its plan (journal plan.registered), journals where the
// plan came from and registers each prediction, in one transaction. A name already taken gets
// the plan's short hash appended.
func (n *Notebook) register(ctx context.Context, s registration) (int64, error) {
	canon, err := CanonicalJSON(json.RawMessage(s.PlanJSON))
	if err != nil {
		return 0, fmt.Errorf("register plan: %w", err)
	}
	sum := SHA256Hex(canon)
	if sum != s.PlanSHA256 {
		return 0, fmt.Errorf("register plan: the notebook's canonical form hashes to %s, the plan's to %s", sum, s.PlanSHA256)
	}
	var id int64
	err = n.write(ctx, func(tx *sql.Tx) error {
		if s.samePlan != nil {
			same := s.sameKinds
			if len(same) == 0 {
				same = []string{s.Kind}
			}
			q := `SELECT p.study_id FROM plans p JOIN studies s ON s.id = p.study_id WHERE p.sha256 = ? AND s.kind IN (?` +
				strings.Repeat(", ?", len(same)-1) + ")"
			args := []any{sum}
			for _, k := range same {
				args = append(args, k)
			}
			if s.skipImported {
				q += " AND s.status != ?"
				args = append(args, StatusImported)
			}
			err := tx.QueryRow(q+" ORDER BY p.study_id LIMIT 1", args...).Scan(s.samePlan)
			if err == nil {
				return nil
			} else if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		name := s.Name
		var taken int
		if err := tx.QueryRow("SELECT COUNT(*) FROM studies WHERE name = ?", name).Scan(&taken); err != nil {
			return err
		}
		if taken > 0 {
			name = fmt.Sprintf("%s [%s]", s.Name, sum[:12])
		}
		var err error
		if id, err = n.createStudyTx(tx, Study{Name: name, Kind: s.Kind, Status: StatusDraft, Description: s.Description}); err != nil {
			return err
		}
		je, err := n.appendJournalTx(tx, KindPlanRegistered, id, map[string]any{"study": id, "plan_sha256": sum, "plan": json.RawMessage(canon),
			"status": StatusRegistered}) // the study's status from here (verify_records.go)
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO plans (study_id, sha256, canonical_json, registered_at, journal_seq) VALUES (?, ?, ?, ?, ?)",
			id, sum, string(canon), FormatTime(je.At), je.Seq); err != nil {
			return fmt.Errorf("register plan: %w", err)
		}
		if _, err := tx.Exec("UPDATE studies SET status = 'registered', updated_at = ? WHERE id = ?", FormatTime(je.At), id); err != nil {
			return err
		}
		if s.SourceNote != "" {
			if _, err := n.appendJournalTx(tx, s.SourceNote, id, map[string]any{"study": id, "plan_dir": s.PlanDir, "plan_file": s.PlanFile}); err != nil {
				return err
			}
		}
		for _, p := range s.Predictions {
			sel, err := CanonicalJSON(p.About)
			if err != nil {
				return err
			}
			spec, err := CanonicalJSON(p.Spec)
			if err != nil {
				return err
			}
			je, err := n.appendJournalTx(tx, KindPredictionRegistered, id, map[string]any{
				"study": id, "key": p.ID, "kind": p.Kind, "text": p.Text,
				"selector": json.RawMessage(sel), "spec": json.RawMessage(spec)})
			if err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO predictions (study_id, key, kind, text, selector_json, spec_json, registered_at, journal_seq)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, p.ID, p.Kind, p.Text, string(sel), string(spec), FormatTime(je.At), je.Seq); err != nil {
				return fmt.Errorf("register prediction %s: %w", p.ID, err)
			}
		}
		return nil
	})
	return id, err
}

// Registration is a study's registration as any kind gives it to the notebook: its stored
// kind, name and description, its plan (JSON, frozen as canonical JSON; PlanSHA256 must be
// that form's hash), where the plan file was (PlanDir, PlanFile, journaled under SourceNote,
// default study.plan_source, unless NoSourceNote) and its predictions (ID, kind, text, the
// selector it reads, its whole specification).
//
// SameKinds are the kinds whose study registered with the same plan is this plan's study
// (none: Kind); SkipImported leaves studies imported from bundles out of that lookup (they are
// not run here).
type Registration struct {
	Kind, Name, Description string
	PlanJSON                []byte
	PlanSHA256              string
	PlanDir, PlanFile       string
	SourceNote              string
	NoSourceNote            bool
	Predictions             []RegisteredPrediction
	SameKinds               []string
	SkipImported            bool
}

// RegisteredPrediction is one prediction of a Registration.
type RegisteredPrediction struct {
	ID, Kind, Text string
	About, Spec    any
}

// RegisterStudy registers a study of any kind in one transaction, as the built-in kinds do:
// the study, its frozen plan, where the plan came from, its predictions. A study of the same
// kind already registered with the same plan is returned instead (existing, nothing written;
// decided inside the transaction, so two registrations at once make one study). A name already
// taken gets the plan's short hash appended (the same words for every kind).
func (n *Notebook) RegisterStudy(ctx context.Context, r Registration) (id int64, existing bool, err error) {
	if r.SourceNote == "" {
		r.SourceNote = study.NotePlanSource
	}
	if r.NoSourceNote {
		r.SourceNote = ""
	}
	reg := registration{Kind: r.Kind, Name: r.Name, Description: r.Description, PlanJSON: r.PlanJSON, PlanSHA256: r.PlanSHA256,
		PlanDir: r.PlanDir, PlanFile: r.PlanFile, SourceNote: r.SourceNote, sameKinds: r.SameKinds, skipImported: r.SkipImported}
	for _, p := range r.Predictions {
		reg.Predictions = append(reg.Predictions, registeredPrediction(p))
	}
	var same int64
	reg.samePlan = &same
	id, err = n.register(ctx, reg)
	if err == nil && same != 0 {
		return same, true, nil
	}
	return id, false, err
}
