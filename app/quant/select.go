package quant

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/study"
)

// Candidate is one row of the candidates table: a quant type and what was measured of it.
// A nil figure was not measured.
type Candidate struct {
	// Type is the candidate's name: the quant type, with its KV cache type when the plan lists
	// any (Arm.Label).
	Type string        `json:"type"`
	KV   *study.KVType `json:"kv,omitempty"`
	// Order is its place in the plan's candidates (0-based): the tie-break's last word.
	Order         int     `json:"order"`
	FileBytes     int64   `json:"file_bytes"`
	BitsPerWeight float64 `json:"bits_per_weight,omitempty"`
	// Speed is t/s by figure (TEST@DEPTH, e.g. "tg@512": the mean of its repetitions).
	Speed      map[string]float64 `json:"speed"`
	KLD        *KLD               `json:"kld,omitempty"`
	PeakRSSMiB *float64           `json:"peak_rss_mib,omitempty"`
	// Projected is llama-fit-params's memory projection at the plan's memory_ctx.
	Projected *Projection `json:"projected,omitempty"`
	// JPerToken is Joules per token by speed figure (per prompt token for pp, per generated
	// token for tg), for the figures whose legs an energy-measuring sampler read.
	JPerToken map[string]float64 `json:"j_per_token,omitempty"`
}

// Projection is the memory llama-fit-params projects a candidate to use: MiB of device
// memory (Of "device") or, on a CPU-only build, of host memory (Of "host"), and the line it
// was read from.
type Projection struct {
	MiB  int    `json:"mib"`
	Of   string `json:"of"`
	Line string `json:"line"`
}

// KLD is a candidate's quality against the reference: llama-perplexity --kl-divergence.
type KLD struct {
	Mean     float64 `json:"mean"`
	P99      float64 `json:"p99"`
	Max      float64 `json:"max"`
	SameTopP float64 `json:"same_top_p"` // a fraction
	PPLRatio float64 `json:"ppl_ratio"`  // Mean PPL(Q)/PPL(base)
}

// FileMiB is the file's size in MiB.
func (c Candidate) FileMiB() float64 { return float64(c.FileBytes) / (1 << 20) }

// Failure codes of a rejected candidate.
const (
	FailSpeedMissing     = "speed_missing"
	FailKLDMissing       = "kld_missing"
	FailMemoryMissing    = "peak_rss_missing"
	FailKLDMean          = "kld_mean_above_maximum"
	FailKLDP99           = "kld_p99_above_maximum"
	FailSameTopP         = "same_top_p_below_minimum"
	FailPPLRatio         = "ppl_ratio_above_maximum"
	FailFileSize         = "file_size_above_maximum"
	FailPeakRSS          = "peak_rss_above_maximum"
	FailProjectedMissing = "projected_memory_missing"
	FailProjected        = "projected_memory_above_maximum"
)

// Rejection is a candidate the limits ruled out, with every limit it failed.
type Rejection struct {
	Type  string   `json:"type"`
	Codes []string `json:"codes"`
}

// Selection is what the rule chose: the selected candidate and the runner-up (the rule applied
// again without the selected one; "" when none passes), why, the candidates ruled out, and the
// speed-versus-KLD Pareto frontier (candidates no other beats on both).
//
// A ladder with a candidate not fully measured (its record names what is missing) is
// Incomplete: it selects nothing, and that candidate is Pending (never rejected: a figure
// missing because its legs have not run, or ended without results, rules nothing out); a
// later run measures it.
type Selection struct {
	Selected  string              `json:"selected"`
	RunnerUp  string              `json:"runner_up"`
	Why       string              `json:"why"`
	Rejected  []Rejection         `json:"rejected"`
	Frontier  []string            `json:"frontier"`
	Dominated map[string][]string `json:"dominated"` // candidate -> the candidates that dominate it
	// Incomplete says the ladder selected nothing because Pending is not empty (both absent
	// on a complete ladder).
	Incomplete bool      `json:"incomplete,omitempty"`
	Pending    []Pending `json:"pending,omitempty"`
}

// Pending is a candidate the ladder has not fully measured: the legs it is missing (none named
// in records written before they were) and what was not measured, and why.
type Pending struct {
	Type string   `json:"type"`
	Legs []string `json:"legs,omitempty"`
	Why  []string `json:"why"`
}

// MissingLegs are the legs every pending candidate is missing, in candidate order.
func (s Selection) MissingLegs() []string {
	var out []string
	for _, p := range s.Pending {
		out = append(out, p.Legs...)
	}
	return out
}

// Missing says what an incomplete ladder lacks in one line: the missing legs or, for records
// written before they were named, the candidates and why.
func (s Selection) Missing() string {
	if legs := s.MissingLegs(); len(legs) > 0 {
		return "missing legs: " + strings.Join(legs, ", ")
	}
	var parts []string
	for _, p := range s.Pending {
		parts = append(parts, p.Type+" ("+strings.Join(p.Why, "; ")+")")
	}
	return "not measured: " + strings.Join(parts, ", ")
}

