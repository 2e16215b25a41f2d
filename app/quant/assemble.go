package quant

import (
	"fmt"
	"slices"
	"sparkbench/app/energy"
	"strings"

	"sparkbench/app/study"
	"sparkbench/plots"
)

// SchemaResult identifies an assembled ladder (study.json of its receipt).
const SchemaResult = "sparkbench.quant-study/v1"

// Record is what a run recorded of one candidate, raw: the derived file, each speed cell (the
// mean of its llama-bench repetitions, with the leg it came from), the KL divergence with the
// transcript lines its figures were read from, and the peak RSS of its llama-bench legs. The
// candidates table is assembled from these alone.
type Record struct {
	Type       string        `json:"type"`
	KV         *study.KVType `json:"kv,omitempty"` // the KV cache type it ran with (a plan with kv_types)
	Key        string        `json:"cache_key"`
	File       string        `json:"file"`
	SHA256     string        `json:"sha256"`
	Bytes      int64         `json:"bytes"`
	Bits       float64       `json:"bits_per_weight"`
	Reused     bool          `json:"reused"`
	Quantize   []string      `json:"quantize_argv,omitempty"`
	Imatrix    string        `json:"imatrix_sha256,omitempty"` // the importance matrix it was quantized with
	Bench      []BenchCell   `json:"bench"`
	KLD        *KLD          `json:"kld,omitempty"`
	KLDLeg     string        `json:"kld_leg,omitempty"`
	KLDLines   []int         `json:"kld_lines,omitempty"` // transcript lines of mean, p99, max, same top p, PPL ratio
	PeakRSS    int64         `json:"peak_rss_bytes"`
	Projected  *Projection   `json:"projected,omitempty"`  // llama-fit-params at the plan's memory_ctx
	Incomplete []string      `json:"incomplete,omitempty"` // what was not measured, and why
	// MissingLegs are the legs (bench/TYPE/dD, kld/TYPE, quantize/TYPE, memory/TYPE) that
	// ended without the figure the record lacks: the next run measures them. Records written
	// before they were named have Incomplete only.
	MissingLegs []string `json:"missing_legs,omitempty"`
	// Energy is each sampled bench leg's energy (a plan with a telemetry block): its total
	// and each device's power, clock, temperature and throttle counts.
	Energy []LegEnergy `json:"energy,omitempty"`
}

// LegEnergy is one sampled bench leg of a candidate (energy.LegFigures without its rows: the
// bench cells carry their Joules per token).
type LegEnergy struct {
	Leg       string                 `json:"leg"`
	HasEnergy bool                   `json:"has_energy"`
	Seconds   float64                `json:"seconds"`
	EnergyJ   float64                `json:"energy_j"`
	Method    string                 `json:"method"`
	Devices   []energy.DeviceFigures `json:"devices"`
	Samples   int                    `json:"samples"`
}

// Label is the record's candidate name (Arm.Label).
func (r Record) Label() string { return armLabel(r.Type, r.KV) }

// BenchCell is one llama-bench test of a candidate at one depth: the mean and standard
// deviation of its repetitions (t/s), their number, and the leg and row it came from.
type BenchCell struct {
	Test  string  `json:"test"` // pp or tg
	Depth int     `json:"depth"`
	Mean  float64 `json:"mean_ts"`
	SD    float64 `json:"sd_ts"`
	N     int     `json:"n"`
	Leg   string  `json:"leg"`
	Row   int     `json:"row"`
	// JPerToken and TokensPerJ are the row's energy figures (per prompt token for pp, per
	// generated token for tg), when its leg was sampled by an energy-measuring sampler
	// (a plan with a telemetry block; docs/telemetry.md).
	JPerToken  float64 `json:"j_per_token,omitempty"`
	TokensPerJ float64 `json:"tokens_per_j,omitempty"`
}

// Figure is a cell's speed figure name, TEST@DEPTH.
func (b BenchCell) Figure() string { return fmt.Sprintf("%s@%d", b.Test, b.Depth) }

