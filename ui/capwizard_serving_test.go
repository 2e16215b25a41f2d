package ui

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// TestServingSectionBuildsThePlan fills the capacity form's serving section by hand for a
// Poisson sweep with a max-rate search under a GuideLLM preset: the plan's serving block is
// what the fields say and validates; the preset filled the SLO, and an SLO edited away from it
// is refused at serving.slo.preset; bad values are refused with what is wrong; switched off,
// the plan has no serving block even when the opened plan had one.
func TestServingSectionBuildsThePlan(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *CapacityWizard { return newCapacityWizard(a.NewWindow("t"), nil, nil, nil, nil) })
	f := v.Serving
	Locked(func() {
		f.Enable.SetChecked(true)
		f.Process.SetSelected(capacity.ArrivalPoisson)
		f.Seed.SetText("7")
		f.Rates.SetText("2, 4, 8")
		f.Search.SetChecked(true)
		f.Lo.SetText("2")
		f.Hi.SetText("64")
		f.Tolerance.SetText("0.25")
		f.MaxProbes.SetText("6")
		f.Requests.SetText("16")
		f.Preset.SetSelected("guidellm-chat")
		f.Workload.SetSelected(capacity.WorkloadSharedPrefix)
		f.Prefixes.SetText("2")
		f.Suffixes.SetText("4")
		f.PrefixWords.SetText("60")
		f.Input.SetText("6")
		f.Output.SetText("uniform 4 12")
		f.CachePrompt.SetChecked(true)
	})
	var p *capacity.Plan
	var errs []string
	Locked(func() { p, errs = v.Plan() })
	if len(errs) > 0 {
		t.Fatalf("the form's plan: %v", errs)
	}
	want := &capacity.Serving{Arrival: capacity.Arrival{Process: capacity.ArrivalPoisson, Seed: 7}, Rates: []float64{2, 4, 8},
		Search: &capacity.RateSearch{Lo: 2, Hi: 64, Tolerance: 0.25, MaxProbes: 6}, Requests: 16, Warmups: 1,
		SLO:         capacity.SLO{TTFTMs: 200, TPOTMs: 50, Percentile: 99, CompletionRateMin: 1, Preset: "guidellm-chat"},
		MaxInFlight: capacity.DefaultMaxInFlight, ScheduleSlackMs: capacity.DefaultScheduleSlackMs, CachePrompt: true,
		Workload: &capacity.Workload{Kind: capacity.WorkloadSharedPrefix, Seed: 1, Prefixes: 2, Suffixes: 4, PrefixWords: 60,
			InputWords: &capacity.LengthDist{Dist: capacity.DistFixed, Value: 6}, OutputTokens: &capacity.LengthDist{Dist: capacity.DistUniform, Min: 4, Max: 12}}}
	if !reflect.DeepEqual(p.Serving, want) {
		t.Fatalf("serving block\n got %+v\nwant %+v", p.Serving, want)
	}
	if probs := servingProblems(p); len(probs) > 0 {
		t.Fatalf("the form's serving block is refused: %v", probs)
	}
	for _, c := range []struct {
		edit func()
		path string
		want string
	}{
		{func() { f.TTFT.SetText("250") }, "serving.slo.preset", `"guidellm-chat" is TTFT ≤ 200 ms, TPOT ≤ 50 ms at p99`},
		{func() { f.Rates.SetText("4, 2") }, "serving.rates[1]", ""},
		{func() { f.Process.SetSelected(capacity.ArrivalGamma) }, "serving.arrival.burstiness", "want the gamma shape"},
	} {
		var p *capacity.Plan
		Locked(func() {
			c.edit()
			p, _ = v.Plan()
		})
		got := servingProblems(p)
		if !slices.ContainsFunc(got, func(pr study.Problem) bool {
			return strings.HasPrefix(pr.Path, c.path) && strings.Contains(pr.Msg, c.want)
		}) {
			t.Errorf("want a problem at %s containing %q; got %v", c.path, c.want, got)
		}
		Locked(func() { // back to the valid form
			f.TTFT.SetText("200")
			f.Rates.SetText("2,4,8")
			f.Process.SetSelected(capacity.ArrivalPoisson)
		})
	}
	Locked(func() {
		f.Rates.SetText("2, fast")
		f.Output.SetText("normal 12")
		if _, errs := v.Plan(); !slices.Contains(errs, `serving offered rates: "fast" is not a number`) ||
			!slices.ContainsFunc(errs, func(e string) bool {
				return strings.Contains(e, "write N, uniform MIN MAX, normal MEAN STD MIN MAX or file PATH")
			}) {
			t.Errorf("bad values: %v", errs)
		}
	})
	// An opened serving plan, then the section switched off: no serving block.
	file := filepath.Join("..", "docs", "examples", "serving-poisson.json")
	op, err := capacity.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	Locked(func() {
		v.LoadPlan(op, filepath.Dir(file))
		if !f.Enable.Checked || f.Process.Selected != capacity.ArrivalPoisson || f.Rates.Text != "2,4,8" || !f.Search.Checked {
			t.Errorf("opened plan: enable %v, process %q, rates %q, search %v", f.Enable.Checked, f.Process.Selected, f.Rates.Text, f.Search.Checked)
		}
		f.Enable.SetChecked(false)
		if p, _ := v.Plan(); p.Serving != nil {
			t.Errorf("switched off: serving %+v", p.Serving)
		}
	})
}

// servingProblems are the problems capacity validation finds in the plan's serving block.
func servingProblems(p *capacity.Plan) []study.Problem {
	var out []study.Problem
	for _, pr := range capacity.Validate(p, capacity.ValidateOptions{}) {
		if strings.HasPrefix(pr.Path, "serving") {
			out = append(out, pr)
		}
	}
	return out
}

// Every length form reads back as written.
func TestServingLengthText(t *testing.T) {
	file := func(p string) *capacity.FileRef { return &capacity.FileRef{Path: p} }
	for _, d := range []*capacity.LengthDist{
		{Dist: capacity.DistFixed, Value: 128},
		{Dist: capacity.DistUniform, Min: 4, Max: 12},
		{Dist: capacity.DistNormal, Mean: 12.5, Std: 4, Min: 4, Max: 24},
		{Dist: capacity.DistFile, File: file("/data/lengths file.txt")},
	} {
		got, err := parseLength(lengthText(d), file)
		if err != nil || !reflect.DeepEqual(got, d) {
			t.Errorf("%+v: %q read back as %+v (%v)", d, lengthText(d), got, err)
		}
	}
	for _, bad := range []string{"uniform 4", "normal a b 1 2", "fixed", "12 13"} {
		if _, err := parseLength(bad, file); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
