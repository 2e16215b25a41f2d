package overview

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"sparkbench/app/analysis"
	"sparkbench/runner/gguf"
)

// series builds a synthetic series of study id: one point per (depth, t/s) pair, each row
// named "leg <id*100+i> seq 1".
func series(id int64, model string, imported bool, pts ...float64) Series {
	sr := Series{StudyRef: StudyRef{ID: id, Name: fmt.Sprintf("s%d", id), Imported: imported}, Model: model, File: model + ".gguf",
		SHA256: strings.Repeat(model[:1], 64), Test: "tg128", Backend: "CPU", Config: "ub512 b2048 fa-auto kv-f16/f16 t1 ngl99", BandwidthGBs: 100}
	for i := 0; i+1 < len(pts); i += 2 {
		sr.Points = append(sr.Points, Cell{Study: id, Leg: fmt.Sprintf("%s/d%g", model, pts[i]), Row: fmt.Sprintf("leg %d seq 1", id*100+int64(i/2)),
			Depth: int64(pts[i]), TS: pts[i+1]})
	}
	return sr
}

// TestBadgeInterpolationEdgeCases: the seed's crossing (75.34 at 4096, 67.98 at 8192 cross 70
// near 7068), a value equal to the line (not below), below at d0, never below, the nearest
// deep depth and its tie, and a series with depth 0 only.
func TestBadgeInterpolationEdgeCases(t *testing.T) {
	cases := []struct {
		name       string
		sr         Series
		deep       int64
		d0, both   string
		kind       analysis.CrossingKind
		death      float64 // for crossed
		deepDepth  int64   // 0: no deep cell
		deepNote   bool
		deathFrom  string
		deathTo    string
		deathWords string
	}{
		{"seed crossing", series(1, "a", false, 0, 80, 4096, 75.34, 8192, 67.98), 8192, "earned", "not earned", analysis.Crossed,
			4096 + (75.34-70)/(75.34-67.98)*4096, 8192, false, "leg 101 seq 1", "leg 102 seq 1", "about 7068"},
		{"equal to the line is not below", series(2, "b", false, 0, 70, 8192, 70), 8192, "earned", "earned", analysis.NotReached, 0, 8192, false,
			"", "leg 201 seq 1", "beyond the deepest measured depth (70.00 t/s at 8192)"},
		{"below at d0", series(3, "c", false, 0, 69.99, 8192, 50), 8192, "not earned", "not earned", analysis.BelowAtStart, 0, 8192, false,
			"leg 300 seq 1", "", "below at d0"},
		{"nearest deep, tie goes deeper", series(4, "d", false, 0, 100, 4096, 90, 12288, 60), 8192, "earned", "undecided: not measured at 8192 (nearest measured depth 12288)", analysis.Crossed,
			4096 + 20.0/30*8192, 12288, true, "leg 401 seq 1", "leg 402 seq 1", ""},
		{"nearest deep below the asked", series(5, "e", false, 0, 100, 256, 90), 8192, "earned", "undecided: not measured at 8192 (nearest measured depth 256)", analysis.NotReached, 0, 256, true, "", "leg 501 seq 1", ""},
		{"depth 0 only", series(6, "f", false, 0, 100), 8192, "earned", "undecided: not measured at 8192 (no depth other than 0 was measured)", analysis.NotReached, 0, 0, true, "", "leg 600 seq 1", ""},
		{"depth 0 only, below", series(7, "g", false, 0, 10), 8192, "not earned", "not earned", analysis.BelowAtStart, 0, 0, true, "leg 700 seq 1", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := Badges([]Series{c.sr}, Options{Line: 70, Test: "tg", Deep: c.deep})
			if len(tb.Rows) != 1 {
				t.Fatalf("rows: %+v", tb)
			}
			r := tb.Rows[0]
			if r.D0Only.Word != c.d0 || r.BothDepths.Word != c.both {
				t.Errorf("badges %q / %q, want %q / %q", r.D0Only.Word, r.BothDepths.Word, c.d0, c.both)
			}
			if r.Death.Kind != c.kind {
				t.Errorf("death kind %s, want %s (%s)", r.Death.Kind, c.kind, r.Death.Text)
			}
			if c.kind == analysis.Crossed && (r.Death.Depth == nil || math.Abs(*r.Death.Depth-c.death) > 1e-9) {
				t.Errorf("death depth %v, want %g", r.Death.Depth, c.death)
			}
			if c.kind != analysis.Crossed && r.Death.Depth != nil {
				t.Errorf("death depth %v for %s", *r.Death.Depth, c.kind)
			}
			if (c.deepDepth == 0) != (r.Deep == nil) || r.Deep != nil && r.Deep.Depth != c.deepDepth {
				t.Errorf("deep %+v, want depth %d", r.Deep, c.deepDepth)
			}
			if c.deepNote != (r.DeepNote != "") {
				t.Errorf("deep note %q", r.DeepNote)
			}
			if got := cellRow(r.Death.From); got != c.deathFrom {
				t.Errorf("death from %q, want %q", got, c.deathFrom)
			}
			if got := cellRow(r.Death.To); got != c.deathTo {
				t.Errorf("death to %q, want %q", got, c.deathTo)
			}
			if !strings.Contains(r.Death.Text, c.deathWords) {
				t.Errorf("death text %q lacks %q", r.Death.Text, c.deathWords)
			}
			if len(r.Death.Sources) != len(c.sr.Points) || r.D0.Row != c.sr.Points[0].Row {
				t.Errorf("sources %v, d0 %+v", r.Death.Sources, r.D0)
			}
		})
	}
}

