package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/vocab"
)

// RetryError refuses a --retry request: the leg is not a plan leg, or it has results.
type RetryError struct{ Msg string }

func (e *RetryError) Error() string { return e.Msg }

// RefusedError is a plan the engine will not register or run, with every error-level problem
// (a model whose SHA-256 differs from the plan's reads "MISMATCH").
type RefusedError struct {
	Problems []Problem
}

func (e *RefusedError) Error() string {
	var lines []string
	for _, p := range Errors(e.Problems) {
		lines = append(lines, p.Path+": "+p.Msg)
	}
	return "plan refused: " + strings.Join(lines, "; ")
}

// ErrBusy is returned by Run when another process is running a leg of the study.
var ErrBusy = errors.New("study is being run by another process")

// ErrStopped is returned by Run when ctx was cancelled: the running leg was stopped and
// recorded (stopped_by_user); Run again to resume.
var ErrStopped = errors.New("study stopped before its last leg")

// Loaded is a registered study read back from the notebook: its plan decoded once, its legs
// expanded, its rows and legs as recorded.
type Loaded struct {
	St     StoredStudy
	Plan   *Plan
	Preds  []Prediction // the plan's, with accepted amendments applied
	Legs   []LegPlan
	Stored []StoredLeg
	Rows   []StoredRow
	// Reopened lists final legs without results that a run was asked to retry (Reopen): not
	// final again until that attempt ends.
	Reopened map[string]bool
	// Telemetry holds each sampled leg's telemetry samples by notebook leg ID, when the
	// recorder holds them (TelemetryReader); nil for a study without.
	Telemetry map[int64][]telemetry.Sample
}

// LoadStudy reads study id back from the notebook.
func LoadStudy(ctx context.Context, rec RecordReader, id int64) (*Loaded, error) {
	st, err := rec.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := Decode(fmt.Sprintf("study %d's registered plan", id), st.PlanJSON)
	if err != nil {
		return nil, err
	}
	legs, err := Expand(p, st.PlanDir)
	if err != nil {
		return nil, err
	}
	preds, err := effectivePredictions(p, st.Amendments)
	if err != nil {
		return nil, err
	}
	l := &Loaded{St: st, Plan: p, Preds: preds, Legs: legs}
	if l.Stored, err = rec.Legs(ctx, id); err != nil {
		return nil, err
	}
	if l.Rows, err = rec.Rows(ctx, id); err != nil {
		return nil, err
	}
	if l.Telemetry, err = loadTelemetry(ctx, rec, l.Stored); err != nil {
		return nil, err
	}
	return l, nil
}

// MeasuredBandwidth is the last bandwidth the study journaled (0: none).
func (st *StoredStudy) MeasuredBandwidth() float64 {
	var gbs float64
	for _, n := range st.Notes {
		if n.Kind != NoteBandwidth {
			continue
		}
		var b struct {
			GBs float64 `json:"gbs"`
		}
		if json.Unmarshal(n.Payload, &b) == nil && b.GBs > 0 {
			gbs = b.GBs
		}
	}
	return gbs
}

// Bandwidth is the plan's given bandwidth, else the last one the study journaled (0: none).
func (l *Loaded) Bandwidth() float64 {
	if b := l.Plan.Bandwidth; b != nil && b.GBs > 0 {
		return b.GBs
	}
	return l.St.MeasuredBandwidth()
}

// BuildResults gathers the rows that count as results: status result, from the final attempt
// of each plan leg. Rows of failed, flagged, interrupted or canary legs never count.
func BuildResults(l *Loaded, models map[string]ModelInfo, bandwidth float64) *Results {
	res := &Results{Plan: l.Plan, Models: models, BandwidthGBs: bandwidth}
	if len(l.Telemetry) > 0 {
		res.Energy = rowEnergy(legEnergies(l))
	}
	if l.Plan.Adaptive != nil {
		st := NewAdaptiveState(l.Plan, l.St.PlanDir, l.Legs, l.Stored, l.Rows)
		res.Finished, res.Rows = st.Finished(), st.ResultRows()
		for leg := range l.Reopened {
			delete(res.Finished, leg)
		}
		return res
	}
	var counting map[string]StoredLeg
	res.Finished, counting = FinalLegs(l.Plan, l.Legs, l.Stored)
	for leg := range l.Reopened {
		delete(res.Finished, leg)
	}
	byNotebookID := map[int64]string{}
	for planLeg, s := range counting {
		byNotebookID[s.ID] = planLeg
	}
	byID := map[string]LegPlan{}
	for _, lp := range l.Legs {
		byID[lp.ID] = lp
	}
	for _, r := range l.Rows {
		planLeg, ok := byNotebookID[r.LegID]
		if !ok || r.Status != string(vocab.RowResult) {
			continue
		}
		res.Rows = append(res.Rows, ResultRow{Leg: planLeg, Ref: RowRef(r.LegID, r.Seq),
			Model: modelOfRow(l.Plan, l.St.PlanDir, byID[planLeg], &r.Result), Result: r.Result})
	}
	return res
}

// modelOfRow names the plan model a row measured: the leg's only model, or (one leg with
// every model) the model whose path llama-bench printed.
func modelOfRow(p *Plan, planDir string, lp LegPlan, r *benchfmt.Result) string {
	if len(lp.Models) == 1 {
		return lp.Models[0]
	}
	for _, m := range p.Models {
		path := ResolvePath(planDir, m.Path)
		if r.ModelFilename == path || filepath.Base(r.ModelFilename) == filepath.Base(path) {
			return m.ID
		}
	}
	return ""
}
