package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sparkbench/app/study"
)

// Report is `capacity show`: a registered study as the notebook records it.
type Report struct {
	Study    ReportStudy      `json:"study"`
	Legs     []StoredLeg      `json:"legs"`
	Run      *AssembledStudy  `json:"assembled"` // nil: no assembled result journaled
	Trusted  bool             `json:"trusted"`   // study.json was read and matches the journal
	Problem  string           `json:"problem"`   // why it is not trusted (Run.Problem)
	Selected []SelectedPoint  `json:"selected"`  // from the journal (always)
	Envelope []EnvelopeReport `json:"envelope"`  // from a trusted study.json only
	// Units says what the envelope's figures are over (UnitsLine): the passes, each one server
	// lifetime, the unit of replication. Empty without an envelope.
	Units    string          `json:"units,omitempty"`
	Verdicts []ReportVerdict `json:"verdicts"`   // journaled computed verdicts, plan order
	Pending  []string        `json:"unanswered"` // predictions without a journaled verdict
	// KVQuality: each KV arm's KL divergence from an f16 cache beside the speed its cache type
	// bought (AttachKVQuality; none: the plan has no KV arm or nothing was checked yet);
	// KVUnchecked the arms without a check; KVLegs the check's llama-perplexity legs.
	KVQuality   []KVQuality `json:"kv_quality,omitempty"`
	KVUnchecked []string    `json:"kv_unchecked,omitempty"`
	KVLegs      []StoredLeg `json:"kv_legs,omitempty"`
	// NetworkTax and RPCSplits: plans with rpc_servers, from a trusted study.json only
	// (docs/capacity.md "RPC topologies").
	NetworkTax []NetworkTax `json:"network_tax,omitempty"`
	RPCSplits  []RPCSplit   `json:"rpc_splits,omitempty"`
	// Serving and HarnessFloor: a serving plan's open-loop results, from a trusted study.json
	// only: every probe of every server lifetime, the max-rate search's outcome, the knee the
	// sustain rule found, and the client's own floor (docs/serving.md). Absent for a
	// closed-loop plan.
	Serving      []ServingReport `json:"serving,omitempty"`
	HarnessFloor *HarnessFloor   `json:"harness_floor,omitempty"`
}

// ServingReport is one server lifetime's open-loop probes, with its candidate.
type ServingReport struct {
	Candidate string `json:"candidate"`
	ServingResult
	// Unit is the schedule's rate unit: req/s, or conversations/s for multi_turn.
	Unit string `json:"rate_unit"`
}

// ReportStudy is the study's header.
type ReportStudy struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	PlanSHA256 string `json:"plan_sha256"`
	LastHalt   string `json:"last_halt,omitempty"`
}

// EnvelopeReport is one candidate's cells with their gate outcome.
type EnvelopeReport struct {
	Candidate string         `json:"candidate"`
	Label     string         `json:"label"`
	Arm       string         `json:"arm,omitempty"`
	Base      PointRef       `json:"base"`
	Selected  *Selection     `json:"selected"`
	Note      string         `json:"selection_note,omitempty"`
	Cells     []EnvelopeCell `json:"cells"`
	// ServerTax is the candidate's server tax (only when the study was given a
	// llama-batched-bench file for it).
	ServerTax *ServerTaxResult `json:"server_tax,omitempty"`
}

// EnvelopeCell is one (P, C) cell: reported figures, PASS/FAIL and the failure codes.
type EnvelopeCell struct {
	Slots          int      `json:"slots"`
	Clients        int      `json:"clients"`
	GenerationRate *float64 `json:"generation_rate"`
	TTFTMsP95      *float64 `json:"ttft_ms_p95"`
	E2EMsP95       *float64 `json:"e2e_ms_p95"`
	PeakRSSMiB     float64  `json:"peak_rss_mib"`
	Passed         bool     `json:"passed"`
	Failures       []string `json:"failures"`
	// Passes is how many passes the cell's medians are over (each one server lifetime).
	Passes int `json:"passes"`
	// JPerGeneratedToken is the cell's median J per generated token (sampled cells only).
	JPerGeneratedToken *float64 `json:"j_per_generated_token,omitempty"`
}

// UnitsLine says what a capacity cell's figures are over, from its passes: "each figure is the
// median over the cell's 2 passes (forward, reverse), each pass one server lifetime: the unit
// of replication; latency percentiles are each pass's own, never pooled across passes; a
// spread is (max − min) / median over the passes".
func UnitsLine(passes []PassMetrics) string {
	var names []string
	for _, p := range passes {
		names = append(names, p.Pass)
	}
	return fmt.Sprintf("each figure is the median over the cell's %d pass(es) (%s), each pass one server lifetime: the unit of replication; "+
		"latency percentiles are each pass's own, never pooled across passes; a spread is (max − min) / median over the passes", len(passes), strings.Join(names, ", "))
}

