package capacity

import (
	"strings"
	"testing"
)

// A capacity cell's figures are medians over its passes, and show says so with their count
// and names (issue 31, item 6): the pass, one server lifetime, is the unit; percentiles are
// per pass, never pooled.
func TestUnitsLineNamesThePasses(t *testing.T) {
	got := UnitsLine([]PassMetrics{{Pass: PassForward}, {Pass: PassReverse}, {Pass: "forward2"}})
	for _, want := range []string{"median over the cell's 3 pass(es) (forward, reverse, forward2)", "each pass one server lifetime: the unit of replication",
		"never pooled across passes", "(max − min) / median over the passes"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
