package study

import "testing"

func TestHeadline(t *testing.T) {
	r := &Report{Results: []ReportCell{
		{Model: "tiny", Test: "pp64", Depth: 0, Mean: 5000},
		{Model: "tiny", Test: "tg32", Depth: 128, Mean: 900},
		{Model: "tiny", Test: "tg32", Depth: 0, Mean: 1234.4},
		{Model: "moe", Test: "tg32", Depth: 0, Mean: 9999},
	}}
	if got := Headline(r); got != "tiny tg32 at d0: 1234 t/s" {
		t.Errorf("headline %q", got)
	}
	if got := Headline(&Report{Results: []ReportCell{{Model: "m", Test: "pp512", Depth: 0, Mean: 8.456, Config: "ub256"}}}); got != "m pp512 at d0: 8.46 t/s" {
		t.Errorf("pp only: %q", got)
	}
	if Headline(&Report{}) != "" || Headline(nil) != "" {
		t.Errorf("no results: want no headline")
	}
}
