package capacity

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sparkbench/app/study"
)

// KV cache arms: a capacity or concurrency study whose candidates differ by their KV cache type
// (llama-server -ctk/--cache-type-k, -ctv/--cache-type-v) gets, after its cells, the KL
// divergence of each cheaper cache type from an f16 cache on the same model (app/study/kvquality,
// as a throughput study's kv_types do), shown beside the speed that cache type bought against
// the f16 candidate. The check's results are journal entries (study.EntryKVKLD), never part of
// study.json, which stays capacity assemble's output.

// f16KV is llama-server's default KV cache type, for K and V.
var f16KV = study.KVType{K: "f16", V: "f16"}

// KVOf reads a candidate's KV cache types from its server flags: -ctk/--cache-type-k and
// -ctv/--cache-type-v (the last one given counts); a type left out is f16, llama-server's
// default.
func KVOf(flags []string) study.KVType {
	kv := f16KV
	for i := 0; i+1 < len(flags); i++ {
		switch flags[i] {
		case "-ctk", "--cache-type-k":
			kv.K = flags[i+1]
		case "-ctv", "--cache-type-v":
			kv.V = flags[i+1]
		}
	}
	return kv
}

// otherFlags are the flags besides the KV cache types, in order.
func otherFlags(flags []string) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		switch flags[i] {
		case "-ctk", "--cache-type-k", "-ctv", "--cache-type-v":
			i++
			continue
		}
		out = append(out, flags[i])
	}
	return out
}

// threadsOf is the -t/--threads value of flags (0: not given).
func threadsOf(flags []string) int {
	n := 0
	for i := 0; i+1 < len(flags); i++ {
		if flags[i] == "-t" || flags[i] == "--threads" {
			if v, err := strconv.Atoi(flags[i+1]); err == nil && v > 0 {
				n = v
			}
		}
	}
	return n
}

// KVArm is a candidate whose KV cache type is not f16, paired with the f16 candidate on the
// same model (the same SHA-256): its speed is compared with that candidate's, its output with
// an f16 cache's on that model.
type KVArm struct {
	Candidate string       `json:"candidate"`
	Base      string       `json:"base"`  // the f16 candidate
	Model     string       `json:"model"` // the model's name in the check's legs and entries
	Path      string       `json:"path"`  // the model file as the plan gives it
	KV        study.KVType `json:"kv"`
	Threads   int          `json:"threads"` // the candidate's -t (0: not given)
	// FlagsDiffer: the base's flags differ from the candidate's by more than the cache type
	// (no f16 candidate on the model has the same other flags).
	FlagsDiffer bool `json:"flags_differ,omitempty"`
}

// KVName is the cache type as the check journals it, K/V.
func (a KVArm) KVName() string { return a.KV.K + "/" + a.KV.V }

// KVArms are the plan's KV cache arms in plan order: every candidate whose cache type is not
// f16/f16 and whose model an f16 candidate (by its flags, or by default) also serves. Its base
// is the f16 candidate whose other flags are the same, else the first f16 candidate on the
// model. None: the plan has no KV arm (nothing to check).
func KVArms(p *Plan) []KVArm {
	var out []KVArm
	for _, c := range p.Candidates {
		kv := KVOf(c.ServerFlags)
		if kv == f16KV {
			continue
		}
		base, same := "", false
		for _, b := range p.Candidates {
			if b.Model.SHA256 != c.Model.SHA256 || KVOf(b.ServerFlags) != f16KV {
				continue
			}
			if slices.Equal(otherFlags(b.ServerFlags), otherFlags(c.ServerFlags)) {
				base, same = b.ID, true
				break
			}
			if base == "" {
				base = b.ID
			}
		}
		if base == "" {
			continue
		}
		out = append(out, KVArm{Candidate: c.ID, Base: base, Model: kvModelName(p, c), Path: c.Model.Path, KV: kv,
			Threads: threadsOf(c.ServerFlags), FlagsDiffer: !same})
	}
	return out
}

