package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Leg states (the lifecycle; the outcome is in Class).
const (
	LegRunning     = "running"
	LegFinished    = "finished"
	LegInterrupted = "interrupted" // the recording process died; samples before its last batch stay
	LegImported    = "imported"
)

// Leg kinds.
const (
	LegKindBench    = "bench"
	LegKindServer   = "server"
	LegKindCanary   = "canary"
	LegKindImported = "imported"
	LegKindOther    = "other"
	// LegKindBatched = "batched" (schema 7) is in batched.go.
)

// Outcome classes the store itself writes; the app may use others (e.g. "halted", "failed").
const (
	ClassOK          = "ok"
	ClassCrash       = "crash"
	ClassInterrupted = "interrupted"
)

// LegSpec describes a leg about to start.
type LegSpec struct {
	StudyID     int64
	Label       string
	Kind        string // bench, server, canary, other
	MachineID   int64  // 0: unknown
	BuildID     int64
	ArtefactID  int64
	Argv        []string
	Env         map[string]string // overrides only
	Conditions  []string          // declared conditions
	Fingerprint string            // empty: SHA-256 of canonical {argv, env, build, artefact, machine}
	TempBeforeC *float64
	Detail      json.RawMessage
}

// Leg is a stored leg.
type Leg struct {
	ID           int64
	StudyID      int64
	Label        string
	Kind         string
	MachineID    int64
	BuildID      int64
	ArtefactID   int64
	Argv         []string
	Env          map[string]string
	Conditions   []string
	State        string
	Class        string
	Reason       string
	ExitCode     *int
	Signal       string
	StartedAt    time.Time
	EndedAt      time.Time // zero while running
	Fingerprint  string
	TempBeforeC  *float64
	TempAfterC   *float64
	PeakRSSBytes int64
	Provenance   json.RawMessage
	Detail       json.RawMessage

	BenchRows       int64 // filled by LegTimeline and Leg
	RequestRows     int64
	TranscriptBytes int64
}

// Duration is EndedAt - StartedAt (0 while running).
func (l Leg) Duration() time.Duration {
	if l.EndedAt.IsZero() {
		return 0
	}
	return l.EndedAt.Sub(l.StartedAt)
}

// LegOutcome is how a leg ended.
type LegOutcome struct {
	Class        string // ok, crash, halted, failed, … (empty: ok)
	Reason       string
	ExitCode     *int
	Signal       string
	TempAfterC   *float64
	PeakRSSBytes int64
	// Transcript, if non-empty, is appended as the last transcript chunk (use
	// SampleWriter.AddTranscript to stream it instead).
	Transcript []byte
	// endedAt, when set, is the leg's end as recorded elsewhere (a leg imported from a receipt
	// bundle keeps its own); otherwise the leg ends now.
	endedAt string
}

