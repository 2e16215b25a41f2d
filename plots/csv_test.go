package plots

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// A chart's CSV is its points, one row each, with the series label: checked on the depth and
// slots examples against their inputs; a chart without series of points says what to do.
func TestCSV(t *testing.T) {
	d := DepthChart{Metric: "tg128", Series: []DepthSeries{
		{Label: "q8", Points: []DepthPoint{{Depth: 0, Mean: 71.5, SD: 0.4, N: 3}, {Depth: 4096, Mean: 60.25, SD: 0.5, N: 3}}},
		{Label: "q4, fa", Points: []DepthPoint{{Depth: 0, Mean: 90, SD: 1, N: 3}, {Depth: 4096, Missing: true}}},
	}}
	b, err := CSV(d)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"series", "depth", "mean", "missing", "n", "sd"},
		{"q8", "0", "71.5", "", "3", "0.4"}, {"q8", "4096", "60.25", "", "3", "0.5"},
		{"q4, fa", "0", "90", "", "3", "1"}, {"q4, fa", "4096", "0", "true", "0", "0"}}
	if len(recs) != len(want) {
		t.Fatalf("rows %q, want %q", recs, want)
	}
	for i := range want {
		if strings.Join(recs[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: %q, want %q", i, recs[i], want[i])
		}
	}
	for _, k := range Kinds() {
		c := loadChart(t, k)
		b, err := CSV(c)
		switch k {
		case KindEnvelope, KindPareto, KindTimeline, KindServingSearch, KindKLDBits:
			if err != nil && !strings.Contains(err.Error(), "copy its JSON input instead") {
				t.Errorf("%s: %v", k, err)
			}
		default:
			if err != nil || bytes.Count(b, []byte("\n")) < 2 {
				t.Errorf("%s: %d bytes, %v", k, len(b), err)
			}
		}
	}
}