// selectIncomplete is the selection of a ladder with pending candidates: nothing selected; the
// candidates measured in full are checked against the limits (their rejections stand), the
// pending ones are listed as such, and the frontier is drawn over what was measured.
func selectIncomplete(r Rule, cands []Candidate, pending []Pending) Selection {
	sel := Selection{Rejected: []Rejection{}, Frontier: []string{}, Dominated: map[string][]string{}, Incomplete: true, Pending: pending}
	isPending := func(typ string) bool {
		return slices.ContainsFunc(pending, func(p Pending) bool { return p.Type == typ })
	}
	for _, c := range cands {
		if isPending(c.Type) {
			continue
		}
		if codes := failures(r, r.Maximize, c); len(codes) > 0 {
			sel.Rejected = append(sel.Rejected, Rejection{Type: c.Type, Codes: codes})
		}
	}
	sel.Frontier, sel.Dominated = Pareto(r.Maximize, cands)
	sel.Why = fmt.Sprintf("incomplete, no selection: %d of %d candidates pending (%s); run the study again to measure them", len(pending), len(cands), sel.Missing())
	return sel
}

// failures are the limits c fails under r (none: it passes).
func failures(r Rule, figure string, c Candidate) []string {
	var out []string
	if _, ok := c.Speed[figure]; !ok {
		out = append(out, FailSpeedMissing)
	}
	l := r.Limits
	needKLD := l.KLDMeanMax != nil || l.KLDP99Max != nil || l.SameTopPMin != nil || l.PPLRatioMax != nil
	if needKLD && c.KLD == nil {
		out = append(out, FailKLDMissing)
	}
	if k := c.KLD; k != nil {
		if l.KLDMeanMax != nil && k.Mean > *l.KLDMeanMax {
			out = append(out, FailKLDMean)
		}
		if l.KLDP99Max != nil && k.P99 > *l.KLDP99Max {
			out = append(out, FailKLDP99)
		}
		if l.SameTopPMin != nil && k.SameTopP < *l.SameTopPMin {
			out = append(out, FailSameTopP)
		}
		if l.PPLRatioMax != nil && k.PPLRatio > *l.PPLRatioMax {
			out = append(out, FailPPLRatio)
		}
	}
	if l.FileMiBMax != nil && c.FileMiB() > *l.FileMiBMax {
		out = append(out, FailFileSize)
	}
	if l.PeakRSSMiBMax != nil {
		switch {
		case c.PeakRSSMiB == nil:
			out = append(out, FailMemoryMissing)
		case *c.PeakRSSMiB > *l.PeakRSSMiBMax:
			out = append(out, FailPeakRSS)
		}
	}
	if l.ProjectedMiBMax != nil {
		switch {
		case c.Projected == nil:
			out = append(out, FailProjectedMissing)
		case float64(c.Projected.MiB) > *l.ProjectedMiBMax:
			out = append(out, FailProjected)
		}
	}
	return out
}

// Select applies the rule (its defaults filled in) to the candidates.
func Select(r Rule, cands []Candidate) Selection {
	sel := Selection{Rejected: []Rejection{}, Frontier: []string{}, Dominated: map[string][]string{}}
	var pass []Candidate
	for _, c := range cands {
		if codes := failures(r, r.Maximize, c); len(codes) > 0 {
			sel.Rejected = append(sel.Rejected, Rejection{Type: c.Type, Codes: codes})
		} else {
			pass = append(pass, c)
		}
	}
	sel.Frontier, sel.Dominated = Pareto(r.Maximize, cands)
	ranked := rank(r, pass)
	if len(ranked) == 0 {
		sel.Why = fmt.Sprintf("no candidate meets every limit (%d rejected)", len(sel.Rejected))
		return sel
	}
	sel.Selected, sel.Why = ranked[0].Type, why(r, ranked, pass)
	if len(pass) > 1 {
		rest := slices.DeleteFunc(slices.Clone(pass), func(c Candidate) bool { return c.Type == sel.Selected })
		sel.RunnerUp = rank(r, rest)[0].Type
	}
	return sel
}

// rank orders the passing candidates as the rule chooses: those within the tolerance of the
// best speed first, in tie-break order, then the rest by speed.
func rank(r Rule, pass []Candidate) []Candidate {
	if len(pass) == 0 {
		return nil
	}
	tol := 0.01
	if r.Tolerance != nil {
		tol = *r.Tolerance
	}
	best := 0.0
	for _, c := range pass {
		best = max(best, c.Speed[r.Maximize])
	}
	tied := func(c Candidate) bool { return c.Speed[r.Maximize] >= best*(1-tol) }
	chain := r.TieBreak
	if len(chain) == 0 {
		chain = DefaultTieBreak
	}
	out := slices.Clone(pass)
	slices.SortStableFunc(out, func(a, b Candidate) int {
		ta, tb := tied(a), tied(b)
		switch {
		case ta && !tb:
			return -1
		case tb && !ta:
			return 1
		case !ta: // neither tied: faster first
			return cmp.Compare(b.Speed[r.Maximize], a.Speed[r.Maximize])
		}
		for _, k := range chain {
			if c := tieCmp(k, a, b); c != 0 {
				return c
			}
		}
		return a.Order - b.Order
	})
	return out
}

