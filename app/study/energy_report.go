package study

import (
	"context"
	"fmt"
	"sort"

	"sparkbench/app/energy"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/telemetry"
)

// Energy in a study's report (docs/telemetry.md): per leg the telemetry samples turned into
// energy.Leg figures, and per result row (a cell) its Joules per token. A study without
// samples has none, and its report is what it was before telemetry existed.

// TelemetryReader is what a RecordReader has when it holds telemetry samples (the notebook's
// StudyRecorder, a bundle's raw files): a leg's samples, marks included, in the order added.
type TelemetryReader interface {
	Telemetry(ctx context.Context, legID int64) ([]telemetry.Sample, error)
}

// ReportEnergy is the energy of a study's sampled legs and of its result cells.
type ReportEnergy struct {
	Legs  []EnergyLeg  `json:"legs"`
	Cells []EnergyCell `json:"cells"`
}

// EnergyLeg is one sampled leg's figures (energy.LegFigures: energy with its method, devices
// with average and peak power, clock and temperature ranges and throttle counts, rows).
type EnergyLeg struct {
	LegID  int64  `json:"leg_id"`
	Label  string `json:"label"`
	Counts bool   `json:"counts"` // its result rows are the study's results for its plan leg
	// HasEnergy is false when no sampler measured energy (only temperatures, clocks, load).
	HasEnergy bool `json:"has_energy"`
	energy.LegFigures
}

// EnergyCell is a result row's energy: Joules per prompt token (pp), per generated token (tg)
// or per token of both (pg), its inverse and the mean power of the row's window.
type EnergyCell struct {
	Model      string  `json:"model"`
	Leg        string  `json:"leg"`
	Test       string  `json:"test"`
	Depth      int64   `json:"depth"`
	Config     string  `json:"config,omitempty"`
	Kind       string  `json:"kind"`
	JPerToken  float64 `json:"j_per_token"`
	TokensPerJ float64 `json:"tokens_per_j"`
	MeanW      float64 `json:"mean_w"`
	Source     string  `json:"source"`
}

// loadTelemetry reads every stored leg's samples when rec holds them; legs without are left out.
func loadTelemetry(ctx context.Context, rec RecordReader, legs []StoredLeg) (map[int64][]telemetry.Sample, error) {
	tr, ok := rec.(TelemetryReader)
	if !ok {
		return nil, nil
	}
	var out map[int64][]telemetry.Sample
	for _, l := range legs {
		s, err := tr.Telemetry(ctx, l.ID)
		if err != nil {
			return nil, err
		}
		if len(s) > 0 {
			if out == nil {
				out = map[int64][]telemetry.Sample{}
			}
			out[l.ID] = s
		}
	}
	return out, nil
}

// LegEnergy computes a sampled leg's figures from its samples and its rows (seq order): the
// window runs from the sampler's start to the leg's end mark (the last sample's time when the
// leg has none), each row split at its mark.
func LegEnergy(samples []telemetry.Sample, rows []benchfmt.Result) (energy.LegFigures, bool) {
	marks, end, ok := energy.Marks(samples)
	if !ok {
		for _, s := range samples {
			end = max(end, s.T)
		}
	}
	return energy.Leg(samples, energy.Window{To: end}, energy.RowsFrom(rows, marks))
}

// legEnergies computes every sampled leg's figures, by notebook leg ID.
func legEnergies(l *Loaded) map[int64]EnergyLeg {
	if len(l.Telemetry) == 0 {
		return nil
	}
	rows := map[int64][]benchfmt.Result{}
	for _, r := range l.Rows {
		if int64(len(rows[r.LegID])) == r.Seq {
			rows[r.LegID] = append(rows[r.LegID], r.Result)
		}
	}
	out := map[int64]EnergyLeg{}
	for _, s := range l.Stored {
		samples, ok := l.Telemetry[s.ID]
		if !ok {
			continue
		}
		f, has := LegEnergy(samples, rows[s.ID])
		out[s.ID] = EnergyLeg{LegID: s.ID, Label: s.Label, HasEnergy: has, LegFigures: f}
	}
	return out
}

// rowEnergy is each row's energy figure by its RowRef.
func rowEnergy(legs map[int64]EnergyLeg) map[string]energy.RowFigures {
	out := map[string]energy.RowFigures{}
	for id, el := range legs {
		for _, r := range el.Rows {
			out[RowRef(id, int64(r.Seq))] = r
		}
	}
	return out
}

// energyReport is the report's energy section (nil when no leg was sampled).
func energyReport(l *Loaded, legs []ReportLeg, res *Results) *ReportEnergy {
	byID := legEnergies(l)
	if len(byID) == 0 {
		return nil
	}
	re := &ReportEnergy{Legs: []EnergyLeg{}, Cells: []EnergyCell{}}
	for _, rl := range legs {
		if el, ok := byID[rl.ID]; ok && rl.ID != 0 {
			el.Counts = rl.Counts
			re.Legs = append(re.Legs, el)
		}
	}
	for _, c := range reportCells(l.Plan, res) {
		f, ok := res.Energy[c.Source]
		if !ok {
			continue
		}
		re.Cells = append(re.Cells, EnergyCell{Model: c.Model, Leg: c.Leg, Test: c.Test, Depth: c.Depth, Config: c.Config,
			Kind: f.Kind, JPerToken: f.JPerToken, TokensPerJ: f.TokensPerJ, MeanW: f.MeanW, Source: c.Source})
	}
	return re
}

// resolveEnergy is a cell's Joules per token (FigureJPerToken) or tokens per Joule.
func (res *Results) resolveEnergy(s Selector, legs []LegPlan) (Value, error) {
	r, err := res.cell(s, *s.Depth, legsOf(legs, s.Model, *s.Depth, false))
	if err != nil {
		return Value{}, err
	}
	f, ok := res.Energy[r.Ref]
	if !ok || f.JPerToken <= 0 {
		return Value{}, fmt.Errorf("%s has no energy figure (its leg was not sampled, or no sampler measured energy): %w", r.Ref, ErrUnresolvable)
	}
	detail := fmt.Sprintf("%.4g J/token, %.4g tokens/J at %.1f W mean", f.JPerToken, f.TokensPerJ, f.MeanW)
	if s.Figure == FigureTokensPerJ {
		return Value{X: f.TokensPerJ, Detail: detail, Sources: []string{r.Ref}}, nil
	}
	return Value{X: f.JPerToken, Detail: detail, Sources: []string{r.Ref}}, nil
}

// EnergySamplers lists the sources that read during the sampled legs, each with how its
// energy was measured (counter, integrated, or "" for readings without energy), sorted.
func (re *ReportEnergy) EnergySamplers() []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range re.Legs {
		for _, d := range l.Devices {
			k := d.Source
			if d.Method != "" {
				k += " (" + d.Method + ")"
			}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