// Result is an assembled ladder: the plan's identity, the candidates table in plan order, and
// what the rule chose.
type Result struct {
	Schema     string      `json:"schema"`
	Name       string      `json:"name"`
	PlanSHA256 string      `json:"plan_sha256"`
	Reference  FileRef     `json:"reference"`
	Rule       Rule        `json:"rule"`
	Imatrix    *Imatrix    `json:"imatrix,omitempty"`    // the plan's importance matrix settings
	MemoryCtx  int         `json:"memory_ctx,omitempty"` // the context the memory projections are at
	Candidates []Candidate `json:"candidates"`
	Records    []Record    `json:"records"`
	Selection  Selection   `json:"selection"`
	// Predictions are the plan's, and Verdicts their answers from this result (none
	// registered: both absent).
	Predictions []Prediction    `json:"predictions,omitempty"`
	Verdicts    []study.Verdict `json:"verdicts,omitempty"`
	// HandOffs are the capacity plans made from this ladder (quant handoff), in the order they
	// were written.
	HandOffs []HandOffRecord `json:"handoffs,omitempty"`
	// Provenance is the build and machine the run measured on (ladders run before it was
	// recorded have none).
	Provenance *Provenance `json:"provenance,omitempty"`
	// CountedFlags: a plan whose CV gate counts (speed.gates.on_cv "count"), each speed row
	// above its gate, counted with its flag (absent otherwise).
	CountedFlags []string `json:"counted_flags,omitempty"`
}

// Provenance is the llama.cpp build (llama-bench --version, --list-devices) and the machine
// a ladder ran on, as the run's fingerprint found them.
type Provenance struct {
	VersionLine string   `json:"version_line"`
	Commit      string   `json:"commit"`
	BuildNumber int      `json:"build_number"`
	Backends    []string `json:"backends"`
	Devices     []string `json:"devices,omitempty"`
	Machine     string   `json:"machine"`
}

// HandOffRecord is a capacity plan a ladder handed off: where it was written, its SHA-256 and
// the candidates it names (the selected one, the runner-up).
type HandOffRecord struct {
	Plan       string   `json:"capacity_plan"`
	SHA256     string   `json:"capacity_plan_sha256"`
	Candidates []string `json:"candidates"`
}

// Selection rules: how Assemble treats a ladder with a candidate not fully measured. A bundle
// carries the rules its derived files were made by (receipt.QuantIndex.Rules), so one written
// before a rule changed still verifies as written.
const (
	// RulesSelectOverIncomplete (bundles written before rules were recorded): the rule ran over
	// whatever was measured, a candidate with a missing figure rejected.
	RulesSelectOverIncomplete = 1
	// RulesIncompleteSelectsNothing: a ladder with a candidate not fully measured selects
	// nothing; that candidate is pending, never rejected.
	RulesIncompleteSelectsNothing = 2
	// RulesCurrent are the rules the notebook and new bundles use.
	RulesCurrent = RulesIncompleteSelectsNothing
)

// Assemble builds the candidates table from the records (one per plan quant; a quant with no
// record is a candidate with nothing measured) and applies the plan's rule (RulesCurrent).
func Assemble(p *Plan, planSHA string, recs []Record) (*Result, error) {
	return AssembleRules(p, planSHA, recs, RulesCurrent)
}

