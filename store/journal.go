package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"sparkbench/app/canon"
)

// Journal entry kinds.
const (
	KindStudyCreated         = "study.created"
	KindStudyStatus          = "study.status" // a study's status changed (payload.status); verify holds studies.status to the last one
	KindPlanRegistered       = "plan.registered"
	KindPredictionRegistered = "prediction.registered"
	KindAmendment            = "amendment"
	KindDeviation            = "deviation"
	KindLegStarted           = "leg.started"
	KindLegFinished          = "leg.finished" // payload.state: finished, interrupted or imported
	KindVerdict              = "verdict"
	KindHumanVerdict         = "verdict.human"
	KindFinding              = "finding"
	KindReceiptExported      = "receipt.exported"
	KindArtefactRecorded     = "artefact.recorded" // a model record (hash cache row) as written; verify holds artefacts to the last one
)

// GenesisHash is the prev_hash of the first journal entry.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// JournalEntry is one link of the hash chain.
type JournalEntry struct {
	Seq      int64
	Kind     string
	StudyID  int64 // 0: not about one study
	At       time.Time
	Payload  json.RawMessage // canonical JSON
	PrevHash string          // hex
	Hash     string          // hex SHA-256(prev_hash bytes || EntryBytes)
}

// EntryBytes is the canonical JSON that is hashed for an entry:
// {"at":…,"kind":…,"payload":…,"seq":…,"study":…|null}.
func EntryBytes(seq int64, kind string, studyID int64, at string, payload []byte) []byte {
	return canon.JournalEntryBytes(seq, kind, studyID, at, payload)
}

// ChainHash is hex(SHA-256(prev || entry)): see app/canon.
func ChainHash(prevHex string, entry []byte) (string, error) { return canon.ChainHash(prevHex, entry) }

// JournalOpt qualifies an AppendJournal call.
type JournalOpt func(*journalOpts)

type journalOpts struct{ studyID int64 }

// ForStudy files the entry under a study.
func ForStudy(id int64) JournalOpt { return func(o *journalOpts) { o.studyID = id } }

// AppendJournal appends an entry (any JSON-encodable value, stored canonically) to the hash
// chain. The typed methods (RegisterPlan, FinishLeg, …) append their own entries; this is for
// entries the app defines.
func (n *Notebook) AppendJournal(ctx context.Context, kind string, entry any, opts ...JournalOpt) (JournalEntry, error) {
	var o journalOpts
	for _, f := range opts {
		f(&o)
	}
	if kind == "" {
		return JournalEntry{}, errors.New("journal entry without a kind")
	}
	var je JournalEntry
	err := n.write(ctx, func(tx *sql.Tx) error {
		var err error
		je, err = n.appendJournalTx(tx, kind, o.studyID, entry)
		return err
	})
	return je, err
}

// appendJournalTx appends inside the caller's writer transaction (BEGIN IMMEDIATE, so the
// chain tip cannot move underneath, even from another process).
func (n *Notebook) appendJournalTx(tx *sql.Tx, kind string, studyID int64, entry any) (JournalEntry, error) {
	payload, err := CanonicalJSON(entry)
	if err != nil {
		return JournalEntry{}, fmt.Errorf("journal %s: %w", kind, err)
	}
	prev := GenesisHash
	var last int64
	err = tx.QueryRow("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").Scan(&last, &prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return JournalEntry{}, err
	}
	if errors.Is(err, sql.ErrNoRows) {
		prev = GenesisHash
	}
	seq := last + 1
	now := n.now()
	at := FormatTime(now)
	hash, err := ChainHash(prev, EntryBytes(seq, kind, studyID, at, payload))
	if err != nil {
		return JournalEntry{}, fmt.Errorf("journal tip %d: %w", last, err)
	}
	var study any
	if studyID != 0 {
		study = studyID
	}
	if _, err := tx.Exec("INSERT INTO journal (seq, kind, study_id, at, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
		seq, kind, study, at, string(payload), prev, hash); err != nil {
		return JournalEntry{}, fmt.Errorf("journal %s: %w", kind, err)
	}
	return JournalEntry{Seq: seq, Kind: kind, StudyID: studyID, At: mustParseTime(at), Payload: payload, PrevHash: prev, Hash: hash}, nil
}

