package capacity

import (
	"slices"
	"strings"
	"testing"
)

// token_count_mismatch: a request answered 200 whose server predicted_n, or whose content
// events, differ from its tokens_predicted fails its probe with the code and the count; the
// other probes pass it.
func TestServingTokenCountMismatch(t *testing.T) {
	p := servingPlan()
	p.Serving.Search = nil
	sim := simServer{capacity: 100, tweak: func(probe int, r *ServingRecord) {
		switch {
		case probe == 0 && r.Seq == 2:
			r.Timings.PredictedN = r.Tokens + 1 // the server counted one more
		case probe == 1 && r.Seq == 4:
			r.Events = r.Tokens - 1 // one content event fewer than tokens
		}
	}}
	r := mustAssemble(t, p, servingInputs(t, p, sim))
	probes := candOf(t, r, "a").Serving[0].Probes
	if len(probes) < 3 {
		t.Fatalf("%d probes", len(probes))
	}
	for i, pr := range probes[:3] {
		var tg *GateCheck
		for j := range pr.Checks {
			if pr.Checks[j].Gate == "token_count" {
				tg = &pr.Checks[j]
			}
		}
		if tg == nil {
			t.Fatalf("probe %d has no token_count check: %+v", i, pr.Checks)
		}
		if i == 2 {
			if pr.TokenMismatch != 0 || !tg.Passed || slices.Contains(pr.Failures, CodeTokenMismatch) {
				t.Errorf("probe 2 (no mismatch): %d, %+v, failures %v", pr.TokenMismatch, *tg, pr.Failures)
			}
			continue
		}
		if pr.TokenMismatch != 1 || tg.Passed || tg.Observed == nil || *tg.Observed != 1 ||
			!strings.Contains(tg.Detail, "differ from tokens_predicted") || !slices.Contains(pr.Failures, CodeTokenMismatch) {
			t.Errorf("probe %d: %d mismatched, %+v, failures %v", i, pr.TokenMismatch, *tg, pr.Failures)
		}
	}
}
