package charts

import (
	"strings"
	"testing"

	"sparkbench/app/study"
)

func TestEnergyByDepthFromTheReportsCells(t *testing.T) {
	r := report()
	if EnergyMetrics(r) != nil {
		t.Fatal("a study without energy offers an energy chart")
	}
	if _, err := Energy(r, "tg"); err == nil || !strings.Contains(err.Error(), "no energy figures") {
		t.Fatalf("no energy: %v", err)
	}
	r.Energy = &study.ReportEnergy{Cells: []study.EnergyCell{
		{Model: "tiny", Leg: "tiny/d128", Test: "tg32", Depth: 128, Kind: "tg", JPerToken: 0.5, MeanW: 100},
		{Model: "tiny", Leg: "tiny/d0", Test: "tg32", Depth: 0, Kind: "tg", JPerToken: 0.4, MeanW: 100},
		{Model: "tiny", Leg: "tiny/d0#end", Test: "tg32", Depth: 0, Kind: "tg", JPerToken: 9, MeanW: 100},
		{Model: "tiny", Leg: "tiny/d0", Test: "pp64", Depth: 0, Kind: "pp", JPerToken: 0.01, MeanW: 100},
	}}
	if got := EnergyMetrics(r); strings.Join(got, ",") != "tg,pp" {
		t.Fatalf("metrics = %v", got)
	}
	c, err := Energy(r, "tg")
	if err != nil {
		t.Fatal(err)
	}
	if c.Metric != "tg32" || len(c.Series) != 1 || len(c.Series[0].Points) != 2 {
		t.Fatalf("energy chart: %+v", c)
	}
	if p := c.Series[0].Points; p[0].Depth != 0 || p[0].JPerToken != 0.4 || p[1].Depth != 128 || p[1].JPerToken != 0.5 {
		t.Fatalf("points (repeat copy left out, in depth order): %+v", p)
	}
	if _, err := c.Plot(); err != nil {
		t.Fatal(err)
	}
	if _, err := Energy(r, "pg"); err == nil || !strings.Contains(err.Error(), "no pg energy") {
		t.Fatalf("missing metric: %v", err)
	}
}