type legFinishedPayload struct {
	Leg         int64             `json:"leg"`
	Study       int64             `json:"study"`
	Label       string            `json:"label"`
	Kind        string            `json:"kind"`
	State       string            `json:"state"`
	Class       string            `json:"class"`
	Reason      string            `json:"reason"`
	ExitCode    *int              `json:"exit_code"`
	Signal      string            `json:"signal"`
	StartedAt   string            `json:"started_at"`
	EndedAt     string            `json:"ended_at"`
	Argv        []string          `json:"argv"`
	Env         map[string]string `json:"env"`
	Fingerprint string            `json:"fingerprint"`
	Provenance  json.RawMessage   `json:"provenance,omitempty"`
	BenchRows   int64             `json:"bench_rows"`
	RequestRows int64             `json:"request_rows"`
	// BatchedRows counts llama-batched-bench rows; journaled only when there are some, so
	// every other leg's entry is what it was before schema 7.
	BatchedRows int64 `json:"batched_rows,omitempty"`
	// TelemetryRows counts telemetry samples (schema 8), journaled only when there are some.
	TelemetryRows int64 `json:"telemetry_rows,omitempty"`
	// TelemetrySHA256 is the SHA-256 of the samples in their canonical serialization
	// (canon.AppendTelemetryLine), the bytes of a bundle's telemetry.jsonl; only for a leg
	// with samples.
	TelemetrySHA256  string `json:"telemetry_sha256,omitempty"`
	SamplesSHA256    string `json:"samples_sha256"`
	TranscriptSHA256 string `json:"transcript_sha256"`
	// RowsSHA256 is the SHA-256 of the leg's rows in their canonical serialization
	// (canon.AppendRowLine), the bytes of a bundle's rows.jsonl; entries journaled before it
	// existed lack it.
	RowsSHA256 string `json:"rows_sha256,omitempty"`
	// The leg's peak RSS and its temperature after, as the legs row holds them (null: not
	// measured). Journaled since issue 30 (entries written before lack both keys), so that
	// `notebook verify` holds those columns to the chain too.
	PeakRSSBytes *int64   `json:"peak_rss_bytes"`
	TempAfterC   *float64 `json:"temp_after_c"`
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

func jsonOr(v any, empty string) string {
	b, err := CanonicalJSON(v)
	if err != nil || string(b) == "null" {
		return empty
	}
	return string(b)
}

// StartLeg records a leg as running (journaling leg.started) and returns a SampleWriter for it.
func (n *Notebook) StartLeg(ctx context.Context, spec LegSpec) (Leg, *SampleWriter, error) {
	if spec.Kind == "" {
		spec.Kind = LegKindBench
	}
	if spec.Argv == nil {
		spec.Argv = []string{}
	}
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	if spec.Conditions == nil {
		spec.Conditions = []string{}
	}
	if spec.Fingerprint == "" {
		b, err := CanonicalJSON(map[string]any{"argv": spec.Argv, "env": spec.Env, "build": spec.BuildID, "artefact": spec.ArtefactID, "machine": spec.MachineID})
		if err != nil {
			return Leg{}, nil, err
		}
		spec.Fingerprint = SHA256Hex(b)
	}
	detail := "{}"
	if len(spec.Detail) > 0 {
		b, err := CanonicalJSON(spec.Detail)
		if err != nil {
			return Leg{}, nil, fmt.Errorf("leg detail: %w", err)
		}
		detail = string(b)
	}
	host, pid, token := ownerIdentity()
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		at := n.nowText()
		res, err := tx.Exec(`INSERT INTO legs (study_id, label, kind, machine_id, build_id, artefact_id, argv_json, env_json,
			conditions_json, state, started_at, fingerprint, temp_before_c, detail_json, owner_host, owner_pid, owner_token)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)`,
			spec.StudyID, spec.Label, spec.Kind, nullID(spec.MachineID), nullID(spec.BuildID), nullID(spec.ArtefactID),
			jsonOr(spec.Argv, "[]"), jsonOr(spec.Env, "{}"), jsonOr(spec.Conditions, "[]"), at, spec.Fingerprint,
			floatPtr(spec.TempBeforeC), detail, host, pid, token)
		if err != nil {
			return fmt.Errorf("start leg: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		var machineFP, buildFP any // the fingerprints (hashes of every column) of the leg's machine and build
		for _, r := range []struct {
			table string
			id    int64
			fp    *any
		}{{"machines", spec.MachineID, &machineFP}, {"builds", spec.BuildID, &buildFP}} {
			if r.id == 0 {
				continue
			}
			var fp string
			if err := tx.QueryRow("SELECT fingerprint FROM "+r.table+" WHERE id = ?", r.id).Scan(&fp); err != nil {
				return fmt.Errorf("start leg: %s %d: %w", r.table, r.id, err)
			}
			*r.fp = fp
		}
		var buildDir any // the build's folder (not in its fingerprint), held to the entry by verify
		if spec.BuildID != 0 {
			var dir string
			if err := tx.QueryRow("SELECT dir FROM builds WHERE id = ?", spec.BuildID).Scan(&dir); err != nil {
				return fmt.Errorf("start leg: builds %d: %w", spec.BuildID, err)
			}
			buildDir = dir
		}
		var artefactSHA any // the model's SHA-256 as the notebook holds it when the leg starts (NULL: not hashed)
		if spec.ArtefactID != 0 {
			var sum sql.NullString
			if err := tx.QueryRow("SELECT sha256 FROM artefacts WHERE id = ?", spec.ArtefactID).Scan(&sum); err != nil {
				return fmt.Errorf("start leg: artefact %d: %w", spec.ArtefactID, err)
			}
			if sum.Valid {
				artefactSHA = sum.String
			}
		}
		_, err = n.appendJournalTx(tx, KindLegStarted, spec.StudyID, map[string]any{
			"leg": id, "study": spec.StudyID, "label": spec.Label, "kind": spec.Kind, "started_at": at,
			"argv": spec.Argv, "env": spec.Env, "conditions": spec.Conditions, "fingerprint": spec.Fingerprint,
			"machine": nullID(spec.MachineID), "build": nullID(spec.BuildID), "artefact": nullID(spec.ArtefactID),
			// Since issue 30 the entry also holds what decides how the leg counts (its
			// detail: plan leg, role, attempt) and its temperature, so that `notebook verify`
			// holds every column of the legs row to the chain (verify_records.go).
			"detail": json.RawMessage(detail), "temp_before_c": floatPtr(spec.TempBeforeC),
			"machine_fingerprint": machineFP, "build_fingerprint": buildFP, "artefact_sha256": artefactSHA, "build_dir": buildDir,
		})
		return err
	})
	if err != nil {
		return Leg{}, nil, err
	}
	leg, err := n.Leg(ctx, id)
	if err != nil {
		return Leg{}, nil, err
	}
	sw, err := n.SampleWriter(ctx, id)
	return leg, sw, err
}

func floatPtr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// FinishLeg commits the leg's pending samples, freezes the leg and journals leg.finished with
// its row counts and the digests of its samples and transcript.
func (n *Notebook) FinishLeg(ctx context.Context, legID int64, out LegOutcome) (Leg, JournalEntry, error) {
	if n.readOnly {
		return Leg{}, JournalEntry{}, ErrReadOnly
	}
	if err := n.w.flushLeg(ctx, legID); err != nil {
		return Leg{}, JournalEntry{}, fmt.Errorf("finish leg %d: some samples were not committed: %w", legID, err)
	}
	if out.Class == "" {
		out.Class = ClassOK
	}
	var je JournalEntry
	err := n.write(ctx, func(tx *sql.Tx) error {
		if len(out.Transcript) > 0 {
			var seq int64
			if err := tx.QueryRow("SELECT COALESCE(MAX(seq) + 1, 0) FROM transcript_chunks WHERE leg_id = ?", legID).Scan(&seq); err != nil {
				return err
			}
			if err := insertChunks(tx, []pendingChunk{{legID: legID, seq: seq, raw: int64(len(out.Transcript)), data: gzipBytes(out.Transcript)}}); err != nil {
				return err
			}
		}
		var err error
		je, err = n.finishLegTx(ctx, tx, legID, LegFinished, out)
		return err
	})
	if err != nil {
		return Leg{}, JournalEntry{}, err
	}
	leg, err := n.Leg(ctx, legID)
	return leg, je, err
}

func (n *Notebook) finishLegTx(ctx context.Context, tx *sql.Tx, legID int64, state string, out LegOutcome) (JournalEntry, error) {
	var p legFinishedPayload
	var cur, argv, env string
	var prov sql.NullString
	err := tx.QueryRow("SELECT study_id, label, kind, state, started_at, argv_json, env_json, fingerprint, provenance_json FROM legs WHERE id = ?", legID).
		Scan(&p.Study, &p.Label, &p.Kind, &cur, &p.StartedAt, &argv, &env, &p.Fingerprint, &prov)
	if errors.Is(err, sql.ErrNoRows) {
		return JournalEntry{}, fmt.Errorf("finish leg %d: no such leg", legID)
	}
	if err != nil {
		return JournalEntry{}, err
	}
	if cur != LegRunning {
		return JournalEntry{}, fmt.Errorf("finish leg %d: it is already %s", legID, cur)
	}
	if err := json.Unmarshal([]byte(argv), &p.Argv); err != nil {
		return JournalEntry{}, err
	}
	if err := json.Unmarshal([]byte(env), &p.Env); err != nil {
		return JournalEntry{}, err
	}
	d, err := legDigest(ctx, tx, legID)
	if err != nil {
		return JournalEntry{}, err
	}
	p.Leg, p.State, p.Class, p.Reason, p.ExitCode, p.Signal = legID, state, out.Class, out.Reason, out.ExitCode, out.Signal
	p.EndedAt = n.nowText()
	if out.endedAt != "" {
		p.EndedAt = out.endedAt
	}
	p.BenchRows, p.RequestRows, p.SamplesSHA256, p.TranscriptSHA256 = d.BenchRows, d.RequestRows, d.SamplesSHA256, d.TranscriptSHA256
	p.BatchedRows, p.TelemetryRows = d.BatchedRows, d.TelemetryRows
	if d.TelemetryRows > 0 {
		tl, err := telemetryJSONL(ctx, tx, legID)
		if err != nil {
			return JournalEntry{}, err
		}
		p.TelemetrySHA256 = SHA256Hex(tl)
	}
	if p.RowsSHA256, err = legRowsSHA256(ctx, tx, legID); err != nil {
		return JournalEntry{}, err
	}
	if prov.Valid {
		p.Provenance = json.RawMessage(prov.String)
	}
	var exit any
	if out.ExitCode != nil {
		exit = *out.ExitCode
	}
	var rss any
	if out.PeakRSSBytes > 0 {
		rss = out.PeakRSSBytes
		p.PeakRSSBytes = &out.PeakRSSBytes
	}
	p.TempAfterC = out.TempAfterC
	if _, err := tx.Exec(`UPDATE legs SET state = ?, class = ?, reason = ?, exit_code = ?, signal = ?, ended_at = ?,
		temp_after_c = ?, peak_rss_bytes = ? WHERE id = ?`,
		state, out.Class, out.Reason, exit, out.Signal, p.EndedAt, floatPtr(out.TempAfterC), rss, legID); err != nil {
		return JournalEntry{}, fmt.Errorf("finish leg %d: %w", legID, err)
	}
	return n.appendJournalTx(tx, KindLegFinished, p.Study, p)
}

// recoverInterrupted journals legs left running by a process that no longer exists as
// interrupted. Their committed samples stay.
func (n *Notebook) recoverInterrupted(ctx context.Context) ([]int64, error) {
	type cand struct {
		id    int64
		host  string
		pid   sql.NullInt64
		token string
	}
	var cands []cand
	// Read without the write lock (opening a notebook must not wait for another process's
	// write); each leg is finished in a write that checks it is still running.
	err := func() error {
		rows, err := n.rdb.QueryContext(ctx, "SELECT id, owner_host, owner_pid, owner_token FROM legs WHERE state = 'running' ORDER BY id")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.id, &c.host, &c.pid, &c.token); err != nil {
				return err
			}
			cands = append(cands, c)
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, err
	}
	host, _, _ := ownerIdentity()
	var recovered []int64
	for _, c := range cands {
		if c.host != host || !c.pid.Valid || processAlive(int(c.pid.Int64), c.token) {
			continue // another machine's process, or still alive: not ours to judge
		}
		done := false
		err := n.write(ctx, func(tx *sql.Tx) error {
			var state string
			if err := tx.QueryRow("SELECT state FROM legs WHERE id = ?", c.id).Scan(&state); err != nil {
				return err
			}
			if state != LegRunning {
				done = true // another process recovered it since it was read
				return nil
			}
			_, err := n.finishLegTx(ctx, tx, c.id, LegInterrupted, LegOutcome{
				Class:  ClassInterrupted,
				Reason: fmt.Sprintf("the recording process (pid %d) ended without finishing the leg; samples committed before it died are kept", c.pid.Int64),
			})
			return err
		})
		if err != nil {
			return recovered, err
		}
		if !done {
			recovered = append(recovered, c.id)
		}
	}
	return recovered, nil
}

