package workbench

import (
	"strings"
	"testing"
)

// The capacity comparison's per-request tests pool the requests of every pass: a comparison
// made now says so in its footer (the CLI's and the receipt's); one made before (no
// requests_pooled) keeps the footer it was made with, so its receipt re-makes byte for byte.
func TestCapacityCompareFooterSaysPooled(t *testing.T) {
	now := CapacityCompareFooter(&CapacityComparison{Alpha: 0.05, RequestsPooled: true})
	if !strings.Contains(now, "These per-request figures are POOLED across passes") || !strings.Contains(now, "The unit is\nthe pass (one server lifetime)") {
		t.Errorf("footer now:\n%s", now)
	}
	old := CapacityCompareFooter(&CapacityComparison{Alpha: 0.05})
	if strings.Contains(old, "POOLED") || !strings.HasSuffix(old, "(two-sided): ~ when p >= 0.05 (no significant difference)\n") {
		t.Errorf("an old comparison's footer changed:\n%s", old)
	}
}
