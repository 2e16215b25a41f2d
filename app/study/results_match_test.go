package study

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"sparkbench/runner/benchfmt"
)

func TestMatchConfig(t *testing.T) {
	r := &benchfmt.Result{NGen: 32, NUbatch: 512, NBatch: 2048, FlashAttn: -1, TypeK: "f16", TypeV: "q8_0", NThreads: 4, NGPULayers: 99, Devices: "Vulkan0"}
	kv := func(k, v string) *KVType { return &KVType{K: k, V: v} }
	cases := []struct {
		c    *ConfigSel
		want bool
	}{
		{nil, true},
		{&ConfigSel{}, true},
		{&ConfigSel{Ubatch: iptr(512)}, true},
		{&ConfigSel{Ubatch: iptr(256)}, false},
		{&ConfigSel{Batch: iptr(2048)}, true},
		{&ConfigSel{Batch: iptr(512)}, false},
		{&ConfigSel{FlashAttn: "auto"}, true},
		{&ConfigSel{FlashAttn: "on"}, false},
		{&ConfigSel{FlashAttn: "off"}, false},
		{&ConfigSel{KV: kv("f16", "q8_0")}, true},
		{&ConfigSel{KV: kv("q8_0", "q8_0")}, false},
		{&ConfigSel{KV: kv("f16", "f16")}, false},
		{&ConfigSel{Threads: iptr(4)}, true},
		{&ConfigSel{Threads: iptr(1)}, false},
		{&ConfigSel{NGL: iptr(99)}, true},
		{&ConfigSel{NGL: iptr(0)}, false},
		{&ConfigSel{Devices: "Vulkan0"}, true},
		{&ConfigSel{Devices: "none"}, false},
		{&ConfigSel{Ubatch: iptr(512), Batch: iptr(2048), FlashAttn: "auto", KV: kv("f16", "q8_0"), Threads: iptr(4), NGL: iptr(99), Devices: "Vulkan0"}, true},
		{&ConfigSel{Ubatch: iptr(512), Batch: iptr(2048), FlashAttn: "auto", KV: kv("f16", "q8_0"), Threads: iptr(4), NGL: iptr(99), Devices: "none"}, false},
	}
	for _, c := range cases {
		if got := matchConfig(c.c, r); got != c.want {
			t.Errorf("matchConfig(%+v) = %v, want %v", c.c, got, c.want)
		}
	}
	r.FlashAttn = 0
	if !matchConfig(&ConfigSel{FlashAttn: "off"}, r) || matchConfig(&ConfigSel{FlashAttn: "auto"}, r) {
		t.Error("flash-attn off")
	}
}

func TestMatchTest(t *testing.T) {
	tg := &benchfmt.Result{NGen: 32}
	pp := &benchfmt.Result{NPrompt: 64}
	for _, c := range []struct {
		test string
		r    *benchfmt.Result
		want bool
	}{
		{"tg", tg, true}, {"tg32", tg, true}, {"tg64", tg, false}, {"pp", tg, false}, {"pp32", tg, false},
		{"pp", pp, true}, {"pp64", pp, true}, {"pp32", pp, false}, {"tg", pp, false}, {"tg64", pp, false},
		{"", tg, false}, {"xx", tg, false}, {"tg32x", tg, false},
	} {
		if got := matchTest(c.test, c.r); got != c.want {
			t.Errorf("matchTest(%q, %+v) = %v, want %v", c.test, *c.r, got, c.want)
		}
	}
}

func TestLegsOf(t *testing.T) {
	legs, err := Expand(loadValid(t), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		model   string
		depth   int
		repeats bool
		want    []string
	}{
		{"tiny", 0, false, []string{"tiny/d0"}},
		{"tiny", 0, true, []string{"tiny/d0#start", "tiny/d0", "tiny/d0#end"}},
		{"tiny", -1, false, []string{"tiny/d0", "tiny/d128", "tiny/d256"}},
		{"moe", 128, false, []string{"moe/d128"}},
		{"moe", 64, false, nil},
		{"none", -1, true, nil},
	} {
		if got := legsOf(legs, c.model, c.depth, c.repeats); !reflect.DeepEqual(got, c.want) {
			t.Errorf("legsOf(%s, %d, %v) = %q, want %q", c.model, c.depth, c.repeats, got, c.want)
		}
	}
}