// ownerIdentity names this process: host, pid, and a token (its start time from /proc) that
// tells a reused pid apart.
func ownerIdentity() (host string, pid int, token string) {
	host, _ = os.Hostname()
	pid = os.Getpid()
	return host, pid, procStartToken(pid)
}

// procStartToken is field 22 (starttime) of /proc/PID/stat, or "" where /proc is missing.
func procStartToken(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may contain spaces
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // fields after ")" start at field 3 (state); starttime is field 22
}

func processAlive(pid int, token string) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if token == "" {
		return true
	}
	cur := procStartToken(pid)
	if cur == "" {
		return true // cannot tell: assume alive
	}
	return cur == token
}

const legCols = `l.id, l.study_id, l.label, l.kind, COALESCE(l.machine_id, 0), COALESCE(l.build_id, 0), COALESCE(l.artefact_id, 0),
	l.argv_json, l.env_json, l.conditions_json, l.state, l.class, l.reason, l.exit_code, l.signal, l.started_at,
	COALESCE(l.ended_at, ''), l.fingerprint, l.temp_before_c, l.temp_after_c, COALESCE(l.peak_rss_bytes, 0),
	l.provenance_json, l.detail_json,
	(SELECT COUNT(*) FROM bench_samples b WHERE b.leg_id = l.id),
	(SELECT COUNT(*) FROM request_samples r WHERE r.leg_id = l.id),
	(SELECT COALESCE(SUM(raw_bytes), 0) FROM transcript_chunks t WHERE t.leg_id = l.id)`

