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

// ---- machines, builds, artefacts ----

// Machine is a bench machine as the app measured it.
type Machine struct {
	ID              int64
	Fingerprint     string // empty: SHA-256 of the canonical fields below
	Hostname        string
	CPUModel        string
	Cores           int
	RAMBytes        int64
	OS              string
	Kernel          string
	GPU             string
	Driver          string
	MemBandwidthGBs float64 // 0: not measured
	Info            json.RawMessage
	CreatedAt       time.Time
}

// UpsertMachine stores a machine (once per fingerprint) and returns its id.
func (n *Notebook) UpsertMachine(ctx context.Context, m Machine) (int64, error) {
	info := jsonOr(m.Info, "{}")
	if len(m.Info) == 0 {
		info = "{}"
	}
	if m.Fingerprint == "" {
		b, err := CanonicalJSON(map[string]any{"hostname": m.Hostname, "cpu": m.CPUModel, "cores": m.Cores, "ram": m.RAMBytes,
			"os": m.OS, "kernel": m.Kernel, "gpu": m.GPU, "driver": m.Driver, "bandwidth": m.MemBandwidthGBs, "info": json.RawMessage(info)})
		if err != nil {
			return 0, err
		}
		m.Fingerprint = SHA256Hex(b)
	}
	var bw any
	if m.MemBandwidthGBs > 0 {
		bw = m.MemBandwidthGBs
	}
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRow("SELECT id FROM machines WHERE fingerprint = ?", m.Fingerprint).Scan(&id); err == nil {
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.Exec(`INSERT INTO machines (fingerprint, hostname, cpu_model, cores, ram_bytes, os, kernel, gpu, driver,
			mem_bandwidth_gbs, info_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.Fingerprint, m.Hostname, m.CPUModel, m.Cores, m.RAMBytes, m.OS, m.Kernel, m.GPU, m.Driver, bw, info, n.nowText())
		if err != nil {
			return fmt.Errorf("store machine: %w", err)
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

// Machine reads one machine record.
func (n *Notebook) Machine(ctx context.Context, id int64) (Machine, error) {
	var m Machine
	var cores, ram sql.NullInt64
	var bw sql.NullFloat64
	var info, created string
	err := n.rdb.QueryRowContext(ctx, `SELECT id, fingerprint, hostname, cpu_model, cores, ram_bytes, os, kernel, gpu, driver,
		mem_bandwidth_gbs, info_json, created_at FROM machines WHERE id = ?`, id).
		Scan(&m.ID, &m.Fingerprint, &m.Hostname, &m.CPUModel, &cores, &ram, &m.OS, &m.Kernel, &m.GPU, &m.Driver, &bw, &info, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("machine %d does not exist", id)
	}
	if err != nil {
		return m, err
	}
	m.Cores, m.RAMBytes, m.MemBandwidthGBs = int(cores.Int64), ram.Int64, bw.Float64
	m.Info = json.RawMessage(info)
	m.CreatedAt = mustParseTime(created)
	return m, nil
}

// Build reads one build record.
func (n *Notebook) Build(ctx context.Context, id int64) (Build, error) {
	var b Build
	var number sql.NullInt64
	var bins, created string
	err := n.rdb.QueryRowContext(ctx, `SELECT id, fingerprint, dir, version_line, build_number, commit_id, backends, binaries_json,
		created_at FROM builds WHERE id = ?`, id).
		Scan(&b.ID, &b.Fingerprint, &b.Dir, &b.VersionLine, &number, &b.Commit, &b.Backends, &bins, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("build %d does not exist", id)
	}
	if err != nil {
		return b, err
	}
	b.BuildNumber = number.Int64
	b.Binaries = map[string]string{}
	if err := json.Unmarshal([]byte(bins), &b.Binaries); err != nil {
		return b, fmt.Errorf("build %d: binaries: %w", id, err)
	}
	b.CreatedAt = mustParseTime(created)
	return b, nil
}

// Build is a folder of llama.cpp binaries.
type Build struct {
	ID          int64
	Fingerprint string // empty: SHA-256 of version, commit, number, backends and binary hashes
	Dir         string
	VersionLine string
	BuildNumber int64
	Commit      string
	Backends    string
	Binaries    map[string]string // binary name -> SHA-256
	CreatedAt   time.Time
}

// UpsertBuild stores a build (once per fingerprint) and returns its id.
func (n *Notebook) UpsertBuild(ctx context.Context, b Build) (int64, error) {
	if b.Binaries == nil {
		b.Binaries = map[string]string{}
	}
	if b.Fingerprint == "" {
		c, err := CanonicalJSON(map[string]any{"version": b.VersionLine, "number": b.BuildNumber, "commit": b.Commit, "backends": b.Backends, "binaries": b.Binaries})
		if err != nil {
			return 0, err
		}
		b.Fingerprint = SHA256Hex(c)
	}
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRow("SELECT id FROM builds WHERE fingerprint = ?", b.Fingerprint).Scan(&id); err == nil {
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.Exec(`INSERT INTO builds (fingerprint, dir, version_line, build_number, commit_id, backends, binaries_json, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, b.Fingerprint, b.Dir, b.VersionLine, b.BuildNumber, b.Commit, b.Backends, jsonOr(b.Binaries, "{}"), n.nowText())
		if err != nil {
			return fmt.Errorf("store build: %w", err)
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

// Artefact statuses (computed by SQLite from the two hashes).
const (
	ArtefactPending  = "PENDING"
	ArtefactVerified = "VERIFIED"
	ArtefactMismatch = "MISMATCH"
)

// Artefact is a GGUF model file. Status is PENDING until the computed SHA-256 equals the
// expected one (VERIFIED); a difference is MISMATCH.
type Artefact struct {
	ID             int64
	Path           string
	Size           int64
	MTime          time.Time
	Dev, Inode     uint64 // with path, size and mtime: the hash cache key
	SHA256         string // computed; "" until hashed
	ExpectedSHA256 string // entered by the user
	Status         string
	Name           string
	Architecture   string
	Quant          string
	NParams        int64
	Metadata       json.RawMessage // GGUF metadata
	Source         string
	Revision       string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// UpsertArtefact stores a model file keyed by path+size+mtime (the hash cache key); an
// existing row keeps its hashes and gets the other fields updated. Returns the stored row.
func (n *Notebook) UpsertArtefact(ctx context.Context, a Artefact) (Artefact, error) {
	meta := "{}"
	if len(a.Metadata) > 0 {
		meta = jsonOr(a.Metadata, "{}")
	}
	var np any
	if a.NParams > 0 {
		np = a.NParams
	}
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		now := n.nowText()
		err := tx.QueryRow("SELECT id FROM artefacts WHERE path = ? AND size_bytes = ? AND mtime_ns = ?", a.Path, a.Size, a.MTime.UnixNano()).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			res, err := tx.Exec(`INSERT INTO artefacts (path, size_bytes, mtime_ns, dev, inode, sha256, expected_sha256, name, architecture, quant,
				n_params, metadata_json, source, revision, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				a.Path, a.Size, a.MTime.UnixNano(), int64(a.Dev), int64(a.Inode), nullStr(strings.ToLower(a.SHA256)), nullStr(strings.ToLower(a.ExpectedSHA256)),
				a.Name, a.Architecture, a.Quant, np, meta, a.Source, a.Revision, now, now)
			if err != nil {
				return fmt.Errorf("store artefact: %w", err)
			}
			id, err = res.LastInsertId()
			return err
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(`UPDATE artefacts SET name = ?, architecture = ?, quant = ?, n_params = ?, metadata_json = ?,
			source = CASE WHEN ? = '' THEN source ELSE ? END, revision = CASE WHEN ? = '' THEN revision ELSE ? END,
			sha256 = CASE WHEN dev = ? AND inode = ? THEN COALESCE(?, sha256) ELSE ? END,
			expected_sha256 = COALESCE(?, expected_sha256), dev = ?, inode = ?, updated_at = ? WHERE id = ?`,
			a.Name, a.Architecture, a.Quant, np, meta, a.Source, a.Source, a.Revision, a.Revision,
			int64(a.Dev), int64(a.Inode), nullStr(strings.ToLower(a.SHA256)), nullStr(strings.ToLower(a.SHA256)),
			nullStr(strings.ToLower(a.ExpectedSHA256)), int64(a.Dev), int64(a.Inode), now, id)
		return err
	})
	if err != nil {
		return Artefact{}, err
	}
	return n.Artefact(ctx, id)
}

// SetArtefactHash records the computed SHA-256 and returns the resulting status.
func (n *Notebook) SetArtefactHash(ctx context.Context, id int64, sha256 string) (string, error) {
	return n.setArtefactField(ctx, id, "sha256", sha256)
}

// SetArtefactExpected records the SHA-256 the source publishes and returns the status.
func (n *Notebook) SetArtefactExpected(ctx context.Context, id int64, sha256 string) (string, error) {
	return n.setArtefactField(ctx, id, "expected_sha256", sha256)
}

func (n *Notebook) setArtefactField(ctx context.Context, id int64, col, v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if len(v) != 64 || strings.Trim(v, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a SHA-256 (64 hex digits)", v)
	}
	var status string
	err := n.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec("UPDATE artefacts SET "+col+" = ?, updated_at = ? WHERE id = ?", v, n.nowText(), id)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return fmt.Errorf("artefact %d does not exist", id)
		}
		return tx.QueryRow("SELECT status FROM artefacts WHERE id = ?", id).Scan(&status)
	})
	return status, err
}

const artefactCols = `id, path, size_bytes, mtime_ns, dev, inode, COALESCE(sha256, ''), COALESCE(expected_sha256, ''), status, name, architecture,
	quant, COALESCE(n_params, 0), metadata_json, source, revision, created_at, updated_at`

func scanArtefact(sc interface{ Scan(...any) error }) (Artefact, error) {
	var a Artefact
	var mtime, dev, inode int64
	var meta, created, updated string
	err := sc.Scan(&a.ID, &a.Path, &a.Size, &mtime, &dev, &inode, &a.SHA256, &a.ExpectedSHA256, &a.Status, &a.Name, &a.Architecture,
		&a.Quant, &a.NParams, &meta, &a.Source, &a.Revision, &created, &updated)
	a.MTime = time.Unix(0, mtime)
	a.Dev, a.Inode = uint64(dev), uint64(inode)
	a.Metadata = json.RawMessage(meta)
	a.CreatedAt, a.UpdatedAt = mustParseTime(created), mustParseTime(updated)
	return a, err
}

// Artefact reads one artefact.
func (n *Notebook) Artefact(ctx context.Context, id int64) (Artefact, error) {
	a, err := scanArtefact(n.rdb.QueryRowContext(ctx, "SELECT "+artefactCols+" FROM artefacts WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("artefact %d does not exist", id)
	}
	return a, err
}

// CachedArtefact finds a stored artefact by the hash cache key (path, size, mtime); ok is
// false when the file changed or was never seen.
func (n *Notebook) CachedArtefact(ctx context.Context, path string, size int64, mtime time.Time) (Artefact, bool, error) {
	a, err := scanArtefact(n.rdb.QueryRowContext(ctx, "SELECT "+artefactCols+" FROM artefacts WHERE path = ? AND size_bytes = ? AND mtime_ns = ?", path, size, mtime.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return Artefact{}, false, nil
	}
	return a, err == nil, err
}

// CachedArtefactFile is CachedArtefact with the file's device and inode also matching: the
// key the model hash cache uses (a file replaced in place gets a new inode).
func (n *Notebook) CachedArtefactFile(ctx context.Context, path string, size int64, mtime time.Time, dev, inode uint64) (Artefact, bool, error) {
	a, err := scanArtefact(n.rdb.QueryRowContext(ctx, "SELECT "+artefactCols+" FROM artefacts WHERE path = ? AND size_bytes = ? AND mtime_ns = ? AND dev = ? AND inode = ?",
		path, size, mtime.UnixNano(), int64(dev), int64(inode)))
	if errors.Is(err, sql.ErrNoRows) {
		return Artefact{}, false, nil
	}
	return a, err == nil, err
}

// Artefacts lists every stored artefact, newest first.
func (n *Notebook) Artefacts(ctx context.Context) ([]Artefact, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT "+artefactCols+" FROM artefacts ORDER BY updated_at DESC, id DESC")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Artefact
	for rows.Next() {
		a, err := scanArtefact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ---- studies and plans ----

// Study kinds and statuses.
const (
	StudyThroughput  = "throughput"
	StudyCapacity    = "capacity"
	StudyConcurrency = "concurrency"

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

func (n *Notebook) createStudyTx(tx *sql.Tx, s Study) (int64, error) {
	now := n.nowText()
	res, err := tx.Exec("INSERT INTO studies (name, kind, status, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
		s.Name, s.Kind, s.Status, s.Description, now, now)
	if err != nil {
		if isConstraint(err) {
			return 0, fmt.Errorf("create study %q: %w (names are unique; kind is throughput, capacity or concurrency)", s.Name, err)
		}
		return 0, fmt.Errorf("create study %q: %w", s.Name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	_, err = n.appendJournalTx(tx, KindStudyCreated, id, map[string]any{"study": id, "name": s.Name, "kind": s.Kind, "description": s.Description})
	return id, err
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

// FindStudy resolves a name, or a number as id, to a study.
func (n *Notebook) FindStudy(ctx context.Context, ref string) (Study, error) {
	s, err := scanStudy(n.rdb.QueryRowContext(ctx, "SELECT "+studyCols+" FROM studies WHERE name = ?", ref))
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return s, err
	}
	if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil {
		if s, err := n.Study(ctx, id); err == nil {
			return s, nil
		}
	}
	return Study{}, fmt.Errorf("no study named %q in the notebook", ref)
}

// SetStudyStatus changes a study's status.
func (n *Notebook) SetStudyStatus(ctx context.Context, id int64, status string) error {
	return n.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec("UPDATE studies SET status = ?, updated_at = ? WHERE id = ?", status, n.nowText(), id)
		if err != nil {
			return fmt.Errorf("study %d status %q: %w", id, status, err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return fmt.Errorf("study %d does not exist", id)
		}
		return nil
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
		je, err := n.appendJournalTx(tx, KindPlanRegistered, studyID, map[string]any{"study": studyID, "plan_sha256": sum, "plan": json.RawMessage(canon)})
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

// ---- predictions, amendments, deviations ----

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

// ---- verdicts, findings, receipts, gates ----

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
