package quantfmt

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// KLDChunk is one row of the table llama-perplexity --kl-divergence prints as it goes; each
// figure is cumulative over the chunks so far:
//
//	chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p
//	   1     259.9044 ±    8.7026      -0.00351 ±    0.01158       0.00285 ±    0.00002     0.033 ±  0.004 %    100.000 ±  0.000 %
type KLDChunk struct {
	Index      int    `json:"index"`
	PPL        Figure `json:"ppl"`          // PPL(Q)
	LnPPLRatio Figure `json:"ln_ppl_ratio"` // ln(PPL(Q)/PPL(base))
	KLD        Figure `json:"kld"`
	RMSDeltaP  Figure `json:"rms_delta_p_pct"` // percent
	SameTopP   Figure `json:"same_top_p_pct"`  // percent
}

// Percentile is one "99.9%   KLD:" (or Δp) line: At is the percentage in the label. In JSON it
// is the Figure's object with "at" added.
type Percentile struct {
	At float64
	Figure
}

// MarshalJSON writes {"at": 99.9, "value": …, "line": N}.
func (p Percentile) MarshalJSON() ([]byte, error) {
	b, err := p.Figure.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append([]byte(`{"at":`+strconv.FormatFloat(p.At, 'g', -1, 64)+`,`), b[1:]...), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Percentile) UnmarshalJSON(b []byte) error {
	var at struct {
		At float64 `json:"at"`
	}
	if err := json.Unmarshal(b, &at); err != nil {
		return err
	}
	p.At = at.At
	return p.Figure.UnmarshalJSON(b)
}

// KLDStats is the statistics block llama-perplexity --kl-divergence prints at the end (only
// when it scored 100 tokens or more). Field names follow the tool's labels; figures keep its
// units: the Cor, Δp and Same top p figures are percentages, the rest plain numbers. The
// percentile lists hold every "NN.N%" line in the tool's order (build 11669: KLD at 99.9, 99.0,
// 95.0, 90.0, 10.0, 5.0, 1.0, 0.1; Δp at 99.9, 99.0, 95.0, 90.0, 75.0, 25.0, 10.0, 5.0, 1.0, 0.1).
type KLDStats struct {
	// ====== Perplexity statistics ======
	MeanPPLQ       Figure `json:"mean_ppl_q"`        // Mean PPL(Q) ± …
	MeanPPLBase    Figure `json:"mean_ppl_base"`     // Mean PPL(base) ± …
	CorLnPPL       Figure `json:"cor_ln_ppl_pct"`    // Cor(ln(PPL(Q)), ln(PPL(base))), percent
	MeanLnPPLRatio Figure `json:"mean_ln_ppl_ratio"` // Mean ln(PPL(Q)/PPL(base)) ± …
	MeanPPLRatio   Figure `json:"mean_ppl_ratio"`    // Mean PPL(Q)/PPL(base) ± …
	MeanPPLDiff    Figure `json:"mean_ppl_diff"`     // Mean PPL(Q)-PPL(base) ± …
	// ====== KL divergence statistics ======
	MeanKLD        Figure       `json:"mean_kld"` // Mean KLD ± …
	MaxKLD         Figure       `json:"max_kld"`
	MedianKLD      Figure       `json:"median_kld"`
	MinKLD         Figure       `json:"min_kld"`
	KLDPercentiles []Percentile `json:"kld_percentiles"`
	// ====== Token probability statistics ====== (percent)
	MeanDeltaP        Figure       `json:"mean_delta_p_pct"` // Mean Δp ± …
	MaxDeltaP         Figure       `json:"max_delta_p_pct"`
	MedianDeltaP      Figure       `json:"median_delta_p_pct"`
	MinDeltaP         Figure       `json:"min_delta_p_pct"`
	DeltaPPercentiles []Percentile `json:"delta_p_percentiles"`
	RMSDeltaP         Figure       `json:"rms_delta_p_pct"` // RMS Δp ± …
	SameTopP          Figure       `json:"same_top_p_pct"`  // Same top p ± …
}

// statField names a named field, its label (spaces collapsed) and whether the tool prints a ±.
type statField struct {
	label string
	pm    bool
	get   func(*KLDStats) *Figure
}

var statFields = []statField{
	{"Mean PPL(Q)", true, func(s *KLDStats) *Figure { return &s.MeanPPLQ }},
	{"Mean PPL(base)", true, func(s *KLDStats) *Figure { return &s.MeanPPLBase }},
	{"Cor(ln(PPL(Q)), ln(PPL(base)))", false, func(s *KLDStats) *Figure { return &s.CorLnPPL }},
	{"Mean ln(PPL(Q)/PPL(base))", true, func(s *KLDStats) *Figure { return &s.MeanLnPPLRatio }},
	{"Mean PPL(Q)/PPL(base)", true, func(s *KLDStats) *Figure { return &s.MeanPPLRatio }},
	{"Mean PPL(Q)-PPL(base)", true, func(s *KLDStats) *Figure { return &s.MeanPPLDiff }},
	{"Mean KLD", true, func(s *KLDStats) *Figure { return &s.MeanKLD }},
	{"Maximum KLD", false, func(s *KLDStats) *Figure { return &s.MaxKLD }},
	{"Median KLD", false, func(s *KLDStats) *Figure { return &s.MedianKLD }},
	{"Minimum KLD", false, func(s *KLDStats) *Figure { return &s.MinKLD }},
	{"Mean Δp", true, func(s *KLDStats) *Figure { return &s.MeanDeltaP }},
	{"Maximum Δp", false, func(s *KLDStats) *Figure { return &s.MaxDeltaP }},
	{"Median Δp", false, func(s *KLDStats) *Figure { return &s.MedianDeltaP }},
	{"Minimum Δp", false, func(s *KLDStats) *Figure { return &s.MinDeltaP }},
	{"RMS Δp", true, func(s *KLDStats) *Figure { return &s.RMSDeltaP }},
	{"Same top p", true, func(s *KLDStats) *Figure { return &s.SameTopP }},
}