func scanLeg(sc interface{ Scan(...any) error }) (Leg, error) {
	var l Leg
	var argv, env, cond, started, ended, detail string
	var exit sql.NullInt64
	var tb, ta sql.NullFloat64
	var prov sql.NullString
	err := sc.Scan(&l.ID, &l.StudyID, &l.Label, &l.Kind, &l.MachineID, &l.BuildID, &l.ArtefactID, &argv, &env, &cond,
		&l.State, &l.Class, &l.Reason, &exit, &l.Signal, &started, &ended, &l.Fingerprint, &tb, &ta, &l.PeakRSSBytes,
		&prov, &detail, &l.BenchRows, &l.RequestRows, &l.TranscriptBytes)
	if err != nil {
		return l, err
	}
	_ = json.Unmarshal([]byte(argv), &l.Argv)
	_ = json.Unmarshal([]byte(env), &l.Env)
	_ = json.Unmarshal([]byte(cond), &l.Conditions)
	if exit.Valid {
		e := int(exit.Int64)
		l.ExitCode = &e
	}
	if tb.Valid {
		l.TempBeforeC = &tb.Float64
	}
	if ta.Valid {
		l.TempAfterC = &ta.Float64
	}
	if prov.Valid {
		l.Provenance = json.RawMessage(prov.String)
	}
	l.Detail = json.RawMessage(detail)
	l.StartedAt = mustParseTime(started)
	if ended != "" {
		l.EndedAt = mustParseTime(ended)
	}
	return l, nil
}

// Leg reads one leg.
func (n *Notebook) Leg(ctx context.Context, id int64) (Leg, error) {
	l, err := scanLeg(n.rdb.QueryRowContext(ctx, "SELECT "+legCols+" FROM legs l WHERE l.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("leg %d does not exist", id)
	}
	return l, err
}

// LegTimeline lists a study's legs in the order they started, with row counts.
func (n *Notebook) LegTimeline(ctx context.Context, studyID int64) ([]Leg, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT "+legCols+" FROM legs l WHERE l.study_id = ? ORDER BY l.started_at, l.id", studyID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Leg
	for rows.Next() {
		l, err := scanLeg(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
