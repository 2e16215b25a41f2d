package remote

import (
	"strings"
	"testing"
)

// A host's bandwidth_gbs label is its memory bandwidth in GB/s: a positive number, else
// Validate names the label and says what it must be.
func TestHostBandwidthLabel(t *testing.T) {
	h := Host{Name: "spark", SSH: "lab", LlamaDir: "~/llama.cpp/bin", Labels: map[string]string{"box": "tower"}}
	if g, ok := h.BandwidthGBs(); ok || g != 0 {
		t.Fatalf("no label: %g %v", g, ok)
	}
	h.Labels[BandwidthLabel] = " 256.5 "
	if probs := h.Validate(); len(probs) != 0 {
		t.Fatalf("a good label refused: %v", probs)
	}
	if g, ok := h.BandwidthGBs(); !ok || g != 256.5 {
		t.Fatalf("label 256.5: %g %v", g, ok)
	}
	for _, bad := range []string{"", "fast", "0", "-3", "NaN", "Inf", "2e7"} {
		h.Labels[BandwidthLabel] = bad
		probs := strings.Join(h.Validate(), "; ")
		if !strings.Contains(probs, "host spark: labels: bandwidth_gbs=") || !strings.Contains(probs, "a positive number") {
			t.Errorf("label %q: %q", bad, probs)
		}
		if _, ok := h.BandwidthGBs(); ok {
			t.Errorf("label %q read as a bandwidth", bad)
		}
	}
}