// TestDepthSeriesPendingAndFailed: a crossing reads every depth (one still running: PENDING;
// one failed for good: UNRESOLVABLE); a slope reads only the first depth and its own, so a
// depth between them that is pending or failed does not decide it.
func TestDepthSeriesPendingAndFailed(t *testing.T) {
	d128, d256 := 128, 256
	slope := Selector{Figure: FigureSlope, Model: "tiny", Test: "tg", Depth: &d128}
	slope256 := Selector{Figure: FigureSlope, Model: "tiny", Test: "tg", Depth: &d256}
	crossing := Selector{Figure: FigureCrossing, Model: "tiny", Test: "tg", Line: 5000}
	without := func(res *Results, leg string, finished bool) {
		var rows []ResultRow
		for _, r := range res.Rows {
			if r.Leg != leg {
				rows = append(rows, r)
			}
		}
		res.Rows, res.Finished[leg] = rows, finished
	}

	res := fixture(t)
	without(res, "tiny/d128", false) // the middle depth still running
	if _, err := res.Resolve(crossing); !errors.Is(err, ErrPending) {
		t.Errorf("crossing with a pending middle depth: %v", err)
	}
	if _, err := res.Resolve(slope); !errors.Is(err, ErrPending) {
		t.Errorf("slope to a pending depth: %v", err)
	}
	if v, err := res.Resolve(slope256); err != nil || math.Abs(v.X+5000.0/9000) > 1e-12 || len(v.Sources) != 2 {
		t.Errorf("slope over a pending middle depth: %+v %v", v, err)
	}

	res = fixture(t)
	without(res, "tiny/d128", true) // the middle depth failed for good
	if _, err := res.Resolve(crossing); !errors.Is(err, ErrUnresolvable) || !strings.Contains(err.Error(), "no result row") {
		t.Errorf("crossing with a failed middle depth: %v", err)
	}
	if _, err := res.Resolve(slope); !errors.Is(err, ErrUnresolvable) {
		t.Errorf("slope to a failed depth: %v", err)
	}
	if v, err := res.Resolve(slope256); err != nil || math.Abs(v.X+5000.0/9000) > 1e-12 || len(v.Sources) != 2 {
		t.Errorf("slope over a failed middle depth: %+v %v", v, err)
	}

	res = fixture(t)
	without(res, "tiny/d0", false) // the first depth still running
	if _, err := res.Resolve(slope256); !errors.Is(err, ErrPending) {
		t.Errorf("slope from a pending first depth: %v", err)
	}
	res = fixture(t)
	without(res, "tiny/d0", true) // the first depth failed
	if _, err := res.Resolve(slope256); !errors.Is(err, ErrUnresolvable) {
		t.Errorf("slope from a failed first depth: %v", err)
	}
	// A failed depth and a later pending one: pending wins (a figure is decided only from
	// final legs).
	res = fixture(t)
	without(res, "tiny/d128", true)
	without(res, "tiny/d256", false)
	if _, err := res.Resolve(crossing); !errors.Is(err, ErrPending) {
		t.Errorf("crossing, failed d128 then pending d256: %v", err)
	}
	// The slope to 128 does not read 256.
	res = fixture(t)
	without(res, "tiny/d256", false)
	if v, err := res.Resolve(slope); err != nil || math.Abs(v.X+3000.0/9000) > 1e-12 || !reflect.DeepEqual(v.Sources, []string{"tiny/d0 tg d0", "tiny/d128 tg d128"}) {
		t.Errorf("slope to 128 with 256 pending: %+v %v", v, err)
	}
}

