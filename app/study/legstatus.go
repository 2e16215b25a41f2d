package study

import (
	"fmt"
	"strings"

	"sparkbench/runner/vocab"
)

// Where each plan leg stands across its attempts: whether it has results, whether it is final
// (results, or failures at the plan's retry limit), and the attempt whose rows count. The
// engine, Show and the receipts all read the legs through these.

// finalLegs maps each plan leg to the notebook leg whose rows count for it: its latest
// attempt that ended with results (ok, or flagged by a gate after rows it kept). A leg the user
// stopped, one that crashed or was refused, and one a dead process left interrupted have no
// results: they count toward nothing (see legStatus).
func finalLegs(stored []StoredLeg) map[string]StoredLeg {
	out := map[string]StoredLeg{}
	for _, s := range stored {
		if s.Role == RoleLeg && hasResults(s) {
			out[s.PlanLeg] = s
		}
	}
	return out
}

// hasResults reports whether a leg attempt ended with results: it finished ok, or a gate
// flagged a test after earlier rows (those rows count; the flag is the measured answer). A
// flagged attempt has results only for the rows it kept (StoredLeg.Results, the rows marked
// result): one whose first row tripped the gate kept none, so it is a failed attempt that counts
// toward the retry limit, and its plan leg is not final until a later attempt has rows or the
// failures reach the limit.
func hasResults(s StoredLeg) bool {
	if s.State != LegFinished {
		return false
	}
	switch vocab.Class(s.Class) {
	case vocab.ClassOK, "":
		return true
	case vocab.ClassFlagged:
		return s.Results > 0
	}
	return false
}

// HasResults reports whether a leg attempt (or an adaptive leg's chunk) ended with results.
func HasResults(s StoredLeg) bool { return hasResults(s) }

// failedAttempt reports whether a leg attempt ended without results through a failure of the
// leg itself (crashed, bad arguments, out of memory, timeout, …): those count toward the plan's
// retry limit. A stop by the user and an attempt a dead process left interrupted do not.
func failedAttempt(s StoredLeg) bool {
	return s.State == LegFinished && !hasResults(s) && s.Class != string(vocab.ClassStoppedByUser)
}

// LegStatus is where one plan leg stands: whether it has results, how many attempts failed,
// and whether it is final (results, or its failures reached the plan's retry limit). A leg that
// is not final is run again by the next Run, and a prediction that reads it stays PENDING.
type LegStatus struct {
	Leg         string    `json:"leg"`
	Results     bool      `json:"results"`
	Attempts    int       `json:"attempts"`     // attempts recorded, of every kind
	Failed      int       `json:"failed"`       // attempts that ended without results by a failure
	MaxAttempts int       `json:"max_attempts"` // 1 + the plan's retries
	Final       bool      `json:"final"`
	Last        StoredLeg `json:"-"` // the latest attempt (zero when none)
}

// RetriesLeft is how many more failed attempts the plan allows before the leg is final.
func (s LegStatus) RetriesLeft() int { return max(s.MaxAttempts-s.Failed, 0) }

// FinalLegs is how the engine reads a study's recorded legs (stored in the order they
// started): which plan legs are final (Results.Finished: results, or failures at the plan's
// retry limit) and, for each plan leg with results, the notebook leg whose rows count. Receipts
// read a bundle's legs through it too, so a receipt and `study show` never disagree.
func FinalLegs(p *Plan, legs []LegPlan, stored []StoredLeg) (final map[string]bool, counting map[string]StoredLeg) {
	final = map[string]bool{}
	for _, st := range LegStatuses(p, legs, stored) {
		if st.Final {
			final[st.Leg] = true
		}
	}
	return final, finalLegs(stored)
}

// LegStatuses is the status of every plan leg, in plan order.
func LegStatuses(p *Plan, legs []LegPlan, stored []StoredLeg) []LegStatus {
	idx := map[string]int{}
	out := make([]LegStatus, len(legs))
	for i, lp := range legs {
		idx[lp.ID] = i
		out[i] = LegStatus{Leg: lp.ID, MaxAttempts: 1 + p.RetryLimit()}
	}
	for _, s := range stored {
		i, ok := idx[s.PlanLeg]
		if s.Role != RoleLeg || !ok {
			continue
		}
		st := &out[i]
		st.Attempts++
		st.Last = s
		if hasResults(s) {
			st.Results = true
		}
		if failedAttempt(s) {
			st.Failed++
		}
	}
	for i := range out {
		out[i].Final = out[i].Results || out[i].Failed >= out[i].MaxAttempts
	}
	return out
}

// ReadsAny reports whether the prediction reads one of the legs.
func ReadsAny(p Prediction, legs []LegPlan, set map[string]bool) bool {
	if len(set) == 0 {
		return false
	}
	touched := Touches(p.About, legs)
	if p.Than != nil {
		touched = append(touched, Touches(*p.Than, legs)...)
	}
	for _, t := range touched {
		if set[t] {
			return true
		}
	}
	return false
}

// Reopen checks a run's --retry request (the legs named in retry) against the plan and the
// notebook: each leg must be a plan leg without results; a final one is reopened (not final
// until its new attempt ends); one whose failures have not reached the limit runs anyway.
func (l *Loaded) Reopen(retry []string) error {
	l.Reopened = map[string]bool{}
	if len(retry) == 0 {
		return nil
	}
	statuses := map[string]LegStatus{}
	var ids []string
	for _, st := range LegStatuses(l.Plan, l.Legs, l.Stored) {
		statuses[st.Leg] = st
		ids = append(ids, st.Leg)
	}
	for _, leg := range retry {
		st, ok := statuses[leg]
		switch {
		case !ok:
			return &RetryError{fmt.Sprintf("--retry %s: not a leg of this study's plan; its legs are %s", leg, strings.Join(ids, ", "))}
		case st.Results:
			return &RetryError{fmt.Sprintf("--retry %s: the leg has results (%s, attempt %d); only a leg that ended without results is retried (record a deviation to re-measure it)",
				leg, st.Last.Label, st.Last.Attempt)}
		case st.Final:
			l.Reopened[leg] = true
		}
	}
	return nil
}
