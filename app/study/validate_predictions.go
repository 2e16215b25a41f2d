package study

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

func (v *validator) checkPredictions() {
	heads := CheckPredictionIDs(len(v.p.Predictions), func(i int) (string, string) {
		return v.p.Predictions[i].ID, v.p.Predictions[i].Text
	})
	v.problems = append(v.problems, heads...)
	for i, pr := range v.p.Predictions {
		at := fmt.Sprintf("predictions[%d]", i)
		v.checkSelector(at+".about", pr.About)
		if pr.Kind == KindComparison && pr.Than != nil {
			v.checkSelector(at+".than", *pr.Than)
		}
		if pr.Kind == KindBand && pr.NoiseFloor == 0 && v.p.Given(at+".noise_floor") {
			v.errf(at+".noise_floor", "0: this plan format cannot keep a noise floor of 0 (it reads as the default %g); give a positive fraction below 1, e.g. 0.001, or leave it out for %g",
				DefaultNoiseFloor, DefaultNoiseFloor)
		}
		v.checkStats(at, pr)
		v.problems = append(v.problems, CheckExpectation(at, Expectation{Kind: pr.Kind, Lo: pr.Lo, Hi: pr.Hi,
			NoiseFloor: pr.NoiseFloor, Arms: pr.Arms, Op: pr.Op, Tolerance: pr.Tolerance, HasThan: pr.Than != nil})...)
	}
}

// CheckPredictionIDs checks n predictions' IDs (short, unique) and texts (not empty); get
// returns the i-th's ID and text. Capacity plans share it.
func CheckPredictionIDs(n int, get func(i int) (id, text string)) []Problem {
	var out []Problem
	errf := func(path, format string, a ...any) {
		out = append(out, Problem{Path: path, Severity: SevError, Msg: fmt.Sprintf(format, a...)})
	}
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		id, text := get(i)
		at := fmt.Sprintf("predictions[%d]", i)
		if !idRE.MatchString(id) {
			errf(at+".id", "%q: want a short ID such as P1", id)
		} else if seen[id] {
			errf(at+".id", "%q is used twice", id)
		}
		seen[id] = true
		if strings.TrimSpace(text) == "" {
			errf(at+".text", "empty; write the claim in words")
		}
	}
	return out
}

// Expectation is what a prediction expects, whatever it is about.
type Expectation struct {
	Kind       PredictionKind
	Lo, Hi     *float64
	NoiseFloor float64
	Arms       []Arm
	Op         string
	Tolerance  float64
	HasThan    bool // a comparison's right-hand side is given (its selector is checked by the caller)
}

// CheckExpectation checks a prediction's expectation at JSON path at: a band's bounds, a
// fork's arms (named, bounded, not overlapping), a comparison's operator and tolerance, a
// question's lack of any. Capacity plans share it.
func CheckExpectation(at string, e Expectation) []Problem {
	var out []Problem
	errf := func(path, format string, a ...any) {
		out = append(out, Problem{Path: path, Severity: SevError, Msg: fmt.Sprintf(format, a...)})
	}
	switch e.Kind {
	case KindBand:
		if e.Lo == nil && e.Hi == nil {
			errf(at, "a band needs lo and/or hi")
		} else if e.Lo != nil && e.Hi != nil && *e.Lo > *e.Hi {
			errf(at, "lo %g is above hi %g", *e.Lo, *e.Hi)
		}
		if e.NoiseFloor < 0 || e.NoiseFloor >= 1 {
			errf(at+".noise_floor", "%g: want a fraction in [0, 1)", e.NoiseFloor)
		}
	case KindFork:
		if len(e.Arms) < 2 {
			errf(at+".arms", "a fork needs at least two arms")
		}
		for j, a := range e.Arms {
			if strings.TrimSpace(a.Name) == "" {
				errf(fmt.Sprintf("%s.arms[%d].name", at, j), "empty; name the arm")
			}
			if a.Lo == nil && a.Hi == nil {
				errf(fmt.Sprintf("%s.arms[%d]", at, j), "an arm needs lo and/or hi")
			} else if a.Lo != nil && a.Hi != nil && *a.Lo > *a.Hi {
				errf(fmt.Sprintf("%s.arms[%d]", at, j), "lo %g is above hi %g", *a.Lo, *a.Hi)
			}
			for k := 0; k < j; k++ {
				if overlap(a, e.Arms[k]) {
					errf(fmt.Sprintf("%s.arms[%d]", at, j), "overlaps arm %q: a value must fire at most one arm", e.Arms[k].Name)
				}
			}
		}
	case KindComparison:
		if e.Op != ">=" && e.Op != "<=" && e.Op != "within" {
			errf(at+".op", "%q: want >=, <= or within", e.Op)
		}
		if !e.HasThan {
			errf(at+".than", "a comparison needs the right-hand side (than)")
		}
		if e.Tolerance < 0 || e.Tolerance >= 1 {
			errf(at+".tolerance", "%g: want a fraction in [0, 1)", e.Tolerance)
		}
	case KindQuestion:
		if e.Lo != nil || e.Hi != nil || len(e.Arms) > 0 {
			errf(at, "a question has no expectation; use a band or a fork to predict a value")
		}
	default:
		errf(at+".kind", "%q: want band, fork, comparison or question", e.Kind)
	}
	return out
}

func overlap(a, b Arm) bool {
	loA, hiA := bound(a.Lo, -1), bound(a.Hi, 1)
	loB, hiB := bound(b.Lo, -1), bound(b.Hi, 1)
	return loA <= hiB && loB <= hiA
}

