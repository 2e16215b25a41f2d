package quant

import (
	"bytes"
	"strings"
	"testing"

	"sparkbench/plots"
)

func TestAssembleAndMarkdown(t *testing.T) {
	p := goodPlan()
	rec := func(typ string, tg0, tg512, kld float64, mib int64, rss int64) Record {
		return Record{Type: typ, Key: strings.Repeat("a", 64), File: typ + ".gguf", SHA256: strings.Repeat("b", 64), Bytes: mib << 20, Bits: 4.5,
			Bench: []BenchCell{{Test: "tg", Depth: 0, Mean: tg0, N: 3, Leg: typ + "/d0"}, {Test: "tg", Depth: 512, Mean: tg512, N: 3, Leg: typ + "/d512"}},
			KLD:   &KLD{Mean: kld, P99: 5 * kld, Max: 20 * kld, SameTopP: 0.97, PPLRatio: 1.002}, KLDLeg: "kld/" + typ, KLDLines: []int{40, 41, 42, 50, 38}, PeakRSS: rss << 20}
	}
	recs := []Record{rec("Q4_0", 300, 151, 0.0031, 14, 90), rec("Q8_0", 200, 100, 0.0005, 27, 110)}
	res, err := Assemble(p, "plan-sha", recs)
	if err != nil {
		t.Fatal(err)
	}
	// Q4_K_M has no record: in the table, unmeasured, rejected for it.
	if len(res.Candidates) != 3 || res.Candidates[1].Type != "Q4_K_M" || res.Records[1].Incomplete[0] != "not run" {
		t.Fatalf("candidates %+v", res.Candidates)
	}
	if res.Selection.Selected != "Q4_0" || res.Selection.RunnerUp != "Q8_0" {
		t.Fatalf("selection %+v", res.Selection)
	}
	if c := res.Candidates[2]; c.PeakRSSMiB == nil || *c.PeakRSSMiB != 90 || c.Speed["tg@512"] != 151 {
		t.Fatalf("Q4_0 %+v", c)
	}
	md := Markdown(res)
	for _, want := range []string{
		"| Q4_0 | 4.50 | 14.0 | 300.00 | 151.00 | 0.003100 | 0.015500 | 0.062000 | 97.00% | 1.0020 | 90.0 | **selected** |",
		"| Q4_K_M | 0.00 | 0.0 | — | — | — | — | — | — | — | — | speed_missing, kld_missing |",
		"**Selected: Q4_0** — Q4_0: tg@512 151.00 t/s, the highest of the 2 candidates within every limit. Runner-up: Q8_0.",
		"On the frontier: Q8_0, Q4_0.",
		"| Q4_0 | `bbbbbbbbbbbb` | `aaaaaaaaaaaa` | quantized | kld/Q4_0 (40, 41, 42, 50, 38) | Q4_0/d0, Q4_0/d512 |",
		"- Q4_K_M: not run",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("receipt lacks %q:\n%s", want, md)
		}
	}
	again, _ := Assemble(p, "plan-sha", recs)
	if !bytes.Equal(md, Markdown(again)) {
		t.Error("the same records gave other bytes")
	}
	if _, err := Assemble(p, "x", []Record{{Type: "Q2_K"}}); err == nil || !strings.Contains(err.Error(), "does not list") {
		t.Errorf("a record of a type not in the plan: %v", err)
	}
	if _, err := Assemble(p, "x", []Record{{Type: "Q4_0"}, {Type: "Q4_0"}}); err == nil {
		t.Error("two records of one type were taken")
	}
}

// TestCharts: the KLD-against-bits chart takes every candidate with a KLD and a size, the
// selected one marked; the depth charts a series per measured candidate in plan order, its
// points sorted by depth; a test nobody measured has no chart.
func TestCharts(t *testing.T) {
	p := goodPlan()
	rec := func(typ string, bits, kld float64) Record {
		return Record{Type: typ, File: typ + ".gguf", Bits: bits, Bytes: 10 << 20,
			Bench: []BenchCell{{Test: "tg", Depth: 512, Mean: 100 * bits, N: 3}, {Test: "tg", Depth: 0, Mean: 200 * bits, N: 3}},
			KLD:   &KLD{Mean: kld, P99: 2 * kld}}
	}
	res, err := Assemble(p, "x", []Record{rec("Q8_0", 8.5, 0.0001), rec("Q4_0", 4.5, 0.003)})
	if err != nil {
		t.Fatal(err)
	}
	names, charts := Charts(res, plots.Meta{})
	if strings.Join(names, ",") != "pareto,kld-bits,candidates-tg" || len(charts) != 3 {
		t.Fatalf("charts %v", names)
	}
	kb := charts[1].(plots.KLDBitsChart)
	if len(kb.Points) != 2 || kb.Points[0].Label != "Q8_0" || kb.Points[1].Selected != (res.Selection.Selected == "Q4_0") || kb.Points[1].KLDP99 != 0.006 {
		t.Fatalf("kld-bits %+v (selected %s)", kb.Points, res.Selection.Selected)
	}
	d := charts[2].(plots.DepthChart)
	if len(d.Series) != 2 || !strings.HasPrefix(d.Series[0].Label, "Q8_0") || d.Series[0].Points[0].Depth != 0 || d.Series[0].Points[1].Mean != 850 {
		t.Fatalf("depth %+v", d.Series)
	}
	md := string(Markdown(res))
	if !strings.Contains(md, "(plots/kld-bits.png)") || !strings.Contains(md, "(plots/candidates-tg.png)") || strings.Contains(md, "candidates-pp") {
		t.Errorf("receipt links:\n%s", md)
	}
}
