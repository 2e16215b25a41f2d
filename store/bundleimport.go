package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/telemetry"
)

// Studies imported from receipt bundles (schema 9). A bundle written elsewhere (a study run
// headless on a bench host) is verified by the caller, then ImportBundle adds it as new rows of
// this notebook in one transaction: a study (status imported), its plan (the same canonical
// bytes, so the same SHA-256), its predictions, legs with their rows, row statuses and
// transcripts, amendments, deviations, verdicts and findings, each journaled in this
// notebook's own chain as if recorded here (so notebook verify re-hashes the imported legs),
// then a study.imported entry naming the origin. The bundle's journal excerpt is kept entry by
// entry (imported_journal) with the origin notebook's head, never spliced into this chain.

// KindStudyImported is the journal kind of the entry that closes a bundle's import.
const KindStudyImported = "study.imported"

// BundleStudy is a verified throughput bundle's study as the bundle holds it.
type BundleStudy struct {
	BundleSHA256 string // SHA-256 of the bundle's SHA256SUMS: its identity
	Source       string // where it was read from, as given
	Kind         string
	Sparkbench   string // the version that wrote it

	OriginStudyID  int64
	Name           string
	Description    string
	OriginStatus   string
	OriginHeadSeq  int64 // the origin notebook's journal head when the bundle was written
	OriginHeadHash string
	Machines       json.RawMessage // the bundle's machine records (fingerprints; no host names)

	PlanJSON    []byte // canonical, as registered
	PlanSHA256  string
	Predictions []BundlePrediction
	Legs        []BundleLeg
	Amendments  []BundleAmendment
	Deviations  []BundleDeviation
	Verdicts    []BundleVerdict
	Findings    []BundleFinding
	Notes       []BundleNote // the engine's study.* notes, payloads verbatim
	Journal     []BundleEntry
}

// BundleEntry is one entry of a bundle's journal excerpt, byte for byte (At as stored).
type BundleEntry struct {
	Seq      int64
	Kind     string
	StudyID  int64 // 0: null
	At       string
	Payload  json.RawMessage
	PrevHash string
	Hash     string
}

// BundlePrediction is a prediction.registered entry's content.
type BundlePrediction struct {
	OriginID       int64
	Key, Kind      string
	Text           string
	Selector, Spec json.RawMessage
}

// BundleLeg is one leg folder of a bundle.
type BundleLeg struct {
	OriginID    int64
	Dir         string
	Label, Kind string
	Detail      json.RawMessage // plan_leg, role, attempt
	State       string          // finished, interrupted (a leg still running in the bundle: interrupted)
	Class       string
	Reason      string
	ExitCode    *int
	Signal      string
	Argv        []string
	Env         map[string]string
	Conditions  []string
	StartedAt   string // as stored: nine fractional digits
	EndedAt     string
	Fingerprint string
	PeakRSS     int64
	TempBefore  *float64
	TempAfter   *float64
	Rows        []benchfmt.Result
	Statuses    []string // one per row
	Transcript  []byte
	// RowsSHA256 is the SHA-256 of the leg's rows.jsonl: the rows as stored here must hash to
	// it again, or nothing is imported.
	RowsSHA256 string
	// Telemetry are the leg's samples (its telemetry.jsonl; none: not sampled), and
	// TelemetrySHA256 that file's SHA-256, which the samples as stored here must hash to again.
	Telemetry       []telemetry.Sample
	TelemetrySHA256 string
	// Requests are a server leg's request records (a capacity lifetime's requests.jsonl as the
	// capacity recorder stores them, CapacityRequest), as request_samples rows; SamplesSHA256
	// is the origin's leg.finished samples_sha256, which the rows stored here must hash to
	// again ("": not checked).
	Requests      []RequestRecord
	SamplesSHA256 string
}

// BundleAmendment is an amendment entry.
type BundleAmendment struct {
	Target, Reason string
	Change         json.RawMessage
}

// BundleDeviation is a deviation entry (OriginLeg 0: about no one leg).
type BundleDeviation struct {
	OriginLeg   int64
	Description string
	Detail      json.RawMessage
}

// BundleVerdict is a computed (verdict) or human (verdict.human) verdict entry.
type BundleVerdict struct {
	Human     bool
	Key       string
	Source    string
	Outcome   string
	Observed  *float64
	Detail    json.RawMessage
	Rationale string
	Author    string
}

