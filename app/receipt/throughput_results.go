package receipt

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/vocab"
)

// bundleRecorder is study.RecordReader over a bundle's parsed raw files: a receipt is computed
// by the same Show the notebook's study uses, and nothing can be written through it.
type bundleRecorder struct{ tb *throughputBundle }

func (r bundleRecorder) Study(_ context.Context, id int64) (study.StoredStudy, error) {
	if id != r.tb.st.ID {
		return study.StoredStudy{}, fmt.Errorf("the bundle holds study %d, not %d", r.tb.st.ID, id)
	}
	st := r.tb.st
	// Show reads the plan's model paths; relative base names keep it inside the unreachable
	// plan folder (see storedStudy).
	p, err := study.Decode(FilePlan, st.PlanJSON)
	if err != nil {
		return st, err
	}
	for i := range p.Models {
		p.Models[i].Path = filepath.Base(p.Models[i].Path)
	}
	if st.PlanJSON, err = json.Marshal(p); err != nil {
		return st, err
	}
	return st, nil
}

func (r bundleRecorder) Legs(context.Context, int64) ([]study.StoredLeg, error) {
	out := make([]study.StoredLeg, 0, len(r.tb.legs))
	for _, lf := range r.tb.legs {
		l := lf.rec
		sl := study.StoredLeg{ID: l.ID, Label: l.Label, Kind: l.Kind, PlanLeg: l.PlanLeg, Role: l.Role, Attempt: l.Attempt,
			State: l.State, Class: l.Class, Reason: l.Reason, ExitCode: l.ExitCode, Signal: l.Signal, Argv: l.Argv,
			Conditions: l.Conditions, PeakRSS: l.PeakRSSBytes, Rows: len(lf.rows)}
		var err error
		if sl.StartedAt, err = time.Parse(time.RFC3339Nano, l.StartedAt); err != nil {
			return nil, fmt.Errorf("%s/%s: started_at: %w", lf.dir, LegFile, err)
		}
		if l.EndedAt != "" {
			if sl.EndedAt, err = time.Parse(time.RFC3339Nano, l.EndedAt); err != nil {
				return nil, fmt.Errorf("%s/%s: ended_at: %w", lf.dir, LegFile, err)
			}
		}
		for _, s := range lf.statuses {
			switch s {
			case "result":
				sl.Results++
			case "flagged":
				sl.Flagged++
			case "discarded":
				sl.Discarded++
			default:
				sl.Unmarked++
			}
		}
		out = append(out, sl)
	}
	return out, nil
}

func (r bundleRecorder) Rows(context.Context, int64) ([]study.StoredRow, error) {
	var out []study.StoredRow
	for _, lf := range r.tb.legs {
		out = append(out, lf.rows...)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].LegID != out[b].LegID {
			return out[a].LegID < out[b].LegID
		}
		return out[a].Seq < out[b].Seq
	})
	return out, nil
}

var _ study.RecordReader = bundleRecorder{}

// Report is the study's report (what `study show --json` prints) computed from the bundle's
// raw files alone.
func (tb *throughputBundle) report() (*study.Report, error) {
	rep, err := study.Show(context.Background(), bundleRecorder{tb}, tb.nb.StudyID)
	if err != nil {
		return nil, err
	}
	rep.Study.PlanDir = ""
	if err := tb.fixModelFigures(rep); err != nil {
		return nil, err
	}
	var checks []study.KVCheck
	for _, j := range tb.journal {
		if j.Kind != study.EntryKVKLD || j.StudyID() != tb.nb.StudyID {
			continue
		}
		var c study.KVCheck
		if err := payloadOf(j, &c); err != nil {
			return nil, err
		}
		checks = append(checks, c)
	}
	var gate *study.KVQualityGate
	if p, err := study.Decode(FilePlan, tb.planJSON); err == nil {
		gate = p.KVQuality
	}
	study.AttachKVQuality(rep, study.KVQualityOf(study.LatestKVChecks(checks)), gate)
	return rep, nil
}

// fixModelFigures recomputes the figures that read model headers (ceilings and efficiency),
// and the verdicts of predictions about them, from the GGUF headers in the bundle: study.Show
// reads them from the model files, which a bundle does not carry.
func (tb *throughputBundle) fixModelFigures(rep *study.Report) error {
	if rep.BandwidthGBs == nil {
		return nil
	}
	needs := func(s *study.Selector) bool {
		return s != nil && (s.Figure == study.FigureCeiling || s.Figure == study.FigureEfficiency)
	}
	res, preds, err := tb.results(*rep.BandwidthGBs)
	if err != nil {
		return err
	}
	for i := range rep.Figures {
		f := &rep.Figures[i]
		if !needs(&f.Selector) {
			continue
		}
		v, err := res.Resolve(f.Selector)
		f.Sources, f.Detail, f.Problem, f.Value = v.Sources, v.Detail, "", nil
		if f.Sources == nil {
			f.Sources = []string{}
		}
		if err != nil {
			f.Problem = err.Error()
		} else if !math.IsInf(v.X, 0) && !math.IsNaN(v.X) {
			x := v.X
			f.Value = &x
		}
	}
	devAfter := map[string][]study.Prediction{}
	for _, d := range rep.Deviations {
		var det struct {
			Kind   string                `json:"kind"`
			Change study.AmendmentChange `json:"change"`
		}
		if json.Unmarshal(d.Detail, &det) == nil && det.Kind == "prediction_change" {
			devAfter[det.Change.Prediction] = append(devAfter[det.Change.Prediction], det.Change.After)
		}
	}
	for i := range rep.Scoreboard {
		sc := &rep.Scoreboard[i]
		p, ok := preds[sc.Prediction]
		if ok && (needs(&p.About) || needs(p.Than)) {
			v := res.Evaluate(p)
			if v.Sources == nil {
				v.Sources = []string{}
			}
			sc.Verdict, sc.Word = v, v.Word()
		}
		for j := range sc.Deviations {
			if j < len(devAfter[sc.Prediction]) {
				after := devAfter[sc.Prediction][j]
				if needs(&after.About) || needs(after.Than) {
					v := res.Evaluate(after)
					sc.Deviations[j].Verdict, sc.Deviations[j].Word = v, "DEVIATION: "+v.Word()
				}
			}
		}
	}
	return nil
}

