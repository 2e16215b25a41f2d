package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/study"
	"sparkbench/runner/hashing"
)

// StudyRecorder is the study engine's notebook (study.Recorder) over a Notebook: throughput
// studies registered in one step, legs with their rows and row statuses, verdicts, amendments,
// deviations, findings and the engine's journal notes.
type StudyRecorder struct{ N *Notebook }

var _ study.Recorder = StudyRecorder{}

// Journal kind of the row statuses written when a leg finishes (before its leg.finished).
const KindRowsMarked = "leg.rows_marked"

// Register creates the study, freezes its plan (journal plan.registered, as RegisterPlan
// does), journals where the plan came from and registers each prediction, in one transaction:
// a crash leaves either the whole registration or none of it. A throughput study registered
// with this plan already is returned instead (existing, nothing written), looked up inside
// that transaction, so two registrations at once make one study. A name already taken gets
// the plan's short hash appended.
func (r StudyRecorder) Register(ctx context.Context, s study.NewStudy) (int64, bool, error) {
	reg := Registration{Kind: StudyThroughput, Name: s.Name, Description: s.Description, PlanJSON: s.PlanJSON, PlanSHA256: s.PlanSHA256,
		PlanDir: s.PlanDir, PlanFile: s.PlanFile, SourceNote: study.NotePlanSource}
	for _, p := range s.Predictions {
		reg.Predictions = append(reg.Predictions, RegisteredPrediction{ID: p.ID, Kind: string(p.Kind), Text: p.Text, About: p.About, Spec: p})
	}
	return r.N.RegisterStudy(ctx, reg)
}

// Lease takes the study's run lease (Notebook.AcquireRunLease); a live holder is refused as
// study.ErrBusy, naming it.
func (r StudyRecorder) Lease(ctx context.Context, id int64) (func(), error) {
	return r.N.LeaseStudy(ctx, id, study.ErrBusy)
}

// Study reads a registered throughput study for the engine.
func (r StudyRecorder) Study(ctx context.Context, id int64) (study.StoredStudy, error) {
	n := r.N
	s, err := n.Study(ctx, id)
	if err != nil {
		return study.StoredStudy{}, err
	}
	if s.Kind != StudyThroughput {
		return study.StoredStudy{}, fmt.Errorf("study %d (%s) is a %s study, not a throughput study", id, s.Name, s.Kind)
	}
	p, err := n.Plan(ctx, id)
	if err != nil {
		return study.StoredStudy{}, err
	}
	out := study.StoredStudy{ID: s.ID, Name: s.Name, Status: s.Status, PlanSHA256: p.SHA256, PlanJSON: p.JSON,
		RegisteredAt: p.RegisteredAt, Verdicts: map[string]study.StoredVerdicts{}}
	if out.Amendments, err = r.amendments(ctx, id); err != nil {
		return out, err
	}
	devs, err := n.Deviations(ctx, id)
	if err != nil {
		return out, err
	}
	for _, d := range devs {
		out.Deviations = append(out.Deviations, study.StoredDeviation{Description: d.Description, LegID: d.LegID, Detail: d.Detail, At: d.CreatedAt})
	}
	board, err := n.Scoreboard(ctx, id)
	if err != nil {
		return out, err
	}
	keys := map[int64]string{}
	for _, row := range board {
		keys[row.Prediction.ID] = row.Prediction.Key
		out.Verdicts[row.Prediction.Key] = study.StoredVerdicts{Computed: storedVerdict(row.Computed), Human: storedVerdict(row.Human)}
	}
	fs, err := n.Findings(ctx, id)
	if err != nil {
		return out, err
	}
	for _, f := range fs {
		sf := study.StoredFinding{Label: f.Label(), Text: f.Title, LegIDs: f.LegIDs, At: f.CreatedAt}
		for _, p := range f.PredictionIDs {
			sf.Predictions = append(sf.Predictions, keys[p])
		}
		out.Findings = append(out.Findings, sf)
	}
	var src planSource
	out.Notes, src, err = n.studyNotes(ctx, id, study.NotePlanSource, "study.")
	out.PlanDir = src.Dir
	return out, err
}