// tieCmp compares two tied candidates by one tie-break key (lower first; unmeasured last).
func tieCmp(key string, a, b Candidate) int {
	switch key {
	case TieKLDMean:
		return cmpMissingLast(a.KLD != nil, b.KLD != nil, func() int { return cmp.Compare(a.KLD.Mean, b.KLD.Mean) })
	case TieFileSize:
		return cmp.Compare(float64(a.FileBytes), float64(b.FileBytes))
	case TiePeakRSS:
		return cmpMissingLast(a.PeakRSSMiB != nil, b.PeakRSSMiB != nil, func() int { return cmp.Compare(*a.PeakRSSMiB, *b.PeakRSSMiB) })
	case TieOrder:
		return a.Order - b.Order
	}
	return 0
}

func cmpMissingLast(haveA, haveB bool, both func() int) int {
	switch {
	case haveA && haveB:
		return both()
	case haveA:
		return -1
	case haveB:
		return 1
	}
	return 0
}

// why says how the rule chose ranked[0].
func why(r Rule, ranked, pass []Candidate) string {
	top := ranked[0]
	fig := r.Maximize
	tol := 0.01
	if r.Tolerance != nil {
		tol = *r.Tolerance
	}
	best := 0.0
	for _, c := range pass {
		best = max(best, c.Speed[fig])
	}
	var tied []string
	for _, c := range ranked[1:] {
		if c.Speed[fig] >= best*(1-tol) {
			tied = append(tied, c.Type)
		}
	}
	s := fmt.Sprintf("%s: %s %s t/s, the highest of the %d candidates within every limit", top.Type, fig, fmtRate(top.Speed[fig]), len(pass))
	if len(tied) > 0 {
		chain := r.TieBreak
		if len(chain) == 0 {
			chain = DefaultTieBreak
		}
		s = fmt.Sprintf("%s: tied on %s within %g%% with %s, chosen by %s", top.Type, fig, tol*100, strings.Join(tied, ", "), strings.Join(chain, " > "))
	}
	return s
}

func fmtRate(v float64) string { return fmt.Sprintf("%.2f", v) }

// Pareto is the speed (figure, higher better) versus mean KLD (lower better) frontier of the
// candidates measured on both: those no other candidate matches or beats on both and beats on
// one; dominated names, for every other candidate, those that dominate it.
func Pareto(figure string, cands []Candidate) (frontier []string, dominated map[string][]string) {
	frontier, dominated = []string{}, map[string][]string{}
	for _, a := range cands {
		sa, ok := a.Speed[figure]
		if !ok || a.KLD == nil {
			continue
		}
		var by []string
		for _, b := range cands {
			sb, ok := b.Speed[figure]
			if b.Type == a.Type || !ok || b.KLD == nil {
				continue
			}
			if sb >= sa && b.KLD.Mean <= a.KLD.Mean && (sb > sa || b.KLD.Mean < a.KLD.Mean) {
				by = append(by, b.Type)
			}
		}
		if len(by) == 0 {
			frontier = append(frontier, a.Type)
		} else {
			dominated[a.Type] = by
		}
	}
	return frontier, dominated
}

// ImatrixKey is the cache key of an importance matrix: the reference it is measured on, the
// calibration text, the chunk size and count, and the llama-imatrix build.
func ImatrixKey(referenceSHA, calibrationSHA string, ctx, chunks int, buildID string) string {
	return canon.SHA256Hex([]byte(strings.Join([]string{"sparkbench.imatrix-cache/v1", referenceSHA, calibrationSHA, strconv.Itoa(ctx), strconv.Itoa(chunks), buildID}, "\n")))
}

// CacheKey is a derived model's content address: the reference's SHA-256, the quant type, the
// importance matrix's SHA-256 ("" for none) and the quantizing build's identity. The same key
// means the same recipe; the file's own SHA-256 is recorded beside it.
func CacheKey(referenceSHA, quantType, imatrixSHA, buildID string) string {
	return canon.SHA256Hex([]byte(strings.Join([]string{"sparkbench.quant-cache/v1", referenceSHA, strings.ToUpper(quantType), imatrixSHA, buildID}, "\n")))
}

// Headline is a ladder's outcome in one line: the selected type and its runner-up, or that
// none was selected. "" before any candidate was measured.
func Headline(r *Result) string {
	if r == nil || len(r.Records) == 0 {
		return ""
	}
	if r.Selection.Incomplete {
		return fmt.Sprintf("incomplete, no selection (%d pending)", len(r.Selection.Pending))
	}
	if r.Selection.Selected == "" {
		return "no candidate passed every limit"
	}
	s := "selected " + r.Selection.Selected
	if r.Selection.RunnerUp != "" {
		s += ", runner-up " + r.Selection.RunnerUp
	}
	return s
}