// TestFigureRefusals: each figure says why it has no number yet (PENDING: a leg it reads is
// still running, no bandwidth yet) or cannot have one (UNRESOLVABLE).
func TestFigureRefusals(t *testing.T) {
	d0 := 0
	set := func(res *Results, leg string, avg float64) {
		for i := range res.Rows {
			if res.Rows[i].Leg == leg {
				res.Rows[i].Result.AvgTs = avg
			}
		}
	}
	drop := func(res *Results, leg string) {
		var rows []ResultRow
		for _, r := range res.Rows {
			if r.Leg != leg {
				rows = append(rows, r)
			}
		}
		res.Rows, res.Finished[leg] = rows, false
	}
	cases := []struct {
		name    string
		edit    func(res *Results)
		sel     Selector
		pending bool
		want    string
	}{
		{"ceiling of a model whose tensor table was not read", nil, Selector{Figure: FigureCeiling, Model: "ghost"}, false, `model "ghost"'s tensor table was not read`},
		{"ceiling without bandwidth", func(res *Results) { res.BandwidthGBs = 0 }, Selector{Figure: FigureCeiling, Model: "tiny"}, true, "no memory bandwidth"},
		{"efficiency without bandwidth", func(res *Results) { res.BandwidthGBs = 0 }, Selector{Figure: FigureEfficiency, Model: "tiny", Depth: &d0}, true, "no memory bandwidth"},
		{"efficiency of a running leg", func(res *Results) { drop(res, "tiny/d0") }, Selector{Figure: FigureEfficiency, Model: "tiny", Depth: &d0}, true, "tiny/d0"},
		{"CV of a mean of 0", func(res *Results) { set(res, "tiny/d0", 0) }, Selector{Figure: FigureCV, Model: "tiny", Test: "tg32", Depth: &d0}, false, "CV of tiny/d0 tg d0: mean is 0"},
		{"CV of a running leg", func(res *Results) { drop(res, "tiny/d0") }, Selector{Figure: FigureCV, Model: "tiny", Test: "tg32", Depth: &d0}, true, "tiny/d0"},
		{"repeatability with a copy running", func(res *Results) { drop(res, "tiny/d0#end") }, Selector{Figure: FigureRepeatabilityCV, Test: "tg"}, true, "tiny/d0#end"},
		{"contamination with a leg running", func(res *Results) { drop(res, "tiny/d0#end") },
			Selector{Figure: FigureContamination, Test: "tg", Legs: []string{"tiny/d0#start", "tiny/d0", "tiny/d0#end"}}, true, "tiny/d0#end"},
		{"contamination with quiet legs at 0", func(res *Results) { set(res, "tiny/d0#start", 0); set(res, "tiny/d0#end", 0) },
			Selector{Figure: FigureContamination, Test: "tg", Legs: []string{"tiny/d0#start", "tiny/d0", "tiny/d0#end"}}, false, "quiet bracket mean 0"},
	}
	for _, c := range cases {
		res := fixture(t)
		if c.edit != nil {
			c.edit(res)
		}
		v, err := res.Resolve(c.sel)
		want := ErrUnresolvable
		if c.pending {
			want = ErrPending
		}
		if !errors.Is(err, want) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %+v %v; want %v with %q", c.name, v, err, want, c.want)
		}
	}
	// The house convention says so.
	res := fixture(t)
	if v, err := res.Resolve(Selector{Figure: FigureCeiling, Model: "tiny", Conv: "house"}); err != nil || !strings.HasSuffix(v.Detail, "house convention") ||
		!reflect.DeepEqual(v.Sources, []string{"model tiny tensor table"}) || v.X <= 0 {
		t.Errorf("house ceiling %+v %v", v, err)
	}
	// A contamination figure: the contaminated leg against the mean of the quiet ones.
	set(res, "tiny/d0#start", 9000)
	set(res, "tiny/d0#end", 11000)
	set(res, "tiny/d0", 9000)
	if v, err := res.Resolve(Selector{Figure: FigureContamination, Test: "tg", Legs: []string{"tiny/d0#start", "tiny/d0", "tiny/d0#end"}}); err != nil || math.Abs(v.X+0.1) > 1e-12 ||
		v.Detail != "9000.00 vs quiet 9000.00 and 11000.00" {
		t.Errorf("contamination %+v %v", v, err)
	}
}

// TestEvaluateEdges: a crossing beyond the measured range answers without a number (JSON has
// no infinity) and says why; a comparison whose right-hand side is still running is PENDING.
func TestEvaluateEdges(t *testing.T) {
	res := fixture(t)
	q := Prediction{ID: "Q", Kind: KindQuestion, About: Selector{Figure: FigureCrossing, Model: "moe", Test: "tg", Line: 1000}}
	vd := res.Evaluate(q)
	if vd.Outcome != Answered || vd.Value != nil || !strings.HasPrefix(vd.Detail, "+Inf — ") || !strings.Contains(vd.Detail, "does not fall below 1000") || len(vd.Sources) != 3 {
		t.Errorf("crossing beyond the range: %+v", vd)
	}
	d0, d128 := 0, 128
	c := Prediction{ID: "C", Kind: KindComparison, Op: ">=", About: Selector{Figure: FigureCell, Model: "tiny", Test: "tg", Depth: &d0},
		Than: &Selector{Figure: FigureCell, Model: "moe", Test: "tg", Depth: &d128}}
	if vd := res.Evaluate(c); vd.Outcome != Holds || vd.Detail != "9000 vs 7000 (+28.6%) — 9000.00 ± 90.00 t/s" || !reflect.DeepEqual(vd.Sources, []string{"tiny/d0 tg d0", "moe/d128 tg d128"}) {
		t.Errorf("a comparison: %+v", vd)
	}
	var rows []ResultRow
	for _, r := range res.Rows {
		if r.Leg != "moe/d128" {
			rows = append(rows, r)
		}
	}
	res.Rows, res.Finished["moe/d128"] = rows, false
	if vd := res.Evaluate(c); vd.Outcome != Pending || !strings.Contains(vd.Problem, "moe/d128") {
		t.Errorf("than still running: %+v", vd)
	}
}

// TestTouchesWithoutDepth: a cell figure without a depth reads the model's legs at every depth;
// a contamination figure reads the legs it names.
func TestTouchesWithoutDepth(t *testing.T) {
	legs, err := Expand(loadValid(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := Touches(Selector{Figure: FigureEfficiency, Model: "moe"}, legs); !reflect.DeepEqual(got, []string{"moe/d0", "moe/d128", "moe/d256"}) {
		t.Errorf("efficiency without depth touches %q", got)
	}
	if got := Touches(Selector{Figure: FigureContamination, Legs: []string{"x", "y"}}, legs); !reflect.DeepEqual(got, []string{"x", "y"}) {
		t.Errorf("contamination touches %q", got)
	}
}
