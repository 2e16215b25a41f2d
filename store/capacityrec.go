package store

import (
	"context"
	"fmt"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// CapacityRecorder is the capacity engine's notebook (capacity.Recorder) over a Notebook:
// capacity and concurrency studies registered in one step, one leg of kind "server" per
// server lifetime with its request records and server log, the engine's journal notes and
// computed verdicts.
type CapacityRecorder struct{ N *Notebook }

var _ capacity.Recorder = CapacityRecorder{}

// Register creates the study, freezes its plan (journal plan.registered), journals where the
// plan came from and registers each prediction, in one transaction; a capacity or concurrency
// study registered with this plan already is returned instead (existing, nothing written),
// looked up inside that transaction. A study imported from a bundle is not one (it is not run
// here: registering its plan makes a study that is). A name already taken gets the plan's
// short hash appended.
func (r CapacityRecorder) Register(ctx context.Context, s capacity.NewStudy) (int64, bool, error) {
	if s.Kind != StudyCapacity && s.Kind != StudyConcurrency {
		return 0, false, fmt.Errorf("register plan: kind %q is not capacity or concurrency", s.Kind)
	}
	reg := Registration{Kind: s.Kind, Name: s.Name, Description: s.Description, PlanJSON: s.PlanJSON, PlanSHA256: s.PlanSHA256,
		PlanDir: s.PlanDir, PlanFile: s.PlanFile, SourceNote: capacity.NotePlanSource,
		SameKinds: []string{StudyCapacity, StudyConcurrency}, SkipImported: true}
	for _, p := range s.Predictions {
		reg.Predictions = append(reg.Predictions, RegisteredPrediction{ID: p.ID, Kind: string(p.Kind), Text: p.Text, About: p.About, Spec: p})
	}
	return r.N.RegisterStudy(ctx, reg)
}

// Lease takes the study's run lease (Notebook.AcquireRunLease); a live holder is refused as
// capacity.ErrBusy, naming it.
func (r CapacityRecorder) Lease(ctx context.Context, id int64) (func(), error) {
	return r.N.LeaseStudy(ctx, id, capacity.ErrBusy)
}

// Study reads a registered capacity or concurrency study: plan, source folder, latest
// computed verdicts and the "study.*" / "capacity.*" journal notes.
func (r CapacityRecorder) Study(ctx context.Context, id int64) (capacity.StoredStudy, error) {
	n := r.N
	s, err := n.Study(ctx, id)
	if err != nil {
		return capacity.StoredStudy{}, err
	}
	if s.Kind != StudyCapacity && s.Kind != StudyConcurrency {
		return capacity.StoredStudy{}, fmt.Errorf("study %d (%s) is a %s study, not a capacity or concurrency study", id, s.Name, s.Kind)
	}
	p, err := n.Plan(ctx, id)
	if err != nil {
		return capacity.StoredStudy{}, fmt.Errorf("study %d (%s) has no registered plan: %w", id, s.Name, err)
	}
	out := capacity.StoredStudy{ID: s.ID, Name: s.Name, Kind: s.Kind, Status: s.Status, PlanSHA256: p.SHA256, PlanJSON: p.JSON,
		Verdicts: map[string]study.StoredVerdict{}}
	board, err := n.Scoreboard(ctx, id)
	if err != nil {
		return out, err
	}
	for _, row := range board {
		if v := storedVerdict(row.Computed); v != nil {
			out.Verdicts[row.Prediction.Key] = *v
		}
	}
	var src planSource
	out.Notes, src, err = n.studyNotes(ctx, id, capacity.NotePlanSource, "study.", "capacity.")
	out.PlanDir, out.PlanFile = src.Dir, src.File
	return out, err
}

// SetStatus sets the study's status.
func (r CapacityRecorder) SetStatus(ctx context.Context, id int64, status string) error {
	return r.N.SetStudyStatus(ctx, id, status)
}

// Note journals one of the engine's entries under the study.
func (r CapacityRecorder) Note(ctx context.Context, id int64, kind string, payload any) error {
	_, err := r.N.AppendJournal(ctx, kind, payload, ForStudy(id))
	return err
}

// StartLeg records a server lifetime as a running leg of kind "server".
func (r CapacityRecorder) StartLeg(ctx context.Context, l capacity.LegStart) (int64, capacity.LegSink, error) {
	detail, err := CanonicalJSON(l.Detail)
	if err != nil {
		return 0, nil, err
	}
	leg, sw, err := r.N.StartLeg(ctx, LegSpec{StudyID: l.StudyID, Label: l.Label, Kind: LegKindServer, Argv: l.Argv, Detail: detail})
	if err != nil {
		return 0, nil, err
	}
	return leg.ID, capacitySink{sw}, nil
}

type capacitySink struct{ sw *SampleWriter }

// AddRequests stores a lifetime's request records as request_samples rows (RequestRows).
func (s capacitySink) AddRequests(l capacity.LegRequests) error {
	recs := make([]RequestRecord, 0, len(l.Records))
	for _, rec := range l.Records {
		r, err := CapacityRequest(l, rec)
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	return s.sw.AddRequests(recs...)
}

// CapacityRequest is a capacity request record as a notebook row. The record's times are
// milliseconds on its pass's clock; the row's are wall-clock: l.Origin + ms. The last-token
// time is the end event (as the capacity ITL defines it). Extra keeps the record's own
// numbers exactly: seq, send_ms, first_token_ms, end_ms, prompt_n, predicted_n.
func CapacityRequest(l capacity.LegRequests, rec capacity.RequestRecord) (RequestRecord, error) {
	at := func(ms float64) time.Time { return l.Origin.Add(time.Duration(ms * 1e6)) }
	r := RequestRecord{Candidate: l.Key.Candidate, Arm: l.Arm, Slots: l.Key.Slots, Clients: rec.Clients, Pass: l.Key.Pass,
		Phase: rec.Phase, Index: rec.Seq, TSend: at(rec.SendMs), TEnd: at(rec.EndMs), HTTPStatus: rec.HTTPStatus,
		NPredict: l.NPredict, TokensPredicted: rec.Tokens, Error: rec.Error}
	extra := map[string]any{"seq": rec.Seq, "send_ms": rec.SendMs, "end_ms": rec.EndMs, "first_token_ms": rec.FirstTokenMs,
		"clock": "per-pass monotonic ms; wall times = pass origin + ms"}
	if rec.FirstTokenMs != nil {
		r.TFirst, r.TLast = at(*rec.FirstTokenMs), r.TEnd
	}
	if t := rec.Timings; t != nil {
		r.TokensEvaluated, r.PromptMs, r.PredictedMs = t.PromptN, t.PromptMs, t.PredictedMs
		if t.PredictedMs > 0 {
			r.PredictedPerSecond = float64(t.PredictedN) / t.PredictedMs * 1000
		}
		extra["prompt_n"], extra["predicted_n"] = t.PromptN, t.PredictedN
	}
	b, err := CanonicalJSON(extra)
	if err != nil {
		return r, err
	}
	r.Extra = b
	return r, nil
}

// FinishLeg commits the leg's rows and its server log (the transcript) and finishes it.
func (r CapacityRecorder) FinishLeg(ctx context.Context, legID int64, end capacity.LegEnd) error {
	_, _, err := r.N.FinishLeg(ctx, legID, LegOutcome{Class: end.Class, Reason: end.Reason, PeakRSSBytes: end.PeakRSSBytes, Transcript: end.Transcript})
	return err
}

// RecordVerdict journals a computed verdict; its detail is the whole study.Verdict.
func (r CapacityRecorder) RecordVerdict(ctx context.Context, id int64, v study.Verdict) error {
	return StudyRecorder(r).RecordVerdict(ctx, id, v)
}

// Legs lists the study's server lifetimes as recorded.
func (r CapacityRecorder) Legs(ctx context.Context, id int64) ([]capacity.StoredLeg, error) {
	legs, err := r.N.LegTimeline(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]capacity.StoredLeg, 0, len(legs))
	for _, l := range legs {
		out = append(out, capacity.StoredLeg{ID: l.ID, Label: l.Label, State: l.State, Class: l.Class, Reason: l.Reason,
			Argv: l.Argv, PeakRSSBytes: l.PeakRSSBytes, RequestRows: l.RequestRows, TranscriptBytes: l.TranscriptBytes,
			StartedAt: l.StartedAt, EndedAt: l.EndedAt})
	}
	return out, nil
}