// TestBothDepthsBadgeOnlyAtTheAskedDepth: the both-depths badge is earned (or refused) only
// on a value measured at the depth asked; a series measured at another depth is "not measured
// at D" with the nearest depth named, whether that depth's value reached the line or not, and
// never counts as earned. Depth 0 under the line refuses the badge whatever was measured.
func TestBothDepthsBadgeOnlyAtTheAskedDepth(t *testing.T) {
	cases := []struct {
		name    string
		sr      Series
		decided bool
		earned  bool
		word    string
	}{
		{"measured at 8192, above", series(1, "a", false, 0, 100, 256, 95, 8192, 80), true, true, "earned"},
		{"measured at 8192, below", series(2, "b", false, 0, 100, 256, 95, 8192, 60), true, false, "not earned"},
		{"256 only, above the line", series(3, "c", false, 0, 100, 256, 95), false, false, "undecided: not measured at 8192 (nearest measured depth 256)"},
		{"256 only, below the line", series(4, "d", false, 0, 100, 256, 65), false, false, "undecided: not measured at 8192 (nearest measured depth 256)"},
		{"d0 below, 256 only", series(5, "e", false, 0, 60, 256, 50), true, false, "not earned"},
	}
	for _, c := range cases {
		tb := Badges([]Series{c.sr}, Options{Line: 70, Test: "tg", Deep: 8192})
		b := tb.Rows[0].BothDepths
		if b.Decided != c.decided || b.Earned != c.earned || b.Word != c.word {
			t.Errorf("%s: both depths %+v, want decided %v earned %v %q", c.name, b, c.decided, c.earned, c.word)
		}
		var text strings.Builder
		WriteBadges(&text, &Overview{Badges: tb})
		if !strings.Contains(text.String(), c.word) {
			t.Errorf("%s: the table does not say %q:\n%s", c.name, c.word, text.String())
		}
	}
}

func cellRow(c *Cell) string {
	if c == nil {
		return ""
	}
	return c.Row
}

// TestBadgePicksLocalLatestStudy: of three studies of the same series the latest recorded
// here wins over a later imported one; the others are named; a series without depth 0 is
// unresolved, not a row.
func TestBadgePicksLocalLatestStudy(t *testing.T) {
	all := []Series{series(1, "a", false, 0, 100, 512, 80), series(3, "a", false, 0, 90, 512, 60), series(9, "a", true, 0, 50, 512, 40),
		series(4, "z", false, 512, 80)}
	tb := Badges(all, Options{Line: 70, Test: "tg", Deep: 512})
	if len(tb.Rows) != 1 || tb.Rows[0].Study != 3 || fmt.Sprint(tb.Rows[0].OtherStudies) != "[1 9]" || tb.Rows[0].Imported {
		t.Fatalf("rows %+v", tb.Rows)
	}
	if tb.Rows[0].D0Only.Word != "earned" || tb.Rows[0].BothDepths.Word != "not earned" {
		t.Errorf("badges %+v", tb.Rows[0])
	}
	if len(tb.Unresolved) != 1 || tb.Unresolved[0].Study != 4 || !strings.Contains(tb.Unresolved[0].Reason, "no tg128 result at depth 0") {
		t.Errorf("unresolved %+v", tb.Unresolved)
	}
	// Only the imported study has it: it is used, flagged.
	tb = Badges([]Series{series(9, "a", true, 0, 50)}, Options{Line: 70, Test: "tg", Deep: 512})
	if len(tb.Rows) != 1 || !tb.Rows[0].Imported {
		t.Errorf("imported-only rows %+v", tb.Rows)
	}
}