// ReportVerdict is a journaled computed verdict.
type ReportVerdict struct {
	Prediction string    `json:"prediction"`
	Outcome    string    `json:"outcome"`
	Observed   *float64  `json:"observed"`
	Detail     string    `json:"detail"`
	At         time.Time `json:"at"`
}

// Show reads study id back: legs, the journaled assembled result (study.json checked against
// its journaled SHA-256; a mismatch is reported in Problem, never trusted), the envelope per
// candidate and the journaled verdicts.
func Show(ctx context.Context, rec Recorder, id int64) (*Report, error) {
	st, err := rec.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	rep := &Report{Study: ReportStudy{ID: st.ID, Name: st.Name, Kind: st.Kind, Status: st.Status, PlanSHA256: st.PlanSHA256},
		Selected: []SelectedPoint{}, Envelope: []EnvelopeReport{}, Verdicts: []ReportVerdict{}, Pending: []string{}}
	if n, ok := LatestNote(st.Notes, NoteHalted); ok {
		var h struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(n.Payload, &h)
		rep.Study.LastHalt = h.Reason
	}
	legs, err := rec.Legs(ctx, id)
	if err != nil {
		return nil, err
	}
	rep.Legs = []StoredLeg{}
	for _, l := range legs {
		if strings.HasPrefix(l.Label, study.KVLegPrefix) {
			rep.KVLegs = append(rep.KVLegs, l) // the KV cache quality check's, not a server lifetime
			continue
		}
		rep.Legs = append(rep.Legs, l)
	}
	a, err := loadAssembled(st)
	switch {
	case errors.Is(err, ErrNotAssembled):
	case err != nil:
		return nil, err
	default:
		rep.Run, rep.Problem, rep.Trusted = a, a.Problem, a.Result != nil
		rep.Selected = a.Note.Selected
		if a.Result != nil {
			for _, c := range a.Result.Candidates {
				er := EnvelopeReport{Candidate: c.ID, Label: c.Label, Arm: c.Arm, Base: c.Base, Selected: c.Selected,
					Note: c.SelectionNote, Cells: []EnvelopeCell{}, ServerTax: c.ServerTax}
				for _, cell := range c.Cells {
					f := cell.Failures
					if f == nil {
						f = []string{}
					}
					er.Cells = append(er.Cells, EnvelopeCell{Slots: cell.Slots, Clients: cell.Clients, GenerationRate: cell.GenerationRate,
						TTFTMsP95: cell.TTFTMsP95, E2EMsP95: cell.E2EMsP95, PeakRSSMiB: cell.PeakRSSMiB, Passed: cell.Passed, Failures: f,
						JPerGeneratedToken: cell.JPerGeneratedToken, Passes: len(cell.Passes)})
					if rep.Units == "" {
						rep.Units = UnitsLine(cell.Passes)
					}
				}
				rep.Envelope = append(rep.Envelope, er)
			}
			rep.NetworkTax, rep.RPCSplits = a.Result.NetworkTax, RPCSplits(a.Result)
			rep.Serving, rep.HarnessFloor = servingReports(a.Result), a.Result.HarnessFloor
		}
	}
	p, err := Decode("registered plan", st.PlanJSON)
	if err != nil {
		return nil, err
	}
	for _, pr := range p.Predictions {
		v, ok := st.Verdicts[pr.ID]
		if !ok {
			rep.Pending = append(rep.Pending, pr.ID)
			continue
		}
		rv := ReportVerdict{Prediction: pr.ID, Outcome: v.Outcome, Observed: v.Observed, At: v.At}
		var d struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(v.Detail, &d)
		rv.Detail = d.Detail
		rep.Verdicts = append(rep.Verdicts, rv)
	}
	return rep, nil
}

// servingReports lists a serving study's lifetimes in candidate order (nil: a closed-loop plan).
func servingReports(r *Result) []ServingReport {
	if r.Plan == nil || r.Plan.Serving == nil {
		return nil
	}
	unit := r.Plan.Serving.RateUnit()
	out := []ServingReport{}
	for _, c := range r.Candidates {
		for _, sv := range c.Serving {
			out = append(out, ServingReport{Candidate: c.ID, ServingResult: sv, Unit: unit})
		}
	}
	return out
}
