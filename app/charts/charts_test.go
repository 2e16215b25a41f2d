package charts

import (
	"strings"
	"testing"
	"time"

	"sparkbench/app/study"
)

func report() *study.Report {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(m int) *time.Time { t := t0.Add(time.Duration(m) * time.Minute); return &t }
	cfg := "ub512 b2048 fa-auto kv-f16/f16 t1 ngl-1"
	r := &study.Report{Study: study.ReportStudy{ID: 3, Name: "demo"}}
	r.Legs = []study.ReportLeg{
		{PlanLeg: "tiny/d0#start", Counts: true, Started: at(0)},
		{PlanLeg: "tiny/d0", Counts: true, Started: at(1), Conditions: []string{"download running"}},
		{PlanLeg: "tiny/d128", Counts: true, Started: at(2)},
		{PlanLeg: "tiny/d0#end", Counts: true, Started: at(3)},
	}
	r.Results = []study.ReportCell{
		{Model: "tiny", Leg: "tiny/d0#start", Test: "tg32", Depth: 0, Config: cfg, Mean: 9450, SD: 10, Reps: 3},
		{Model: "tiny", Leg: "tiny/d0", Test: "tg32", Depth: 0, Config: cfg, Mean: 9000, SD: 10, Reps: 3},
		{Model: "tiny", Leg: "tiny/d0", Test: "pp64", Depth: 0, Config: cfg, Mean: 30000, SD: 10, Reps: 3},
		{Model: "tiny", Leg: "tiny/d128", Test: "tg32", Depth: 128, Config: cfg, Mean: 7000, SD: 10, Reps: 3},
		{Model: "tiny", Leg: "tiny/d0#end", Test: "tg32", Depth: 0, Config: cfg, Mean: 8550, SD: 10, Reps: 3},
	}
	return r
}

func TestDepthLeavesRepeatsOut(t *testing.T) {
	c, err := Depth(report(), "tg", 8000)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metric != "tg32" || len(c.Series) != 1 || len(c.Series[0].Points) != 2 || c.Series[0].Points[0].Mean != 9000 || c.RefLine != 8000 {
		t.Fatalf("depth chart: %+v", c)
	}
	if _, err := c.Plot(); err != nil {
		t.Fatal(err)
	}
	if _, err := Depth(report(), "tg128", 0); err == nil || !strings.Contains(err.Error(), "no tg128 results") {
		t.Fatalf("missing metric: %v", err)
	}
}

func TestRepeatabilityInRunOrder(t *testing.T) {
	c, err := Repeatability(report(), "tg")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Series) != 1 {
		t.Fatalf("series: %+v", c.Series)
	}
	var got []float64
	for _, p := range c.Series[0].Points {
		got = append(got, p.Value)
	}
	if len(got) != 3 || got[0] != 9450 || got[1] != 9000 || got[2] != 8550 || c.Series[0].Points[1].Condition != "download running" {
		t.Fatalf("points: %+v", c.Series[0].Points)
	}
	if _, err := c.Plot(); err != nil {
		t.Fatal(err)
	}
}

func TestUbatchNeedsASweep(t *testing.T) {
	r := report()
	if _, err := Ubatch(r, "pp"); err == nil || !strings.Contains(err.Error(), "no ubatch sweep") {
		t.Fatalf("no sweep: %v", err)
	}
	r.Results = append(r.Results, study.ReportCell{Model: "tiny", Leg: "tiny/d0/ub1024", Test: "pp64", Depth: 0, Config: "ub1024 b2048 fa-auto kv-f16/f16 t1 ngl-1", Mean: 31000, Reps: 3})
	c, err := Ubatch(r, "pp")
	if err != nil || len(c.Series) != 1 || c.Series[0].PromptTokens != 64 || c.Series[0].Points[1].Ubatch != 1024 {
		t.Fatalf("ubatch: %+v %v", c, err)
	}
}