// AssembleRules is Assemble under the given selection rules (a bundle's).
func AssembleRules(p *Plan, planSHA string, recs []Record, rules int) (*Result, error) {
	q := *p
	q.Defaults()
	byType := map[string]Record{}
	labels := q.Labels()
	for _, r := range recs {
		if !slices.Contains(labels, r.Label()) {
			return nil, fmt.Errorf("a record of %s, which the plan does not list (%s)", r.Label(), strings.Join(labels, ", "))
		}
		if _, dup := byType[r.Label()]; dup {
			return nil, fmt.Errorf("two records of %s", r.Label())
		}
		byType[r.Label()] = r
	}
	res := &Result{Schema: SchemaResult, Name: q.Name, PlanSHA256: planSHA, Reference: q.Reference, Rule: q.Rule, Imatrix: q.Imatrix, MemoryCtx: q.MemoryCtx,
		Candidates: []Candidate{}, Records: []Record{}}
	for i, arm := range q.Arms() {
		typ := arm.Label()
		r, ok := byType[typ]
		if !ok {
			r = Record{Type: arm.Quant, KV: arm.KV, Bench: []BenchCell{}, Incomplete: []string{"not run"}}
		}
		c := Candidate{Type: typ, KV: arm.KV, Order: i, FileBytes: r.Bytes, BitsPerWeight: r.Bits, Speed: map[string]float64{}, KLD: r.KLD}
		for _, b := range r.Bench {
			c.Speed[b.Figure()] = b.Mean
			if b.JPerToken > 0 {
				if c.JPerToken == nil {
					c.JPerToken = map[string]float64{}
				}
				c.JPerToken[b.Figure()] = b.JPerToken
			}
		}
		c.Projected = r.Projected
		if q.Memory == MemoryBench && r.PeakRSS > 0 {
			mib := float64(r.PeakRSS) / (1 << 20)
			c.PeakRSSMiB = &mib
		}
		res.Candidates = append(res.Candidates, c)
		res.Records = append(res.Records, r)
	}
	if g := q.Speed.Gates; g.CountsFlagged() {
		res.CountedFlags = countedFlags(g, res.Records)
	}
	var pending []Pending
	for i, r := range res.Records {
		if len(r.Incomplete) > 0 {
			pending = append(pending, Pending{Type: res.Candidates[i].Type, Legs: r.MissingLegs, Why: r.Incomplete})
		}
	}
	if len(pending) > 0 && rules >= RulesIncompleteSelectsNothing {
		res.Selection = selectIncomplete(q.Rule, res.Candidates, pending)
	} else {
		res.Selection = Select(q.Rule, res.Candidates)
	}
	if len(q.Predictions) > 0 {
		res.Predictions, res.Verdicts = q.Predictions, Evaluate(q.Predictions, res)
	}
	return res, nil
}

// countedFlags lists the speed rows a counting CV gate flagged: each counted, with its CV over
// its repetitions and the gate it is above, as the runner judged the row.
func countedFlags(g study.Gates, recs []Record) []string {
	var out []string
	for _, r := range recs {
		for _, b := range r.Bench {
			if b.N < 2 || b.Mean <= 0 {
				continue
			}
			test := b.Test
			if test != "pp" && test != "tg" {
				continue
			}
			if cv, lim := b.SD/b.Mean, g.Limit(test, int64(b.Depth)); cv > lim {
				out = append(out, fmt.Sprintf("%s %s at depth %d (%s row %d): CV %.1f%% above the %.1f%% gate", r.Label(), test, b.Depth, b.Leg, b.Row, 100*cv, 100*lim))
			}
		}
	}
	return out
}

// Chart is the ladder's speed-against-KLD chart: every candidate measured for both, the
// frontier, the selection and the rejections as the result has them.
func Chart(res *Result, meta plots.Meta) plots.ParetoChart {
	c := plots.ParetoChart{Meta: meta, Figure: res.Rule.Maximize, Points: []plots.ParetoPoint{}}
	sel := res.Selection
	for _, cand := range res.Candidates {
		speed, ok := cand.Speed[res.Rule.Maximize]
		if !ok || cand.KLD == nil {
			continue
		}
		c.Points = append(c.Points, plots.ParetoPoint{Label: cand.Type, Speed: speed, KLD: cand.KLD.Mean, FileMiB: cand.FileMiB(),
			Frontier: slices.Contains(sel.Frontier, cand.Type), Selected: cand.Type == sel.Selected,
			Rejected: slices.ContainsFunc(sel.Rejected, func(r Rejection) bool { return r.Type == cand.Type })})
	}
	return c
}