// planSource is where a registered plan came from (the journal's plan-source note).
type planSource struct {
	Dir  string `json:"plan_dir"`
	File string `json:"plan_file"`
}

// studyNotes are study id's journal entries whose kinds start with one of prefixes (e.g.
// "study."), in order, but its status changes, and where its plan came from (the note of kind
// sourceNote).
func (n *Notebook) studyNotes(ctx context.Context, id int64, sourceNote string, prefixes ...string) ([]study.StoredNote, planSource, error) {
	var src planSource
	like := make([]string, len(prefixes))
	args := []any{id}
	for i, p := range prefixes {
		like[i] = "kind LIKE ?"
		args = append(args, p+"%")
	}
	// A status change (study.status) is the studies row's, not a note of the study's run.
	args = append(args, KindStudyStatus)
	rows, err := n.rdb.QueryContext(ctx, "SELECT kind, payload, at FROM journal WHERE study_id = ? AND ("+strings.Join(like, " OR ")+") AND kind != ? ORDER BY seq", args...)
	if err != nil {
		return nil, src, err
	}
	defer rows.Close()
	var notes []study.StoredNote
	for rows.Next() {
		var kind, payload, at string
		if err := rows.Scan(&kind, &payload, &at); err != nil {
			return notes, src, err
		}
		notes = append(notes, study.StoredNote{Kind: kind, Payload: json.RawMessage(payload), At: mustParseTime(at)})
		if kind == sourceNote {
			_ = json.Unmarshal([]byte(payload), &src)
		}
	}
	return notes, src, rows.Err()
}

func storedVerdict(v *Verdict) *study.StoredVerdict {
	if v == nil {
		return nil
	}
	return &study.StoredVerdict{Outcome: v.Outcome, Observed: v.Observed, Detail: v.Detail, Rationale: v.Rationale, Author: v.Author, At: v.CreatedAt}
}

