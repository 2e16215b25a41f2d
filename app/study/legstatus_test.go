package study

import (
	"testing"

	"sparkbench/runner/vocab"
)

// A flagged attempt has results only for the rows it kept: one whose first row tripped a gate
// (device:not_used, a CV flag; 0 rows marked result) is a failed attempt, its plan leg is not
// final until the failures reach the retry limit, and no notebook leg counts for it. A flagged
// attempt that kept rows has results, as an ok one does.
func TestFlaggedAttemptWithoutKeptRowsHasNoResults(t *testing.T) {
	retries := 1
	p := &Plan{Retries: &retries}
	legs := []LegPlan{{ID: "tiny/d0"}, {ID: "tiny/d128"}}
	flagged := func(id int64, leg string, attempt, results, rows int) StoredLeg {
		return StoredLeg{ID: id, PlanLeg: leg, Role: RoleLeg, Attempt: attempt, State: LegFinished, Class: string(vocab.ClassFlagged),
			Reason: "tg: device:not_used", Rows: rows, Results: results, Flagged: 1, Discarded: rows - results - 1}
	}
	ok := StoredLeg{ID: 1, PlanLeg: "tiny/d0", Role: RoleLeg, Attempt: 1, State: LegFinished, Class: string(vocab.ClassOK), Rows: 2, Results: 2}

	st := LegStatuses(p, legs, []StoredLeg{ok, flagged(2, "tiny/d128", 1, 0, 2)})
	if st[0].Results != true || !st[0].Final {
		t.Errorf("an ok leg: %+v", st[0])
	}
	if got := st[1]; got.Results || got.Final || got.Failed != 1 || got.RetriesLeft() != 1 {
		t.Errorf("a flagged attempt that kept no rows reads as %+v; want no results, 1 failed attempt, not final", got)
	}
	final, counting := FinalLegs(p, legs, []StoredLeg{ok, flagged(2, "tiny/d128", 1, 0, 2)})
	if final["tiny/d128"] || counting["tiny/d128"].ID != 0 {
		t.Errorf("a flagged attempt that kept no rows counts: final %v, counting %+v", final, counting)
	}

	// The retry limit reached: final, still without results.
	st = LegStatuses(p, legs, []StoredLeg{ok, flagged(2, "tiny/d128", 1, 0, 2), flagged(3, "tiny/d128", 2, 0, 1)})
	if got := st[1]; got.Results || !got.Final || got.Failed != 2 {
		t.Errorf("two flagged attempts without rows at a limit of 2 attempts: %+v; want final without results", got)
	}

	// A flagged attempt that kept a row has results, and its rows count.
	st = LegStatuses(p, legs, []StoredLeg{ok, flagged(2, "tiny/d128", 1, 0, 2), flagged(3, "tiny/d128", 2, 1, 2)})
	if got := st[1]; !got.Results || !got.Final || got.Failed != 1 {
		t.Errorf("a flagged attempt that kept a row: %+v; want results, final", got)
	}
	if _, counting := FinalLegs(p, legs, []StoredLeg{ok, flagged(2, "tiny/d128", 1, 0, 2), flagged(3, "tiny/d128", 2, 1, 2)}); counting["tiny/d128"].ID != 3 {
		t.Errorf("the attempt that kept a row does not count: %+v", counting["tiny/d128"])
	}
}
