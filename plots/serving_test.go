package plots

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// servingCharts are the serving kinds' example inputs in testdata (the CLI's Decode does not
// list them).
func servingCharts(t testing.TB) []Chart {
	t.Helper()
	read := func(k Kind, into any) {
		b, err := os.ReadFile(filepath.Join("testdata", string(k)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	var lat ServingLatencyChart
	var good ServingGoodputChart
	var search ServingSearchChart
	read(KindServingLatency, &lat)
	read(KindServingGoodput, &good)
	read(KindServingSearch, &search)
	return []Chart{lat, good, search}
}

// TestServingGolden draws each serving kind from its example and compares the PNG with the
// reviewed image.
func TestServingGolden(t *testing.T) {
	for _, c := range servingCharts(t) {
		t.Run(string(c.Kind()), func(t *testing.T) {
			p, err := c.Plot()
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, string(c.Kind()), exportBytes(t, p, PNG))
		})
	}
}

// TestServingExportDeterministic: receipts re-render these at verify and compare bytes.
func TestServingExportDeterministic(t *testing.T) {
	for _, c := range servingCharts(t) {
		for _, f := range []Format{PNG, SVG, PDF} {
			t.Run(string(c.Kind())+"/"+string(f), func(t *testing.T) {
				p1, err := c.Plot()
				if err != nil {
					t.Fatal(err)
				}
				p2, _ := c.Plot()
				if a, b := exportBytes(t, p1, f), exportBytes(t, p2, f); !bytes.Equal(a, b) {
					t.Fatalf("two exports differ (%d and %d bytes)", len(a), len(b))
				}
			})
		}
	}
}

func TestServingNotesAndErrors(t *testing.T) {
	if _, err := ServingLatency(ServingLatencyChart{Percentile: 90}); err == nil {
		t.Fatal("percentile 90 accepted")
	}
	if _, err := ServingLatency(ServingLatencyChart{TTFTSLOMs: -1}); err == nil {
		t.Fatal("negative SLO accepted")
	}
	p, err := ServingLatency(ServingLatencyChart{Series: []ServingSeries{{Label: "a", Points: []ServingPoint{{Rate: 1, TTFTMs: -3, TPOTMs: 20}}}}})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(headerOf(p).notes, "\n")
	for _, want := range []string{"a: 1 value(s) not drawn", "no TTFT SLO given", "no TPOT SLO given"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	p, _ = ServingSearch(ServingSearchChart{Series: []SearchSeries{{Label: "b"}}})
	if notes := strings.Join(headerOf(p).notes, "\n"); !strings.Contains(notes, "b: no search probe") {
		t.Errorf("search notes: %s", notes)
	}
	if legend := headerOf(p).entries; len(legend) == 0 || !strings.Contains(legend[0].label, "no rate found") {
		t.Errorf("search legend: %+v", legend)
	}
}