// StatLabels are the labels of KLDStats's named fields, as the tool prints them (spaces
// collapsed), in its order.
func StatLabels() []string {
	out := make([]string, len(statFields))
	for i, f := range statFields {
		out[i] = f.label
	}
	return out
}

// Missing names the labels of the named fields the block did not give (none when complete).
func (s *KLDStats) Missing() []string {
	var out []string
	for _, f := range statFields {
		if fig := f.get(s); fig.Line == 0 || (f.pm && !fig.HasPM) {
			out = append(out, f.label)
		}
	}
	return out
}

// KLDPercentile returns the "at%   KLD" figure (99.9, 99.0 … 0.1; 100 the maximum, 50 the
// median, 0 the minimum) when the block gave it.
func (s *KLDStats) KLDPercentile(at float64) (Figure, bool) {
	return percentileOf(s.KLDPercentiles, at, s.MaxKLD, s.MedianKLD, s.MinKLD)
}

// DeltaPPercentile is KLDPercentile for the Δp lines (percent).
func (s *KLDStats) DeltaPPercentile(at float64) (Figure, bool) {
	return percentileOf(s.DeltaPPercentiles, at, s.MaxDeltaP, s.MedianDeltaP, s.MinDeltaP)
}

func percentileOf(ps []Percentile, at float64, maxF, median, minF Figure) (Figure, bool) {
	switch at {
	case 100:
		return maxF, maxF.Line > 0
	case 50:
		return median, median.Line > 0
	case 0:
		return minF, minF.Line > 0
	}
	for _, p := range ps {
		if p.At == at {
			return p.Figure, true
		}
	}
	return Figure{}, false
}

var (
	statValueRE   = regexp.MustCompile(`^\s*(` + numPat + `)\s*%?\s*(?:±\s*(` + numPat + `)\s*%?)?\s*$`)
	percentileRE  = regexp.MustCompile(`^(\d+(?:\.\d+)?)% (KLD|Δp)$`)
	kldRowRE      = regexp.MustCompile(`^\s*(\d+)` + strings.Repeat(`\s+(`+numPat+`)\s*±\s*(`+numPat+`)\s*%?`, 5) + `\s*$`)
	kldHeaderRE   = regexp.MustCompile(`^\s*chunk\s+PPL\s+ln\(PPL\(Q\)/PPL\(base\)\)`)
	statSectionRE = regexp.MustCompile(`^=+ (Perplexity|KL divergence|Token probability) statistics =+$`)
)

// statLine reads one "label: value [± value]" line of the statistics block into s; false
// when it is not one.
func (s *KLDStats) statLine(n int, t string) bool {
	label, value, ok := strings.Cut(t, ":")
	if !ok {
		return false
	}
	label = strings.Join(strings.Fields(label), " ")
	m := statValueRE.FindStringSubmatch(value)
	if m == nil {
		return false
	}
	v, ok := parseNum(m[1])
	if !ok {
		return false
	}
	fig := Figure{Value: v, Line: n}
	if m[2] != "" {
		if pm, ok := parseNum(m[2]); ok {
			fig.PM, fig.HasPM = pm, true
		}
	}
	for _, f := range statFields {
		if f.label == label {
			*f.get(s) = fig
			return true
		}
	}
	if pm := percentileRE.FindStringSubmatch(label); pm != nil {
		at, err := strconv.ParseFloat(pm[1], 64)
		if err != nil {
			return false
		}
		dst := &s.KLDPercentiles
		if pm[2] == "Δp" {
			dst = &s.DeltaPPercentiles
		}
		if len(*dst) < maxLines {
			*dst = append(*dst, Percentile{At: at, Figure: fig})
		}
		return true
	}
	return false
}

// kldRow reads one chunk row of the --kl-divergence table.
func kldRow(n int, t string) (KLDChunk, bool) {
	m := kldRowRE.FindStringSubmatch(t)
	if m == nil {
		return KLDChunk{}, false
	}
	figs := make([]Figure, 5)
	for i := range figs {
		v, ok1 := parseNum(m[2+2*i])
		pm, ok2 := parseNum(m[3+2*i])
		if !ok1 || !ok2 {
			return KLDChunk{}, false
		}
		figs[i] = Figure{Value: v, PM: pm, HasPM: true, Line: n}
	}
	idx := atoi(m[1])
	if idx < 0 {
		return KLDChunk{}, false
	}
	return KLDChunk{Index: idx, PPL: figs[0], LnPPLRatio: figs[1], KLD: figs[2], RMSDeltaP: figs[3], SameTopP: figs[4]}, true
}