func (r StudyRecorder) amendments(ctx context.Context, studyID int64) ([]study.StoredAmendment, error) {
	rows, err := r.N.rdb.QueryContext(ctx, "SELECT target, reason, change_json, created_at FROM amendments WHERE study_id = ? ORDER BY id", studyID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []study.StoredAmendment
	for rows.Next() {
		var a study.StoredAmendment
		var change, at string
		if err := rows.Scan(&a.Target, &a.Reason, &change, &at); err != nil {
			return nil, err
		}
		a.Change, a.At = json.RawMessage(change), mustParseTime(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

type legDetail struct {
	PlanLeg string `json:"plan_leg"`
	Role    string `json:"role"`
	Attempt int    `json:"attempt"`
}

// Legs lists the study's legs with their rows counted by status.
func (r StudyRecorder) Legs(ctx context.Context, studyID int64) ([]study.StoredLeg, error) {
	legs, err := r.N.LegTimeline(ctx, studyID)
	if err != nil {
		return nil, err
	}
	counts := map[int64]map[string]int{}
	rows, err := r.N.rdb.QueryContext(ctx, `SELECT s.leg_id, COALESCE(st.status, ''), COUNT(*) FROM bench_samples s
		LEFT JOIN bench_row_status st ON st.leg_id = s.leg_id AND st.seq = s.seq
		WHERE s.leg_id IN (SELECT id FROM legs WHERE study_id = ?) GROUP BY 1, 2`, studyID)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var leg int64
		var status string
		var k int
		if err := rows.Scan(&leg, &status, &k); err != nil {
			rows.Close()
			return nil, err
		}
		if counts[leg] == nil {
			counts[leg] = map[string]int{}
		}
		counts[leg][status] = k
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]study.StoredLeg, 0, len(legs))
	for _, l := range legs {
		var d legDetail
		_ = json.Unmarshal(l.Detail, &d)
		c := counts[l.ID]
		out = append(out, study.StoredLeg{ID: l.ID, Label: l.Label, Kind: l.Kind, PlanLeg: d.PlanLeg, Role: d.Role, Attempt: d.Attempt,
			State: l.State, Class: l.Class, Reason: l.Reason, ExitCode: l.ExitCode, Signal: l.Signal, Argv: l.Argv,
			Conditions: l.Conditions, StartedAt: l.StartedAt, EndedAt: l.EndedAt, PeakRSS: l.PeakRSSBytes,
			Rows: int(l.BenchRows), Results: c["result"], Flagged: c["flagged"], Discarded: c["discarded"], Unmarked: c[""]})
	}
	return out, nil
}

// Rows lists every llama-bench row of the study with its leg, seq and status.
func (r StudyRecorder) Rows(ctx context.Context, studyID int64) ([]study.StoredRow, error) {
	// By the study's legs: bench_samples is clustered by (leg_id, seq) with no index on
	// study_id, so "b.study_id = ?" would scan every row of the notebook for each study.
	return benchRows(ctx, r.N.rdb, "b.leg_id IN (SELECT id FROM legs WHERE study_id = ?)", studyID)
}

// benchRows reads llama-bench rows (where: a condition on bench_rows b) with their leg, seq
// and status, ordered by leg and seq.
func benchRows(ctx context.Context, q querier, where string, arg any) ([]study.StoredRow, error) {
	cols := append(append([]string{}, configColumns...), "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns",
		"avg_ts", "stddev_ts", "samples_ns", "samples_ts", "extra_json", "known_mask", "source_line")
	qs := "SELECT b." + strings.Join(cols, ", b.") + `, b.leg_id, b.seq, COALESCE(st.status, '')
		FROM bench_rows b LEFT JOIN bench_row_status st ON st.leg_id = b.leg_id AND st.seq = b.seq
		WHERE ` + where + ` ORDER BY b.leg_id, b.seq`
	rows, err := q.QueryContext(ctx, qs, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vals := make([]any, len(cols)+3)
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []study.StoredRow
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		res, err := resultFromRow(vals[:len(cols)])
		if err != nil {
			return nil, err
		}
		sr := study.StoredRow{Result: res}
		sr.LegID, _ = vals[len(cols)].(int64)
		sr.Seq, _ = vals[len(cols)+1].(int64)
		switch s := vals[len(cols)+2].(type) {
		case string:
			sr.Status = s
		case []byte:
			sr.Status = string(s)
		}
		out = append(out, sr)
	}
	return out, rows.Err()
}

// legRowsSHA256 is the SHA-256 of a leg's result rows in their canonical serialization
// (canon.AppendRowLine: one line per llama-bench row, in seq order, with its status): the
// bytes a bundle writes as the leg's rows.jsonl, so a bundle can recompute it.
// It is "" (not recorded) in a notebook whose schema predates row statuses (version < 4:
// only tests open one without migrating it).
func legRowsSHA256(ctx context.Context, q querier, legID int64) (string, error) {
	var have int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'bench_row_status'").Scan(&have); err != nil {
		return "", err
	}
	if have == 0 {
		return "", nil
	}
	rows, err := benchRows(ctx, q, "b.leg_id = ?", legID)
	if err != nil {
		return "", err
	}
	var b []byte
	for _, r := range rows {
		js, err := r.Result.MarshalJSON()
		if err != nil {
			return "", fmt.Errorf("leg %d row %d: %w", legID, r.Seq, err)
		}
		b = canon.AppendRowLine(b, r.Seq, r.Status, js)
	}
	return SHA256Hex(b), nil
}

// SetStatus sets the study's status.
func (r StudyRecorder) SetStatus(ctx context.Context, studyID int64, status string) error {
	return r.N.SetStudyStatus(ctx, studyID, status)
}

// Note journals one of the engine's entries under the study.
func (r StudyRecorder) Note(ctx context.Context, studyID int64, kind string, payload any) error {
	_, err := r.N.AppendJournal(ctx, kind, payload, ForStudy(studyID))
	return err
}

// Environment records the machine (with its measured bandwidth, if any) and the build.
func (r StudyRecorder) Environment(ctx context.Context, env study.Environment) (int64, int64, error) {
	m := env.Machine
	info, err := CanonicalJSON(map[string]any{"machine": m, "devices": env.Devices, "bandwidth": env.Bandwidth})
	if err != nil {
		return 0, 0, err
	}
	mid, err := r.N.UpsertMachine(ctx, Machine{Hostname: m.Hostname, CPUModel: m.CPUModel, Cores: m.Cores, RAMBytes: m.MemBytes,
		OS: m.OS, Kernel: m.Kernel, GPU: strings.Join(env.Devices, "; "), MemBandwidthGBs: env.BandwidthGBs, Info: info})
	if err != nil {
		return 0, 0, err
	}
	bid, err := r.N.UpsertBuild(ctx, Build{Dir: env.BuildDir, VersionLine: env.VersionLine, BuildNumber: env.BuildNumber,
		Commit: env.Commit, Backends: strings.Join(env.Backends, ", "), Binaries: env.Binaries})
	return mid, bid, err
}

// Model records a model file with both hashes (status VERIFIED or MISMATCH).
func (r StudyRecorder) Model(ctx context.Context, m study.ModelRecord) (int64, error) {
	k, err := hashing.KeyOf(m.Path)
	if err != nil {
		return 0, err
	}
	a, err := r.N.UpsertArtefact(ctx, Artefact{Path: m.Path, Size: k.Size, MTime: k.MTime, Dev: k.Dev, Inode: k.Inode, CTime: k.CTime,
		SHA256: m.SHA256, ExpectedSHA256: m.ExpectedSHA256, Name: m.Name, Architecture: m.Architecture, Quant: m.Quant,
		NParams: m.NParams, Source: m.Source, Revision: m.Revision})
	return a.ID, err
}

// StartLeg records a leg as running; its detail carries the plan leg, role and attempt.
func (r StudyRecorder) StartLeg(ctx context.Context, l study.LegStart) (int64, study.RowSink, error) {
	detail := map[string]any{}
	for k, v := range l.Detail {
		detail[k] = v
	}
	detail["plan_leg"], detail["role"], detail["attempt"] = l.PlanLeg, l.Role, l.Attempt
	b, err := CanonicalJSON(detail)
	if err != nil {
		return 0, nil, err
	}
	kind := l.Kind
	if kind == "" {
		kind = LegKindBench
	}
	leg, sw, err := r.N.StartLeg(ctx, LegSpec{StudyID: l.StudyID, Label: l.Label, Kind: kind, MachineID: l.MachineID,
		BuildID: l.BuildID, ArtefactID: l.ArtefactID, Argv: l.Argv, Conditions: l.Conditions, Detail: b})
	if err != nil {
		return 0, nil, err
	}
	return leg.ID, sw, nil
}

// FinishLeg commits the leg's rows, writes each row's status, journals leg.rows_marked (the
// counts and a digest of the statuses) and finishes the leg, in one transaction.
func (r StudyRecorder) FinishLeg(ctx context.Context, legID int64, end study.LegEnd) error {
	n := r.N
	if n.readOnly {
		return ErrReadOnly
	}
	if err := n.w.flushLeg(ctx, legID); err != nil {
		return fmt.Errorf("finish leg %d: some samples were not committed: %w", legID, err)
	}
	out := LegOutcome{Class: end.Class, Reason: end.Reason, ExitCode: end.ExitCode, Signal: end.Signal, PeakRSSBytes: end.PeakRSS}
	if out.Class == "" {
		out.Class = ClassOK
	}
	return n.write(ctx, func(tx *sql.Tx) error {
		var studyID int64
		var rows int
		if err := tx.QueryRow("SELECT study_id, (SELECT COUNT(*) FROM bench_samples WHERE leg_id = ?) FROM legs WHERE id = ?", legID, legID).Scan(&studyID, &rows); err != nil {
			return fmt.Errorf("finish leg %d: %w", legID, err)
		}
		if len(end.RowStatus) != rows {
			return fmt.Errorf("finish leg %d: %d row statuses for %d stored rows", legID, len(end.RowStatus), rows)
		}
		counts := map[string]int{}
		var digest []byte
		for seq, s := range end.RowStatus {
			if _, err := tx.Exec("INSERT INTO bench_row_status (leg_id, seq, status) VALUES (?, ?, ?)", legID, seq, s); err != nil {
				return fmt.Errorf("finish leg %d: row %d status %q: %w", legID, seq, s, err)
			}
			counts[s]++
			digest = append(append(digest, s...), '\n')
		}
		if len(end.Transcript) > 0 {
			var seq int64
			if err := tx.QueryRow("SELECT COALESCE(MAX(seq) + 1, 0) FROM transcript_chunks WHERE leg_id = ?", legID).Scan(&seq); err != nil {
				return err
			}
			if err := insertChunks(tx, []pendingChunk{{legID: legID, seq: seq, raw: int64(len(end.Transcript)), data: gzipBytes(end.Transcript)}}); err != nil {
				return err
			}
		}
		if _, err := n.appendJournalTx(tx, KindRowsMarked, studyID, map[string]any{"leg": legID, "study": studyID, "rows": rows,
			"result": counts["result"], "flagged": counts["flagged"], "discarded": counts["discarded"],
			"statuses_sha256": SHA256Hex(digest)}); err != nil {
			return err
		}
		_, err := n.finishLegTx(ctx, tx, legID, LegFinished, out)
		return err
	})
}

// RecordGate stores a gate result.
func (r StudyRecorder) RecordGate(ctx context.Context, g study.GateRecord) error {
	detail, err := CanonicalJSON(g.Detail)
	if err != nil {
		return err
	}
	obs, lim := g.Observed, g.Limit
	return r.N.RecordGates(ctx, []Gate{{StudyID: g.StudyID, LegID: g.LegID, Name: g.Name, Code: g.Code, Passed: g.Passed,
		Observed: &obs, Limit: &lim, Detail: detail}})
}

func (r StudyRecorder) predictionID(ctx context.Context, studyID int64, key string) (int64, error) {
	var id int64
	err := r.N.rdb.QueryRowContext(ctx, "SELECT id FROM predictions WHERE study_id = ? AND key = ?", studyID, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("study %d has no prediction %q", studyID, key)
	}
	return id, err
}

// RecordVerdict journals a computed verdict; its detail is the whole study.Verdict.
func (r StudyRecorder) RecordVerdict(ctx context.Context, studyID int64, v study.Verdict) error {
	pid, err := r.predictionID(ctx, studyID, v.Prediction)
	if err != nil {
		return err
	}
	detail, err := CanonicalJSON(v)
	if err != nil {
		return err
	}
	_, err = r.N.RecordVerdict(ctx, Verdict{PredictionID: pid, Outcome: string(v.Outcome), Observed: v.Value, Detail: detail})
	return err
}

// RecordHumanVerdict journals a person's verdict.
func (r StudyRecorder) RecordHumanVerdict(ctx context.Context, studyID int64, h study.HumanVerdict) error {
	pid, err := r.predictionID(ctx, studyID, h.Prediction)
	if err != nil {
		return err
	}
	_, err = r.N.RecordHumanVerdict(ctx, Verdict{PredictionID: pid, Outcome: h.Outcome, Rationale: h.Rationale, Author: h.Author})
	return err
}

// AddAmendment journals an accepted amendment.
func (r StudyRecorder) AddAmendment(ctx context.Context, studyID int64, a study.AmendmentRecord) error {
	change, err := CanonicalJSON(a.Change)
	if err != nil {
		return err
	}
	_, err = r.N.AddAmendment(ctx, Amendment{StudyID: studyID, Target: a.Target, Reason: a.Reason, Change: change})
	return err
}

// AddDeviation journals a deviation.
func (r StudyRecorder) AddDeviation(ctx context.Context, studyID int64, d study.DeviationRecord) error {
	detail, err := CanonicalJSON(d.Detail)
	if err != nil {
		return err
	}
	_, err = r.N.AddDeviation(ctx, Deviation{StudyID: studyID, LegID: d.LegID, Description: d.Description, Detail: detail})
	return err
}

// AddFinding journals the next numbered finding with its evidence.
func (r StudyRecorder) AddFinding(ctx context.Context, studyID int64, f study.FindingRecord) (string, error) {
	var preds []int64
	for _, key := range f.Predictions {
		id, err := r.predictionID(ctx, studyID, key)
		if err != nil {
			return "", err
		}
		preds = append(preds, id)
	}
	fd, err := r.N.AddFinding(ctx, Finding{StudyID: studyID, Title: f.Text, LegIDs: f.LegIDs, PredictionIDs: preds})
	return fd.Label(), err
}