// JournalOfKind lists every entry of one kind, in seq order (one query, whatever the
// number of studies).
func (n *Notebook) JournalOfKind(ctx context.Context, kind string) ([]JournalEntry, error) {
	return n.queryEntries(ctx, "SELECT seq, kind, COALESCE(study_id, 0), at, payload, prev_hash, hash FROM journal WHERE kind = ? ORDER BY seq", kind)
}

// Journal lists entries after seq afterSeq (0: from the start), at most limit (0: all),
// optionally only one study's (studyID 0: all).
func (n *Notebook) Journal(ctx context.Context, studyID, afterSeq int64, limit int) ([]JournalEntry, error) {
	q := "SELECT seq, kind, COALESCE(study_id, 0), at, payload, prev_hash, hash FROM journal WHERE seq > ?"
	args := []any{afterSeq}
	if studyID != 0 {
		q += " AND study_id = ?"
		args = append(args, studyID)
	}
	q += " ORDER BY seq"
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	return n.queryEntries(ctx, q, args...)
}

// queryEntries reads the journal entries a query selects (seq, kind, study, at, payload,
// prev_hash, hash).
func (n *Notebook) queryEntries(ctx context.Context, q string, args ...any) ([]JournalEntry, error) {
	rows, err := n.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []JournalEntry
	for rows.Next() {
		var e JournalEntry
		var at, payload string
		if err := rows.Scan(&e.Seq, &e.Kind, &e.StudyID, &at, &payload, &e.PrevHash, &e.Hash); err != nil {
			return nil, err
		}
		e.At = mustParseTime(at)
		e.Payload = json.RawMessage(payload)
		out = append(out, e)
	}
	return out, rows.Err()
}

// VerifyReport is the result of walking the chain.
type VerifyReport struct {
	Entries        int    // entries checked
	Head           string // hash of the last entry (GenesisHash when empty): write it down to detect truncation
	HeadSeq        int64
	LegsChecked    int // legs whose sample and transcript digests were recomputed
	SamplesChecked int64
	// RecordsChecked counts the rows held to the entries that recorded them (verify_records.go).
	RecordsChecked int64
	// OlderRule counts, per column, the rows recorded before the chain held that column:
	// Verify could not hold them to an entry (docs/notebook.md, "What verify covers").
	OlderRule []OlderRuleCount
	// Integrity is what SQLite's PRAGMA integrity_check found ("ok" when the file's pages,
	// indexes and constraints read back whole; otherwise its first problems).
	Integrity []string
	Broken    *BrokenEntry // nil: intact
}

// OK reports whether the chain is intact (and the records and the file with it).
func (r VerifyReport) OK() bool { return r.Broken == nil }

// BrokenEntry names the first entry that does not verify, or the first row that differs from
// the entry that recorded it (Table, RowID and Column set; Seq 0 when no entry records it).
type BrokenEntry struct {
	Seq    int64
	Kind   string
	Reason string
	Table  string // a damaged row's table ("" for an entry of the chain)
	RowID  int64  // its id (for the sample tables: its leg)
	Column string // the first column found to differ ("" when not knowable)
}

func (b *BrokenEntry) String() string {
	switch {
	case b.Kind == "integrity_check":
		return "the file: " + b.Reason
	case b.Table != "" && b.Seq != 0:
		return fmt.Sprintf("a damaged record: %s (journal entry %d, %s, recorded it)", b.Reason, b.Seq, b.Kind)
	case b.Table != "":
		return "a damaged record: " + b.Reason
	}
	return fmt.Sprintf("entry %d (%s): %s", b.Seq, b.Kind, b.Reason)
}

// Verify walks the journal from the first entry: every entry's prev_hash must be the previous
// entry's hash, its hash must match its content, its payload must be canonical, and seq must
// have no gaps. For leg.finished entries the leg's samples and transcript are re-hashed and
// compared with the digests recorded then; for plan.registered the stored plan is re-hashed.
// The first entry that fails is named in the report (err is for I/O problems only).
func (n *Notebook) Verify(ctx context.Context) (VerifyReport, error) {
	rep, err := n.verify(ctx)
	return rep, damaged(n.path, err)
}

