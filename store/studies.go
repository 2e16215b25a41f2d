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

	"sparkbench/app/kinds"
	"sparkbench/app/study"
)

// The notebook's studies and plans.

// Study kinds and statuses.
const (
	StudyThroughput  = kinds.Throughput
	StudyCapacity    = kinds.Capacity
	StudyConcurrency = kinds.Concurrency

	StatusDraft      = "draft"
	StatusRegistered = "registered"
	StatusRunning    = "running"
	StatusComplete   = "complete"
	StatusHalted     = "halted"
	StatusImported   = "imported"
	// StatusIncomplete: the run is over but some legs or lifetimes ended without results.
	StatusIncomplete = "incomplete"
)

// Study is a named study.
type Study struct {
	ID          int64
	Name        string
	Kind        string
	Status      string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// CreateStudy creates a study (status draft unless given) and journals study.created.
func (n *Notebook) CreateStudy(ctx context.Context, s Study) (Study, error) {
	s.Name = strings.TrimSpace(s.Name)
	if s.Name == "" {
		return Study{}, errors.New("a study needs a name")
	}
	if s.Status == "" {
		s.Status = StatusDraft
	}
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		var err error
		id, err = n.createStudyTx(tx, s)
		return err
	})
	if err != nil {
		return Study{}, err
	}
	return n.Study(ctx, id)
}

// NameTakenError is a new study whose name another study has already (names are unique);
// the words are the same for every kind.
type NameTakenError struct{ Name string }

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("a study named %q exists already (study names are unique): give the plan another \"name\", or run that study", e.Name)
}