// kvModelName names c's model in the check: its file name without .gguf, characters outside
// A-Za-z0-9._- as '_'; with the first 12 digits of its SHA-256 appended when another model of
// the plan would get the same name.
func kvModelName(p *Plan, c Candidate) string {
	name := func(path string) string {
		n := strings.TrimSuffix(filepath.Base(path), ".gguf")
		return strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return r
			}
			return '_'
		}, n)
	}
	n := name(c.Model.Path)
	for _, o := range p.Candidates {
		if o.Model.SHA256 != c.Model.SHA256 && name(o.Model.Path) == n {
			return n + "-" + c.Model.SHA256[:min(12, len(c.Model.SHA256))]
		}
	}
	return n
}

// KVQuality is one KV arm's quality check beside the speed its cache type bought against the
// f16 candidate: the journaled check (model, KV, leg, mean and 99th-percentile KLD, same top p,
// transcript lines), the speed changes, and the plan's gate when it has one.
type KVQuality struct {
	Candidate string `json:"candidate"`
	Base      string `json:"base"`
	study.KVCheck
	Speed []KVSpeed `json:"speed"`
	// Gate is "pass" or study.GateKLDAboveMax when the plan has kv_quality; Max its limit.
	Gate string   `json:"gate,omitempty"`
	Max  *float64 `json:"kld_mean_max,omitempty"`
	// FlagsDiffer: the f16 candidate differs by more than its cache type.
	FlagsDiffer bool `json:"flags_differ,omitempty"`
}

// Speed figures of a KV arm against its f16 candidate.
const (
	KVSpeedSelected  = "selected_rate"   // the selected points' generation rates
	KVSpeedPerStream = "per_stream_rate" // the per-stream rates at the base point (P1/C1)
)

// KVSpeed is the arm's figure over the f16 candidate's (Ratio), at the points named.
type KVSpeed struct {
	Figure      string  `json:"figure"`
	Slots       int     `json:"slots"`
	Clients     int     `json:"clients"`
	BaseSlots   int     `json:"base_slots"`
	BaseClients int     `json:"base_clients"`
	Ratio       float64 `json:"ratio"`
}

// Words says the speed change: "selected rate faster by 3.1% (P2/C2 against f16's P2/C2)",
// "per-stream rate at P1/C1 slower by 4.0%".
func (s KVSpeed) Words(base string) string {
	if s.Figure == KVSpeedSelected {
		return fmt.Sprintf("selected rate %s (P%d/C%d against %s's P%d/C%d)", study.SpeedChange(s.Ratio), s.Slots, s.Clients, base, s.BaseSlots, s.BaseClients)
	}
	return fmt.Sprintf("per-stream rate at P%d/C%d %s", s.Slots, s.Clients, study.SpeedChange(s.Ratio))
}

// SpeedWords are the speed changes in words ("speed against f16 not measured" when none).
func (q KVQuality) SpeedWords() string {
	var out []string
	for _, s := range q.Speed {
		out = append(out, s.Words(q.Base))
	}
	if len(out) == 0 {
		return "speed against " + q.Base + " not measured"
	}
	return strings.Join(out, ", ")
}

// Title is "q8 (q8_0/q8_0 KV) vs f16".
func (q KVQuality) Title() string {
	return fmt.Sprintf("%s (%s KV) vs %s", q.Candidate, q.KV, q.Base)
}

// KVQualityOf pairs the plan's KV arms with their journaled checks (the last of each model
// and cache type): each checked arm with the speed its cache type bought in res (nil: none)
// and the gate's outcome; the arms without a check yet, in plan order.
func KVQualityOf(p *Plan, res *Result, checks []study.KVCheck) ([]KVQuality, []KVArm) {
	var out []KVQuality
	var pending []KVArm
	checks = study.LatestKVChecks(checks)
	for _, a := range KVArms(p) {
		i := slices.IndexFunc(checks, func(c study.KVCheck) bool { return c.Model == a.Model && c.KV == a.KVName() })
		if i < 0 {
			pending = append(pending, a)
			continue
		}
		q := KVQuality{Candidate: a.Candidate, Base: a.Base, KVCheck: checks[i], Speed: kvSpeed(res, a), FlagsDiffer: a.FlagsDiffer}
		if g := p.KVQuality; g != nil {
			q.Gate, q.Max = study.KVGateOutcome(q.MeanKLD, g), &g.KLDMeanMax
		}
		out = append(out, q)
	}
	return out, pending
}