func (n *Notebook) verify(ctx context.Context) (VerifyReport, error) {
	rep := VerifyReport{Head: GenesisHash}
	var err error
	if rep.Integrity, err = integrityCheck(ctx, n.rdb); err != nil {
		return rep, err
	}
	if !IntegrityOK(rep.Integrity) {
		rep.Broken = &BrokenEntry{Kind: "integrity_check", Reason: "SQLite's integrity check found the file damaged: " + IntegrityText(rep.Integrity)}
		return rep, nil
	}
	rows, err := n.rdb.QueryContext(ctx, "SELECT seq, kind, COALESCE(study_id, 0), at, payload, prev_hash, hash FROM journal ORDER BY seq")
	if err != nil {
		return rep, err
	}
	type legCheck struct {
		seq     int64
		kind    string
		payload []byte
	}
	var checks []legCheck // content checks, in seq order
	prev := GenesisHash
	expect := int64(1)
	for rows.Next() {
		var seq, study int64
		var kind, at, payload, prevHash, hash string
		if err := rows.Scan(&seq, &kind, &study, &at, &payload, &prevHash, &hash); err != nil {
			rows.Close()
			return rep, err
		}
		broken := func(reason string) {
			if rep.Broken == nil {
				rep.Broken = &BrokenEntry{Seq: seq, Kind: kind, Reason: reason}
			}
		}
		switch {
		case seq != expect:
			broken(fmt.Sprintf("sequence gap: expected entry %d next, found %d (entries were deleted)", expect, seq))
		case prevHash != prev:
			broken("prev_hash does not match the hash of the entry before it")
		default:
			want, err := ChainHash(prevHash, EntryBytes(seq, kind, study, at, []byte(payload)))
			if err != nil {
				broken(err.Error())
			} else if want != hash {
				broken("stored hash does not match the entry's content (the entry was changed)")
			} else if canon, err := CanonicalJSON([]byte(payload)); err != nil || !bytes.Equal(canon, []byte(payload)) {
				broken("payload is not canonical JSON")
			}
		}
		if rep.Broken != nil {
			break
		}
		rep.Entries++
		rep.Head, rep.HeadSeq = hash, seq
		prev = hash
		expect = seq + 1
		if kind == KindLegFinished || kind == KindPlanRegistered {
			checks = append(checks, legCheck{seq, kind, []byte(payload)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, err
	}
	for _, c := range checks {
		if rep.Broken != nil {
			break
		}
		var err error
		if c.kind == KindPlanRegistered {
			rep.Broken, err = n.checkPlan(ctx, c.seq, c.kind, c.payload)
		} else {
			rep.Broken, err = n.checkLeg(ctx, &rep, c.seq, c.kind, c.payload)
		}
		if err != nil {
			return rep, err
		}
	}
	if rep.Broken == nil {
		var err error
		if rep.Broken, err = n.checkHosts(ctx); err != nil {
			return rep, err
		}
	}
	if rep.Broken == nil {
		var err error
		if rep.Broken, err = n.checkRecords(ctx, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// integrityCheck runs PRAGMA integrity_check: ["ok"], or the problems it found (at most 10).
func integrityCheck(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, "PRAGMA integrity_check(10)")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// IntegrityOK reports whether PRAGMA integrity_check found nothing wrong.
func IntegrityOK(lines []string) bool { return len(lines) == 1 && lines[0] == "ok" }

// IntegrityText is what PRAGMA integrity_check found, in one line.
func IntegrityText(lines []string) string {
	if IntegrityOK(lines) {
		return "ok: every page, index and constraint of the file reads back whole"
	}
	flat := make([]string, len(lines))
	for i, l := range lines {
		flat[i] = strings.Join(strings.Fields(strings.TrimPrefix(l, "*** in database main ***")), " ")
	}
	if len(flat) > 3 {
		return fmt.Sprintf("%s (and %d more problems)", strings.Join(flat[:3], "; "), len(flat)-3)
	}
	return strings.Join(flat, "; ")
}

func (n *Notebook) checkPlan(ctx context.Context, seq int64, kind string, payload []byte) (*BrokenEntry, error) {
	var p struct {
		Study  int64  `json:"study"`
		SHA256 string `json:"plan_sha256"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: "payload unreadable: " + err.Error()}, nil
	}
	var stored, sum string
	err := n.rdb.QueryRowContext(ctx, "SELECT canonical_json, sha256 FROM plans WHERE study_id = ?", p.Study).Scan(&stored, &sum)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: "the registered plan is missing from the plans table"}, nil
	case err != nil:
		return nil, err
	case SHA256Hex([]byte(stored)) != p.SHA256 || sum != p.SHA256:
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: "the stored plan no longer hashes to the registered SHA-256"}, nil
	}
	return nil, nil
}

func (n *Notebook) checkLeg(ctx context.Context, rep *VerifyReport, seq int64, kind string, payload []byte) (*BrokenEntry, error) {
	var p legFinishedPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: "payload unreadable: " + err.Error()}, nil
	}
	d, err := legDigest(ctx, n.rdb, p.Leg)
	var td *transcriptDamage
	if errors.As(err, &td) {
		return &BrokenEntry{Seq: seq, Kind: kind, Table: "transcript_chunks", RowID: p.Leg, Column: "data",
			Reason: fmt.Sprintf("transcript_chunks of leg %d, column data: %v", p.Leg, td.err)}, nil
	}
	if err != nil {
		return nil, err
	}
	rep.LegsChecked++
	rep.SamplesChecked += d.BenchRows + d.RequestRows + d.BatchedRows
	switch {
	case d.BenchRows != p.BenchRows || d.RequestRows != p.RequestRows:
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: fmt.Sprintf("leg %d has %d bench and %d request rows, the journal recorded %d and %d",
			p.Leg, d.BenchRows, d.RequestRows, p.BenchRows, p.RequestRows)}, nil
	case d.BatchedRows != p.BatchedRows:
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: fmt.Sprintf("leg %d has %d batched-bench rows, the journal recorded %d", p.Leg, d.BatchedRows, p.BatchedRows)}, nil
	case d.TelemetryRows != p.TelemetryRows:
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: fmt.Sprintf("leg %d has %d telemetry samples, the journal recorded %d", p.Leg, d.TelemetryRows, p.TelemetryRows)}, nil
	case d.SamplesSHA256 != p.SamplesSHA256:
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: fmt.Sprintf("leg %d's samples no longer hash to the recorded digest", p.Leg)}, nil
	case d.TranscriptSHA256 != p.TranscriptSHA256:
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: fmt.Sprintf("leg %d's transcript no longer hashes to the recorded digest", p.Leg)}, nil
	}
	if p.RowsSHA256 != "" {
		rs, err := legRowsSHA256(ctx, n.rdb, p.Leg)
		if err != nil {
			return nil, err
		}
		if rs != p.RowsSHA256 {
			return &BrokenEntry{Seq: seq, Kind: kind, Reason: fmt.Sprintf("leg %d's rows (with their statuses) no longer hash to the recorded rows_sha256", p.Leg)}, nil
		}
	}
	ok, err := seriesMatch(ctx, n.rdb, p.Study, p.Leg)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &BrokenEntry{Seq: seq, Kind: kind, Reason: fmt.Sprintf("leg %d's plot aggregates (bench_series) do not match its samples", p.Leg)}, nil
	}
	return nil, nil
}

// seriesMatch recomputes a leg's bench_series rows from its samples.
func seriesMatch(ctx context.Context, q querier, study, leg int64) (bool, error) {
	type agg struct {
		n, nSD               int64
		sum, min, max, sumSD float64
	}
	read := func(query string) (map[[4]int64]agg, error) {
		rows, err := q.QueryContext(ctx, query, study, leg)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[[4]int64]agg{}
		for rows.Next() {
			var k [4]int64
			var a agg
			if err := rows.Scan(&k[0], &k[1], &k[2], &k[3], &a.n, &a.sum, &a.min, &a.max, &a.nSD, &a.sumSD); err != nil {
				return nil, err
			}
			out[k] = a
		}
		return out, rows.Err()
	}
	stored, err := read(`SELECT config_id, n_prompt, n_gen, n_depth, n, sum_ts, min_ts, max_ts, n_sd, sum_sd
		FROM bench_series WHERE study_id = ? AND leg_id = ?`)
	if err != nil {
		return false, err
	}
	fresh, err := read(`SELECT config_id, COALESCE(n_prompt, 0), COALESCE(n_gen, 0), COALESCE(n_depth, 0), COUNT(*), SUM(avg_ts),
		MIN(avg_ts), MAX(avg_ts), COUNT(stddev_ts), COALESCE(SUM(stddev_ts), 0)
		FROM bench_samples WHERE study_id = ? AND leg_id = ? AND avg_ts IS NOT NULL GROUP BY 1, 2, 3, 4`)
	if err != nil {
		return false, err
	}
	if len(stored) != len(fresh) {
		return false, nil
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b))) }
	for k, a := range fresh {
		b, ok := stored[k]
		if !ok || a.n != b.n || a.nSD != b.nSD || a.min != b.min || a.max != b.max || !near(a.sum, b.sum) || !near(a.sumSD, b.sumSD) {
			return false, nil
		}
	}
	return true, nil
}
