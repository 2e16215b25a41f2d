package runner

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A live leg and an import check rows with the same benchfmt.Result.Check: a row with a
// negative rate or token count is reported as malformed, not counted as a result.
func TestFaultsLegRejectsRowsWithImpossibleValues(t *testing.T) {
	leg := StartLeg(context.Background(), LegSpec{Bench: "/bin/sh", NoFingerprint: true,
		Args: []string{"-c", `echo '{"n_prompt": 64, "n_gen": 0, "avg_ts": -5}'; echo '{"n_prompt": 0, "n_gen": -8, "avg_ts": 5}'; echo '{"n_prompt": 64, "n_gen": 0, "avg_ts": 5}'`}})
	evs := collect(t, leg.Events(), 10*time.Second)
	res := leg.Result()
	mal := ofType(evs, EventMalformed)
	if len(mal) != 2 || mal[0].Malformed.Err != "avg_ts is -5: a rate must be a number > 0 tokens/s" ||
		mal[1].Malformed.Err != "n_gen is -8: a token count cannot be negative" || len(res.Rows) != 1 {
		var errs []string
		for _, m := range mal {
			errs = append(errs, m.Malformed.Err)
		}
		t.Fatalf("malformed %q rows %d", strings.Join(errs, "; "), len(res.Rows))
	}
}