func (n *Notebook) createStudyTx(tx *sql.Tx, s Study) (int64, error) {
	if IsBareNumber(s.Name) {
		return 0, &NumericNameError{Name: s.Name}
	}
	now := n.nowText()
	res, err := tx.Exec("INSERT INTO studies (name, kind, status, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
		s.Name, s.Kind, s.Status, s.Description, now, now)
	if err != nil {
		if isUniqueConstraint(err) { // studies.name is the table's one unique column besides the id
			return 0, &NameTakenError{Name: s.Name}
		}
		return 0, fmt.Errorf("create study %q: %w", s.Name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	// Since issue 30 the entry holds the status the study starts in, plan.registered the status
	// registering gives it, and every other change is a study.status entry: `notebook verify`
	// holds studies.status to the last of them (a study created before has none of them, and
	// its status is not held until it changes).
	_, err = n.appendJournalTx(tx, KindStudyCreated, id, map[string]any{"study": id, "name": s.Name, "kind": s.Kind, "description": s.Description,
		"status": s.Status})
	return id, err
}

// setStatusTx sets a study's status and journals the change (study.status).
func (n *Notebook) setStatusTx(tx *sql.Tx, id int64, status, at string) error {
	res, err := tx.Exec("UPDATE studies SET status = ?, updated_at = ? WHERE id = ?", status, at, id)
	if err != nil {
		return fmt.Errorf("study %d status %q: %w", id, status, err)
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return fmt.Errorf("study %d does not exist", id)
	}
	_, err = n.appendJournalTx(tx, KindStudyStatus, id, map[string]any{"study": id, "status": status})
	return err
}

const studyCols = "id, name, kind, status, description, created_at, updated_at"

func scanStudy(sc interface{ Scan(...any) error }) (Study, error) {
	var s Study
	var c, u string
	err := sc.Scan(&s.ID, &s.Name, &s.Kind, &s.Status, &s.Description, &c, &u)
	s.CreatedAt, s.UpdatedAt = mustParseTime(c), mustParseTime(u)
	return s, err
}

// Study reads a study by id.
func (n *Notebook) Study(ctx context.Context, id int64) (Study, error) {
	s, err := scanStudy(n.rdb.QueryRowContext(ctx, "SELECT "+studyCols+" FROM studies WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("study %d does not exist", id)
	}
	return s, err
}

// FindStudy resolves a reference to a study: a bare number is an ID ("2" is study 2, never a
// study named "2"), "id:N" and "name:TEXT" say which explicitly, and anything else is a name.
// A bare number that is not an ID (0, -1) is refused as such. A notebook written before bare
// numbers were refused as names may hold a study named "2": a bare 2 is then refused, naming
// both candidates, until the reference says id:2 or name:2.
func (n *Notebook) FindStudy(ctx context.Context, ref string) (Study, error) {
	if rest, ok := strings.CutPrefix(ref, "id:"); ok {
		id, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || id <= 0 || !IsBareNumber(rest) {
			return Study{}, fmt.Errorf("%q: after id: give a study ID, a whole number from 1 (e.g. id:2)", ref)
		}
		return n.Study(ctx, id)
	}
	if name, ok := strings.CutPrefix(ref, "name:"); ok {
		return n.studyNamed(ctx, name)
	}
	if !IsBareNumber(ref) {
		return n.studyNamed(ctx, ref)
	}
	id, perr := strconv.ParseInt(ref, 10, 64)
	if perr != nil || id <= 0 {
		return Study{}, fmt.Errorf("%q is not a study ID: study IDs are whole numbers from 1 (`sparkbench study list` lists them)", ref)
	}
	byID, idErr := n.Study(ctx, id)
	byName, nameErr := n.studyNamed(ctx, ref)
	switch {
	case idErr == nil && nameErr == nil:
		return Study{}, fmt.Errorf("%q is ambiguous: study %d (%s) has that ID and study %d is named %q (named before such names were refused); say id:%d or name:%s", ref, byID.ID, byID.Name, byName.ID, byName.Name, byID.ID, ref)
	case nameErr == nil:
		return Study{}, fmt.Errorf("no study has ID %s, but study %d is named %q (named before such names were refused): a bare number is an ID; say name:%s or %d", ref, byName.ID, byName.Name, ref, byName.ID)
	case idErr != nil && !strings.Contains(idErr.Error(), "does not exist"):
		return Study{}, idErr
	case idErr != nil:
		return Study{}, fmt.Errorf("no study has ID %s in the notebook", ref)
	}
	return byID, nil
}

// studyNamed reads the study with this name.
func (n *Notebook) studyNamed(ctx context.Context, name string) (Study, error) {
	s, err := scanStudy(n.rdb.QueryRowContext(ctx, "SELECT "+studyCols+" FROM studies WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return Study{}, fmt.Errorf("no study named %q in the notebook", name)
	}
	return s, err
}

// IsBareNumber reports whether s is a whole number as a reference reads it: an ID, never a
// name (study.IsBareNumber).
func IsBareNumber(s string) bool { return study.IsBareNumber(s) }

// NumericNameError is a study name that is a bare number: references read it as an ID.
type NumericNameError struct{ Name string }

func (e *NumericNameError) Error() string {
	return study.NumericNameMsg(e.Name)
}

// SetStudyStatus changes a study's status.
func (n *Notebook) SetStudyStatus(ctx context.Context, id int64, status string) error {
	return n.write(ctx, func(tx *sql.Tx) error {
		if err := refuseImported(ctx, tx, id); err != nil { // bundleimport_read.go
			return err
		}
		return n.setStatusTx(tx, id, status, n.nowText())
	})
}

// Plan is a study's frozen plan.
type Plan struct {
	ID           int64
	StudyID      int64
	SHA256       string // of JSON: the plan's identity
	JSON         json.RawMessage
	RegisteredAt time.Time
	JournalSeq   int64
}

// RegisterPlan freezes a study's plan: stores its canonical JSON and SHA-256, sets the study
// registered, and journals plan.registered with the whole plan. A study has one plan; later
// changes are amendments or deviations.
func (n *Notebook) RegisterPlan(ctx context.Context, studyID int64, plan any) (Plan, error) {
	canon, err := CanonicalJSON(plan)
	if err != nil {
		return Plan{}, fmt.Errorf("register plan: %w", err)
	}
	sum := SHA256Hex(canon)
	err = n.write(ctx, func(tx *sql.Tx) error {
		var existing string
		if err := tx.QueryRow("SELECT sha256 FROM plans WHERE study_id = ?", studyID).Scan(&existing); err == nil {
			return fmt.Errorf("study %d already has a registered plan (%s…): record an amendment instead", studyID, existing[:12])
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var status string
		if err := tx.QueryRow("SELECT status FROM studies WHERE id = ?", studyID).Scan(&status); err != nil {
			return fmt.Errorf("register plan: study %d: %w", studyID, err)
		}
		payload := map[string]any{"study": studyID, "plan_sha256": sum, "plan": json.RawMessage(canon)}
		if status == StatusDraft {
			payload["status"] = StatusRegistered // the study's status from here (verify_records.go)
		}
		je, err := n.appendJournalTx(tx, KindPlanRegistered, studyID, payload)
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO plans (study_id, sha256, canonical_json, registered_at, journal_seq) VALUES (?, ?, ?, ?, ?)",
			studyID, sum, string(canon), FormatTime(je.At), je.Seq); err != nil {
			return fmt.Errorf("register plan: %w", err)
		}
		_, err = tx.Exec("UPDATE studies SET status = 'registered', updated_at = ? WHERE id = ? AND status = 'draft'", FormatTime(je.At), studyID)
		return err
	})
	if err != nil {
		return Plan{}, err
	}
	return n.Plan(ctx, studyID)
}

// Plan reads a study's registered plan.
func (n *Notebook) Plan(ctx context.Context, studyID int64) (Plan, error) {
	var p Plan
	var js, at string
	err := n.rdb.QueryRowContext(ctx, "SELECT id, study_id, sha256, canonical_json, registered_at, journal_seq FROM plans WHERE study_id = ?", studyID).
		Scan(&p.ID, &p.StudyID, &p.SHA256, &js, &at, &p.JournalSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("study %d has no registered plan", studyID)
	}
	p.JSON, p.RegisteredAt = json.RawMessage(js), mustParseTime(at)
	return p, err
}