// TestLadderStatistics: n, median (odd and even), mean, min–max per group, computed by hand.
func TestLadderStatistics(t *testing.T) {
	h := func(arch, ft string) header { return header{file: fakeHeader(arch, ft)} }
	a, b, c := series(1, "a", false, 0, 10), series(2, "b", false, 0, 20), series(3, "c", false, 0, 40)
	d := series(4, "d", false, 0, 30)
	d.Backend = "Vulkan"
	e := series(5, "e", false, 0, 30)
	e.BandwidthGBs = 0
	f := series(6, "f", false, 0, 30)
	hs := map[string]header{a.SHA256: h("llama", "ALL_F32"), b.SHA256: h("llama", "ALL_F32"), c.SHA256: h("llama", "ALL_F32"),
		d.SHA256: h("llama", "ALL_F32"), e.SHA256: h("llama", "ALL_F32"), f.SHA256: {err: "its file could not be read here (f.gguf): gone"}}
	l := BuildLadder([]Series{a, b, c, d, e, f}, "tg", hs)
	// fakeHeader: 1e9 active bytes per token, so the ceiling at 100 GB/s is 100 t/s.
	if len(l.Constants) != 2 {
		t.Fatalf("constants %+v", l.Constants)
	}
	cpu, vk := l.Constants[0], l.Constants[1]
	if cpu.Backend != "CPU" || cpu.N != 3 || cpu.Models != 3 || cpu.Studies != 3 || !near(cpu.Median, 0.2) || !near(cpu.Mean, 70.0/300) ||
		!near(cpu.Min, 0.1) || !near(cpu.Max, 0.4) {
		t.Errorf("CPU constant %+v", cpu)
	}
	if vk.Backend != "Vulkan" || vk.N != 1 || !near(vk.Median, 0.3) || vk.Members[0].D0.Row != "leg 400 seq 1" {
		t.Errorf("Vulkan constant %+v", vk)
	}
	two := BuildLadder([]Series{a, b}, "tg", hs)
	if !near(two.Constants[0].Median, 0.15) {
		t.Errorf("even median %g", two.Constants[0].Median)
	}
	if len(l.Unresolved) != 2 || !strings.Contains(l.Unresolved[0].Reason, "study 5 has no memory bandwidth") ||
		!strings.Contains(l.Unresolved[1].Reason, "could not be read here") {
		t.Errorf("unresolved %+v", l.Unresolved)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestOptionsRefused: a line that is not a positive finite number, a test that is not tg, a
// deep depth that is not positive.
func TestOptionsRefused(t *testing.T) {
	for _, o := range []Options{{Line: -1}, {Line: math.NaN()}, {Line: math.Inf(1)}, {Test: "pp512"}, {Test: "tg0"}, {Test: "tg12x"}, {Deep: -5}} {
		err := o.Defaults().Check()
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if err := (Options{}).Defaults().Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// fakeHeader is a dense model whose one tensor reads 1e9 bytes per token.
func fakeHeader(arch, fileType string) *gguf.File {
	return &gguf.File{Architecture: arch, FileTypeName: fileType, Size: 1e9, ParamCount: 2.5e8,
		Tensors: []gguf.Tensor{{Name: "blk.0.ffn_up.weight", Shape: []uint64{1e6, 250}, Size: 1e9}}}
}

// TestBadgeHeadingOfOlderTables: a badge table made before the exact-depth rule (an older
// overview receipt's overview.json, without deep_rule) keeps the heading it was written with,
// so its overview.md still re-makes byte for byte; a table made now says the rule.
func TestBadgeHeadingOfOlderTables(t *testing.T) {
	old := BadgeTable{Line: 70, Test: "tg", Deep: 8192}
	if got, want := BadgeHeading(old), `badge table: tg reaching 70 t/s; "d0 only" at depth 0, "both depths" at depth 0 and at 8192 (the nearest measured depth)`; got != want {
		t.Errorf("older table's heading:\n got %q\nwant %q", got, want)
	}
	now := Badges([]Series{series(1, "a", false, 0, 100, 256, 90)}, Options{Line: 70, Test: "tg", Deep: 8192})
	if now.DeepRule != DeepExact || !strings.Contains(BadgeHeading(now), "at depth 8192 itself (undecided where 8192 was not measured") {
		t.Errorf("a table made now: rule %q, heading %q", now.DeepRule, BadgeHeading(now))
	}
}