// results gathers the study's result rows as the engine does (status result, from the final
// finished attempt of each plan leg) with the bundle's model headers, and the predictions with
// accepted amendments applied.
func (tb *throughputBundle) results(bandwidth float64) (*study.Results, map[string]study.Prediction, error) {
	legs, err := study.Expand(tb.plan, "")
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]study.LegPlan{}
	for _, lp := range legs {
		byID[lp.ID] = lp
	}
	res := &study.Results{Plan: tb.plan, Finished: map[string]bool{}, Models: map[string]study.ModelInfo{}, BandwidthGBs: bandwidth}
	for id, h := range tb.headers {
		res.Models[id] = study.ModelInfo{Path: id, ContextLength: h.ContextLength, Header: h}
	}
	order := make([]int, len(tb.legs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return tb.legs[order[a]].rec.StartedAt < tb.legs[order[b]].rec.StartedAt })
	stored := make([]study.StoredLeg, len(order))
	index := map[int64]int{} // notebook leg id → index into tb.legs
	for k, i := range order {
		r := tb.legs[i].rec
		stored[k] = study.StoredLeg{ID: r.ID, Label: r.Label, PlanLeg: r.PlanLeg, Role: r.Role, Attempt: r.Attempt, State: r.State, Class: r.Class,
			Rows: len(tb.legs[i].rows), Results: resultRows(tb.legs[i].statuses)}
		index[r.ID] = i
	}
	if tb.plan.Adaptive != nil { // the engine's reading of adaptive chunks (study.BuildResults)
		for k, i := range order {
			stored[k].Argv = tb.legs[i].rec.Argv
		}
		var all []study.StoredRow
		for _, i := range order {
			all = append(all, tb.legs[i].rows...)
		}
		st := study.NewAdaptiveState(tb.plan, "", legs, stored, all)
		res.Finished, res.Rows = st.Finished(), st.ResultRows()
		preds, err := tb.predictions()
		return res, preds, err
	}
	// The engine's reading of the legs: final plan legs, and the attempt whose rows count.
	finished, counting := study.FinalLegs(tb.plan, legs, stored)
	res.Finished = finished
	final := map[string]int{} // plan leg → index into tb.legs
	planLegs := make([]string, 0, len(counting))
	for pl, s := range counting {
		final[pl] = index[s.ID]
		planLegs = append(planLegs, pl)
	}
	sort.Slice(planLegs, func(a, b int) bool { return tb.legs[final[planLegs[a]]].rec.ID < tb.legs[final[planLegs[b]]].rec.ID })
	for _, pl := range planLegs {
		lf := tb.legs[final[pl]]
		for _, row := range lf.rows {
			if row.Status != string(vocab.RowResult) {
				continue
			}
			res.Rows = append(res.Rows, study.ResultRow{Leg: pl, Ref: study.RowRef(row.LegID, row.Seq),
				Model: modelOfRow(tb.plan, byID[pl], &row.Result), Result: row.Result})
		}
	}
	preds, err := tb.predictions()
	return res, preds, err
}

// predictions are the plan's predictions with accepted amendments applied.
func (tb *throughputBundle) predictions() (map[string]study.Prediction, error) {
	preds := map[string]study.Prediction{}
	for _, p := range tb.plan.Predictions {
		preds[p.ID] = p
	}
	for _, a := range tb.st.Amendments {
		key, ok := strings.CutPrefix(a.Target, "prediction:")
		if !ok {
			continue
		}
		var ch study.AmendmentChange
		if err := json.Unmarshal(a.Change, &ch); err != nil {
			return nil, fmt.Errorf("amendment of %s: %w", key, err)
		}
		preds[key] = ch.After
	}
	return preds, nil
}

func modelOfRow(p *study.Plan, lp study.LegPlan, r *benchfmt.Result) string {
	if len(lp.Models) == 1 {
		return lp.Models[0]
	}
	for _, m := range p.Models {
		if filepath.Base(r.ModelFilename) == filepath.Base(m.Path) {
			return m.ID
		}
	}
	return ""
}

// resultRows counts the rows marked result: a flagged attempt has results only for those
// (study.HasResults).
func resultRows(statuses []string) int {
	n := 0
	for _, st := range statuses {
		if st == string(vocab.RowResult) {
			n++
		}
	}
	return n
}