// kvSpeed compares the arm's selected point with its base's (both selected), and its per-stream
// rate at its base point (P1/C1) with the f16 candidate's at the same point.
func kvSpeed(res *Result, a KVArm) []KVSpeed {
	out := []KVSpeed{}
	if res == nil {
		return out
	}
	var c, b *CandidateResult
	for i := range res.Candidates {
		switch res.Candidates[i].ID {
		case a.Candidate:
			c = &res.Candidates[i]
		case a.Base:
			b = &res.Candidates[i]
		}
	}
	if c == nil || b == nil {
		return out
	}
	if cs, bs := c.Selected, b.Selected; cs != nil && bs != nil && bs.GenerationRate > 0 {
		out = append(out, KVSpeed{Figure: KVSpeedSelected, Slots: cs.Slots, Clients: cs.Clients, BaseSlots: bs.Slots, BaseClients: bs.Clients,
			Ratio: cs.GenerationRate / bs.GenerationRate})
	}
	cell := func(r *CandidateResult, slots, clients int) *float64 {
		for _, x := range r.Cells {
			if x.Slots == slots && x.Clients == clients {
				return x.PerStreamRate
			}
		}
		return nil
	}
	s, cl := c.Base.Slots, c.Base.Clients
	if cr, br := cell(c, s, cl), cell(b, s, cl); cr != nil && br != nil && *br > 0 {
		out = append(out, KVSpeed{Figure: KVSpeedPerStream, Slots: s, Clients: cl, BaseSlots: s, BaseClients: cl, Ratio: *cr / *br})
	}
	return out
}

// AttachKVQuality puts the KV cache checks in the report (the speed from its trusted
// study.json; untrusted: the checks without speed), and the arms not checked yet.
func AttachKVQuality(rep *Report, p *Plan, checks []study.KVCheck) {
	var res *Result
	if rep.Run != nil && rep.Trusted {
		res = rep.Run.Result
	}
	q, pending := KVQualityOf(p, res, checks)
	rep.KVQuality = q
	for _, a := range pending {
		rep.KVUnchecked = append(rep.KVUnchecked, a.Candidate)
	}
}

// KVQualityLine is one arm's line in `capacity show` and `capacity run`: "q8 (q8_0/q8_0 KV)
// vs f16: selected rate faster by 3.1% (…), per-stream rate at P1/C1 …; mean KLD 0.001234
// (99% …, same top p …)[; gate (mean KLD <= L): pass] — leg …, lines […]".
func KVQualityLine(q KVQuality) string {
	gate := ""
	if q.Max != nil {
		gate = fmt.Sprintf("; gate (mean KLD <= %g): %s", *q.Max, q.Gate)
	}
	differ := ""
	if q.FlagsDiffer {
		differ = " (other flags differ)"
	}
	return fmt.Sprintf("%s%s: %s; mean KLD %.6f (99%% %.6f, same top p %.2f%%)%s — leg %s, lines %v",
		q.Title(), differ, q.SpeedWords(), q.MeanKLD, q.P99KLD, q.SameTopP*100, gate, q.Leg, q.Lines)
}

// checkKVQuality checks the KV quality gate: a mean KLD limit above 0 and at most 1, on a plan
// that has a KV arm for it to judge.
func (v *validator) checkKVQuality() {
	g := v.p.KVQuality
	if g == nil {
		return
	}
	if !(g.KLDMeanMax > 0 && g.KLDMeanMax <= 1) {
		v.errf("kv_quality.kld_mean_max", "%g: want a mean KL divergence above 0 and at most 1 (e.g. 0.01)", g.KLDMeanMax)
	}
	if len(KVArms(v.p)) == 0 {
		v.warnf("kv_quality", "no candidate differs from an f16 candidate on the same model by its KV cache type (-ctk/-ctv): there is nothing for the gate to check; add such a candidate, or drop kv_quality")
	}
}