func bound(x *float64, inf float64) float64 {
	if x == nil {
		return inf * 1e308
	}
	return *x
}

func (v *validator) checkSelector(at string, s Selector) {
	if !figures[s.Figure] {
		v.errf(at+".figure", "%q: want one of %s", s.Figure, sortedFigureNames())
		return
	}
	needModel := s.Figure != FigureRepeatabilityCV && s.Figure != FigureContamination
	if needModel && !v.modelIDs[s.Model] {
		v.errf(at+".model", "%q is not a model ID of this plan", s.Model)
	}
	needTest := s.Figure == FigureCell || s.Figure == FigureCrossing || s.Figure == FigureSlope || s.Figure == FigureCV ||
		s.Figure == FigureRepeatabilityCV || s.Figure == FigureContamination || s.Figure == FigureDeviceRatio || energyFigure(s.Figure)
	if needTest {
		m := testRE.FindStringSubmatch(s.Test)
		switch {
		case m == nil:
			v.errf(at+".test", "%q: want pp, tg, pg or an exact test such as tg128", s.Test)
		case m[2] != "":
			n, _ := strconv.Atoi(m[2])
			list := v.p.Axes.NGen
			if m[1] == "pp" {
				list = v.p.Axes.NPrompt
			}
			if !containsInt(list, n) {
				v.errf(at+".test", "%s is not measured by this plan (axes give %s %v)", s.Test, m[1], list)
			}
		}
	}
	needDepth := s.Figure == FigureCell || s.Figure == FigureSlope || s.Figure == FigureCV || s.Figure == FigureEfficiency ||
		s.Figure == FigureDeviceRatio || energyFigure(s.Figure)
	if needDepth {
		if s.Depth == nil {
			v.errf(at+".depth", "missing; name the depth (one of %v)", v.p.Axes.Depths)
		} else if !containsInt(v.p.Axes.Depths, *s.Depth) {
			v.errf(at+".depth", "%d is not a measured depth (axes.depths %v)", *s.Depth, v.p.Axes.Depths)
		}
	}
	if s.Figure == FigureCrossing && !(s.Line > 0) {
		v.errf(at+".line", "a crossing needs the line in t/s, e.g. 70")
	}
	if s.Figure == FigureCeiling || s.Figure == FigureEfficiency {
		if s.Conv != "house" && s.Conv != "tensor_exact" {
			v.errf(at+".convention", "%q: want house or tensor_exact", s.Conv)
		}
		if v.p.Bandwidth == nil {
			v.errf(at, "a %s needs the plan's bandwidth (gbs or measure)", s.Figure)
		}
	}
	switch s.Figure {
	case FigureDeviceRatio:
		for _, d := range []struct{ name, v string }{{"device", s.Device}, {"base_device", s.BaseDevice}} {
			if !has(v.p.Axes.Devices, d.v) {
				v.errf(at+"."+d.name, "%q is not in axes.devices %v: a device_ratio compares two of its values", d.v, v.p.Axes.Devices)
			}
		}
		if s.Device != "" && s.Device == s.BaseDevice {
			v.errf(at+".base_device", "the same device as device: the ratio is 1 by definition")
		}
	case FigureJPerToken, FigureTokensPerJ:
		if v.p.Telemetry == nil {
			v.errf(at, "%s needs the plan's telemetry block (a sampler that measures energy)", s.Figure)
		}
		if v.p.Adaptive != nil {
			v.errf(at, "%s is not computed for adaptive repetitions (a cell merges several processes)", s.Figure)
		}
	case FigureRepeatabilityCV:
		if v.p.Repeatability == nil {
			v.errf(at, "repeatability_cv needs the plan's repeatability legs")
		}
	case FigureContamination:
		if len(s.Legs) != 3 {
			v.errf(at+".legs", "contamination_delta needs three legs: quiet before, contaminated, quiet after")
		}
		for j, l := range s.Legs {
			if v.legs != nil && !v.legs[l] {
				v.errf(fmt.Sprintf("%s.legs[%d]", at, j), "%q is not a leg of this plan", l)
			}
		}
	}
	if c := s.Config; c != nil {
		check := func(name string, x *int, list []int) {
			if x != nil && !containsInt(list, *x) {
				v.errf(at+".config."+name, "%d is not in axes.%s %v", *x, name, list)
			}
		}
		check("ubatch", c.Ubatch, v.p.Axes.Ubatch)
		check("batch", c.Batch, v.p.Axes.Batch)
		check("threads", c.Threads, v.p.Axes.Threads)
		check("ngl", c.NGL, v.p.Axes.NGL)
		if c.Devices != "" && !has(v.p.Axes.Devices, c.Devices) {
			v.errf(at+".config.devices", "%q is not in axes.devices %v", c.Devices, v.p.Axes.Devices)
		}
		if c.FlashAttn != "" && !has(v.p.Axes.FlashAttn, c.FlashAttn) {
			v.errf(at+".config.flash_attn", "%q is not in axes.flash_attn %v", c.FlashAttn, v.p.Axes.FlashAttn)
		}
		if c.KV != nil {
			found := false
			for _, kv := range v.p.Axes.KV {
				found = found || kv == *c.KV
			}
			if !found {
				v.errf(at+".config.kv", "%s/%s is not in axes.kv_types", c.KV.K, c.KV.V)
			}
		}
	}
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func sortedKeys(m map[string]bool) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func sortedFigureNames() string {
	ks := make([]string, 0, len(figures))
	for k := range figures {
		ks = append(ks, string(k))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// energyFigure says whether a figure reads the telemetry's energy split.
func energyFigure(f Figure) bool { return f == FigureJPerToken || f == FigureTokensPerJ }