// BundleFinding is a finding entry; its legs by origin id, its predictions by key.
type BundleFinding struct {
	Title, Body string
	OriginLegs  []int64
	Predictions []string
}

// BundleNote is one of the engine's notes (study.bandwidth, study.run, …).
type BundleNote struct {
	Kind    string
	Payload json.RawMessage
}

// ImportedOrigin is where an imported study came from.
type ImportedOrigin struct {
	ImportID       int64
	StudyID        int64
	BundleSHA256   string
	Kind           string
	Source         string
	Sparkbench     string
	OriginStudyID  int64
	OriginName     string
	OriginStatus   string
	OriginHeadSeq  int64
	OriginHeadHash string
	FirstSeq       int64
	LastSeq        int64
	FirstPrevHash  string
	LastHash       string
	Machines       json.RawMessage
	ImportedAt     string
	JournalSeq     int64
}

// AlreadyImportedError: the bundle (by SHA-256) is already a study of this notebook, or
// another bundle of the same study is (SameExcerpt: its journal excerpt ends at the same
// entry, with the same hash, so it holds the same entries, legs and rows).
type AlreadyImportedError struct {
	BundleSHA256 string
	StudyID      int64
	Name         string
	SameExcerpt  bool
	ExcerptHash  string
}

func (e *AlreadyImportedError) Error() string {
	if e.SameExcerpt {
		return fmt.Sprintf("another bundle of the same study (its journal excerpt also ends at hash %s) is already imported as study %d (%s); nothing was added", e.ExcerptHash, e.StudyID, e.Name)
	}
	return fmt.Sprintf("this bundle (SHA-256 of its SHA256SUMS %s) is already imported as study %d (%s); nothing was added", e.BundleSHA256, e.StudyID, e.Name)
}

// ImportBundle adds a verified bundle's study to the notebook, all of it or nothing. A bundle
// already imported (its SHA-256) is refused with *AlreadyImportedError. A study name already
// taken gets " (imported …)" and the bundle's short hash.
func (n *Notebook) ImportBundle(ctx context.Context, b BundleStudy) (int64, error) {
	if n.readOnly {
		return 0, ErrReadOnly
	}
	if len(b.Journal) == 0 {
		return 0, errors.New("import bundle: the bundle has no journal excerpt")
	}
	canonPlan, err := CanonicalJSON(json.RawMessage(b.PlanJSON))
	if err != nil {
		return 0, fmt.Errorf("import bundle: plan: %w", err)
	}
	if sum := SHA256Hex(canonPlan); sum != b.PlanSHA256 {
		return 0, fmt.Errorf("import bundle: the plan hashes to %s here, the bundle registered %s", sum, b.PlanSHA256)
	}
	var id int64
	err = n.write(ctx, func(tx *sql.Tx) error {
		last := b.Journal[len(b.Journal)-1].Hash
		for _, by := range []struct{ where, arg string }{{"bundle_sha256 = ?", b.BundleSHA256}, {"excerpt_last_hash = ?", last}} {
			prev, found, err := importedWhere(ctx, tx, by.where, by.arg)
			if err != nil {
				return err
			}
			if found {
				e := &AlreadyImportedError{BundleSHA256: b.BundleSHA256, StudyID: prev.StudyID, Name: prev.OriginName,
					SameExcerpt: prev.BundleSHA256 != b.BundleSHA256, ExcerptHash: last}
				_ = tx.QueryRowContext(ctx, "SELECT name FROM studies WHERE id = ?", prev.StudyID).Scan(&e.Name)
				return e
			}
		}
		var err error
		id, err = n.importBundleTx(ctx, tx, b, canonPlan)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

func (n *Notebook) importBundleTx(ctx context.Context, tx *sql.Tx, b BundleStudy, canonPlan []byte) (int64, error) {
	name := b.Name
	var taken int
	if err := tx.QueryRow("SELECT COUNT(*) FROM studies WHERE name = ?", name).Scan(&taken); err != nil {
		return 0, err
	}
	if taken > 0 || IsBareNumber(name) { // a bare number is an ID, never a name (an old bundle's study may have one)
		name = fmt.Sprintf("%s (imported %s)", b.Name, b.BundleSHA256[:12])
	}
	kind := b.Kind
	if kind == "" {
		kind = StudyThroughput
	}
	id, err := n.createStudyTx(tx, Study{Name: name, Kind: kind, Status: StatusImported, Description: b.Description})
	if err != nil {
		return 0, err
	}
	je, err := n.appendJournalTx(tx, KindPlanRegistered, id, map[string]any{"study": id, "plan_sha256": b.PlanSHA256, "plan": json.RawMessage(canonPlan)})
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec("INSERT INTO plans (study_id, sha256, canonical_json, registered_at, journal_seq) VALUES (?, ?, ?, ?, ?)",
		id, b.PlanSHA256, string(canonPlan), FormatTime(je.At), je.Seq); err != nil {
		return 0, fmt.Errorf("import bundle: plan: %w", err)
	}
	// Model files are not in a bundle: an impossible plan folder keeps a report from reading
	// whatever lies at the plan's relative model paths on this machine.
	if _, err := n.appendJournalTx(tx, "study.plan_source", id, map[string]any{"study": id, "plan_dir": "\x00bundle", "plan_file": "", "bundle": b.Source}); err != nil {
		return 0, err
	}
	preds := map[string]int64{} // key → id here
	for _, p := range b.Predictions {
		pid, err := n.importPredictionTx(tx, id, p)
		if err != nil {
			return 0, err
		}
		preds[p.Key] = pid
	}
	for _, a := range b.Amendments {
		if err := n.importAmendmentTx(tx, id, a); err != nil {
			return 0, err
		}
	}
	legs := map[int64]int64{} // origin leg id → leg id here
	for i := range b.Legs {
		lid, err := n.importLegOfBundleTx(ctx, tx, id, b.BundleSHA256, &b.Legs[i])
		if err != nil {
			return 0, err
		}
		legs[b.Legs[i].OriginID] = lid
	}
	if err := n.importAnnotationsTx(tx, id, b, preds, legs); err != nil {
		return 0, err
	}
	for _, note := range b.Notes {
		if _, err := n.appendJournalTx(tx, note.Kind, id, note.Payload); err != nil {
			return 0, err
		}
	}
	return id, n.importOriginTx(tx, id, b, legs)
}

func (n *Notebook) importPredictionTx(tx *sql.Tx, studyID int64, p BundlePrediction) (int64, error) {
	sel, err := CanonicalJSON(rawOr(p.Selector, "null"))
	if err != nil {
		return 0, err
	}
	spec, err := CanonicalJSON(rawOr(p.Spec, "null"))
	if err != nil {
		return 0, err
	}
	je, err := n.appendJournalTx(tx, KindPredictionRegistered, studyID, map[string]any{
		"study": studyID, "key": p.Key, "kind": p.Kind, "text": p.Text, "selector": json.RawMessage(sel), "spec": json.RawMessage(spec)})
	if err != nil {
		return 0, err
	}
	res, err := tx.Exec(`INSERT INTO predictions (study_id, key, kind, text, selector_json, spec_json, registered_at, journal_seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, studyID, p.Key, p.Kind, p.Text, string(sel), string(spec), FormatTime(je.At), je.Seq)
	if err != nil {
		return 0, fmt.Errorf("import bundle: prediction %s: %w", p.Key, err)
	}
	return res.LastInsertId()
}

func (n *Notebook) importAmendmentTx(tx *sql.Tx, studyID int64, a BundleAmendment) error {
	change := jsonOr(rawOr(a.Change, "{}"), "{}")
	je, err := n.appendJournalTx(tx, KindAmendment, studyID, map[string]any{"study": studyID, "target": a.Target, "reason": a.Reason, "change": json.RawMessage(change)})
	if err != nil {
		return err
	}
	_, err = tx.Exec("INSERT INTO amendments (study_id, target, reason, change_json, created_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?)",
		studyID, a.Target, a.Reason, change, FormatTime(je.At), je.Seq)
	return err
}

// importLegOfBundleTx records one leg as the bundle holds it: inserted running with its own
// start, its rows, statuses and transcript, then frozen with its own state, class and end,
// journaled leg.started, leg.rows_marked and leg.finished here. Its rows must hash to the
// bundle's rows.jsonl again.
func (n *Notebook) importLegOfBundleTx(ctx context.Context, tx *sql.Tx, studyID int64, bundleSHA string, l *BundleLeg) (int64, error) {
	if len(l.Statuses) != len(l.Rows) {
		return 0, fmt.Errorf("import bundle: %s: %d row statuses for %d rows", l.Dir, len(l.Statuses), len(l.Rows))
	}
	kind := l.Kind
	if kind == "" {
		kind = LegKindBench
	}
	argv, env, conds := l.Argv, l.Env, l.Conditions
	if argv == nil {
		argv = []string{}
	}
	if env == nil {
		env = map[string]string{}
	}
	if conds == nil {
		conds = []string{}
	}
	detail := jsonOr(rawOr(l.Detail, "{}"), "{}")
	prov, err := CanonicalJSON(map[string]any{"bundle_sha256": bundleSHA, "leg": l.OriginID, "dir": l.Dir})
	if err != nil {
		return 0, err
	}
	res, err := tx.Exec(`INSERT INTO legs (study_id, label, kind, argv_json, env_json, conditions_json, state, started_at,
		fingerprint, temp_before_c, detail_json, provenance_json) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)`,
		studyID, l.Label, kind, jsonOr(argv, "[]"), jsonOr(env, "{}"), jsonOr(conds, "[]"), l.StartedAt, l.Fingerprint,
		floatPtr(l.TempBefore), detail, string(prov))
	if err != nil {
		return 0, fmt.Errorf("import bundle: %s: %w", l.Dir, err)
	}
	legID, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if _, err := n.appendJournalTx(tx, KindLegStarted, studyID, map[string]any{
		"leg": legID, "study": studyID, "label": l.Label, "kind": kind, "started_at": l.StartedAt,
		"argv": argv, "env": env, "conditions": conds, "fingerprint": l.Fingerprint,
		"machine": nil, "build": nil, "artefact": nil, "provenance": json.RawMessage(prov),
		"detail": json.RawMessage(detail), "temp_before_c": floatPtr(l.TempBefore)}); err != nil {
		return 0, err
	}
	pend := make([]pendingBench, len(l.Rows))
	var buf []byte
	for i := range l.Rows {
		if pend[i], buf, err = newPendingBench(legID, studyID, int64(i), &l.Rows[i], buf); err != nil {
			return 0, fmt.Errorf("import bundle: %s row %d: %w", l.Dir, i, err)
		}
	}
	if err := insertBench(tx, n.w.cfgCache, pend); err != nil {
		return 0, fmt.Errorf("import bundle: %s: %w", l.Dir, err)
	}
	reqs := make([]pendingRequest, len(l.Requests))
	for i := range l.Requests {
		reqs[i] = pendingRequest{legID: legID, studyID: studyID, seq: int64(i), r: l.Requests[i]}
	}
	if err := insertRequests(tx, reqs); err != nil {
		return 0, fmt.Errorf("import bundle: %s: %w", l.Dir, err)
	}
	counts := map[string]int{}
	var digest []byte
	for seq, s := range l.Statuses {
		if _, err := tx.Exec("INSERT INTO bench_row_status (leg_id, seq, status) VALUES (?, ?, ?)", legID, seq, s); err != nil {
			return 0, fmt.Errorf("import bundle: %s row %d status %q: %w", l.Dir, seq, s, err)
		}
		counts[s]++
		digest = append(append(digest, s...), '\n')
	}
	if len(l.Transcript) > 0 {
		if err := insertChunks(tx, []pendingChunk{{legID: legID, seq: 0, raw: int64(len(l.Transcript)), data: gzipBytes(l.Transcript)}}); err != nil {
			return 0, err
		}
	}
	if err := insertTelemetryTx(ctx, tx, legID, studyID, 0, l.Telemetry); err != nil {
		return 0, fmt.Errorf("import bundle: %s: %w", l.Dir, err)
	}
	if _, err := n.appendJournalTx(tx, KindRowsMarked, studyID, map[string]any{"leg": legID, "study": studyID, "rows": len(l.Rows),
		"result": counts["result"], "flagged": counts["flagged"], "discarded": counts["discarded"],
		"statuses_sha256": SHA256Hex(digest)}); err != nil {
		return 0, err
	}
	state := l.State
	if state != LegFinished && state != LegInterrupted {
		state = LegInterrupted // a leg still running when the bundle was written never finished
	}
	out := LegOutcome{Class: l.Class, Reason: l.Reason, ExitCode: l.ExitCode, Signal: l.Signal, TempAfterC: l.TempAfter,
		PeakRSSBytes: l.PeakRSS, endedAt: l.EndedAt}
	if out.endedAt == "" {
		out.endedAt = l.StartedAt
	}
	je, err := n.finishLegTx(ctx, tx, legID, state, out)
	if err != nil {
		return 0, err
	}
	var fin legFinishedPayload // its rows_sha256: the rows as stored here, hashed again
	if err := json.Unmarshal(je.Payload, &fin); err != nil {
		return 0, err
	}
	if l.RowsSHA256 != "" && fin.RowsSHA256 != l.RowsSHA256 {
		return 0, fmt.Errorf("import bundle: %s: the rows as stored here hash to %s, its rows.jsonl to %s", l.Dir, fin.RowsSHA256, l.RowsSHA256)
	}
	if l.SamplesSHA256 != "" && fin.SamplesSHA256 != l.SamplesSHA256 {
		return 0, fmt.Errorf("import bundle: %s: the leg's rows as stored here hash to %s, the origin's leg.finished recorded %s", l.Dir, fin.SamplesSHA256, l.SamplesSHA256)
	}
	if l.TelemetrySHA256 != "" && fin.TelemetrySHA256 != l.TelemetrySHA256 {
		return 0, fmt.Errorf("import bundle: %s: the telemetry samples as stored here hash to %s, its telemetry.jsonl to %s", l.Dir, fin.TelemetrySHA256, l.TelemetrySHA256)
	}
	return legID, nil
}

// importAnnotationsTx records deviations, verdicts and findings, their legs and predictions
// mapped to this notebook's ids.
func (n *Notebook) importAnnotationsTx(tx *sql.Tx, studyID int64, b BundleStudy, preds map[string]int64, legs map[int64]int64) error {
	for _, d := range b.Deviations {
		detail := jsonOr(rawOr(d.Detail, "{}"), "{}")
		leg := legs[d.OriginLeg]
		je, err := n.appendJournalTx(tx, KindDeviation, studyID, map[string]any{"study": studyID, "leg": nullID(leg), "description": d.Description, "detail": json.RawMessage(detail)})
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO deviations (study_id, leg_id, description, detail_json, created_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?)",
			studyID, nullID(leg), d.Description, detail, FormatTime(je.At), je.Seq); err != nil {
			return err
		}
	}
	for _, v := range b.Verdicts {
		pid, ok := preds[v.Key]
		if !ok {
			return fmt.Errorf("import bundle: a verdict on prediction %s, which the bundle does not register", v.Key)
		}
		kind, source := KindVerdict, "computed"
		if v.Human {
			kind, source = KindHumanVerdict, "human"
		}
		if v.Source != "" && v.Source != source {
			return fmt.Errorf("import bundle: a %s entry on %s with source %q", kind, v.Key, v.Source)
		}
		detail := jsonOr(rawOr(v.Detail, "{}"), "{}")
		je, err := n.appendJournalTx(tx, kind, studyID, map[string]any{"study": studyID, "prediction": pid, "key": v.Key,
			"source": source, "outcome": v.Outcome, "observed": floatPtr(v.Observed), "detail": json.RawMessage(detail),
			"rationale": v.Rationale, "author": v.Author})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO verdicts (study_id, prediction_id, source, outcome, observed, detail_json, rationale, author, created_at, journal_seq)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, studyID, pid, source, v.Outcome, floatPtr(v.Observed), detail, v.Rationale, v.Author, FormatTime(je.At), je.Seq); err != nil {
			return fmt.Errorf("import bundle: verdict on %s: %w", v.Key, err)
		}
	}
	for _, f := range b.Findings {
		if err := n.importFindingTx(tx, studyID, f, preds, legs); err != nil {
			return err
		}
	}
	return nil
}

func (n *Notebook) importFindingTx(tx *sql.Tx, studyID int64, f BundleFinding, preds map[string]int64, legs map[int64]int64) error {
	var number int
	if err := tx.QueryRow("SELECT COALESCE(MAX(number), 0) + 1 FROM findings").Scan(&number); err != nil {
		return err
	}
	legIDs, predIDs := []int64{}, []int64{}
	for _, l := range f.OriginLegs {
		id, ok := legs[l]
		if !ok {
			return fmt.Errorf("import bundle: a finding names leg %d, which the bundle does not hold", l)
		}
		legIDs = append(legIDs, id)
	}
	for _, k := range f.Predictions {
		id, ok := preds[k]
		if !ok {
			return fmt.Errorf("import bundle: a finding names prediction %s, which the bundle does not register", k)
		}
		predIDs = append(predIDs, id)
	}
	label := fmt.Sprintf("F%d", number)
	je, err := n.appendJournalTx(tx, KindFinding, studyID, map[string]any{"number": number, "label": label, "study": studyID,
		"title": f.Title, "body": f.Body, "legs": legIDs, "predictions": predIDs})
	if err != nil {
		return err
	}
	res, err := tx.Exec("INSERT INTO findings (number, study_id, title, body, created_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?)",
		number, studyID, f.Title, f.Body, FormatTime(je.At), je.Seq)
	if err != nil {
		return err
	}
	fid, _ := res.LastInsertId()
	for _, l := range legIDs {
		if _, err := tx.Exec("INSERT INTO finding_evidence (finding_id, leg_id) VALUES (?, ?)", fid, l); err != nil {
			return err
		}
	}
	for _, p := range predIDs {
		if _, err := tx.Exec("INSERT INTO finding_evidence (finding_id, prediction_id) VALUES (?, ?)", fid, p); err != nil {
			return err
		}
	}
	return nil
}

// importOriginTx journals study.imported (the origin, its chain head and the excerpt's ends),
// records the import and keeps the excerpt entry by entry.
func (n *Notebook) importOriginTx(tx *sql.Tx, studyID int64, b BundleStudy, legs map[int64]int64) error {
	first, last := b.Journal[0], b.Journal[len(b.Journal)-1]
	machines := jsonOr(rawOr(b.Machines, "[]"), "[]")
	legMap := map[string]int64{}
	for o, h := range legs {
		legMap[fmt.Sprint(o)] = h
	}
	je, err := n.appendJournalTx(tx, KindStudyImported, studyID, map[string]any{
		"study": studyID, "bundle_sha256": b.BundleSHA256, "source": b.Source, "kind": b.Kind, "sparkbench": b.Sparkbench,
		"origin": map[string]any{"study": b.OriginStudyID, "name": b.Name, "status": b.OriginStatus,
			"head":     map[string]any{"seq": b.OriginHeadSeq, "hash": b.OriginHeadHash},
			"machines": json.RawMessage(machines)},
		"excerpt": map[string]any{"first_seq": first.Seq, "last_seq": last.Seq, "first_prev_hash": first.PrevHash,
			"last_hash": last.Hash, "entries": len(b.Journal)},
		"legs": legMap})
	if err != nil {
		return err
	}
	res, err := tx.Exec(`INSERT INTO imported_bundles (study_id, bundle_sha256, kind, source, sparkbench, origin_study_id, origin_name,
		origin_status, origin_head_seq, origin_head_hash, excerpt_first_seq, excerpt_last_seq, excerpt_prev_hash, excerpt_last_hash,
		machines_json, imported_at, journal_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		studyID, b.BundleSHA256, b.Kind, b.Source, b.Sparkbench, b.OriginStudyID, b.Name, b.OriginStatus, b.OriginHeadSeq,
		b.OriginHeadHash, first.Seq, last.Seq, first.PrevHash, last.Hash, machines, FormatTime(je.At), je.Seq)
	if err != nil {
		return fmt.Errorf("import bundle: %w", err)
	}
	importID, err := res.LastInsertId()
	if err != nil {
		return err
	}
	stmt, err := tx.Prepare(`INSERT INTO imported_journal (import_id, seq, kind, study_id, at, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, e := range b.Journal {
		if _, err := stmt.Exec(importID, e.Seq, e.Kind, nullID(e.StudyID), e.At, string(e.Payload), e.PrevHash, e.Hash); err != nil {
			return fmt.Errorf("import bundle: journal entry %d: %w", e.Seq, err)
		}
	}
	return nil
}

func rawOr(b json.RawMessage, empty string) json.RawMessage {
	if len(strings.TrimSpace(string(b))) == 0 {
		return json.RawMessage(empty)
	}
	return b
}
