package study

import (
	"testing"
	"time"

	"sparkbench/runner"
)

// One wording for every event, the CLI's and the window console's.
func TestEventText(t *testing.T) {
	pr := Progress{LegsDone: 1, LegsTotal: 4}
	v := Verdict{Prediction: "P1", Outcome: Hit, Detail: "9000 inside >= 1000"}
	for _, c := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: EventRunStarted, Progress: pr}, "resuming: 1/4 legs finished before"},
		{Event{Kind: EventRunStarted}, ""},
		{Event{Kind: EventLegStarted, Leg: "tiny/d128", Role: RoleLeg, Attempt: 2, Argv: []string{"llama-bench", "-m", "a b.gguf"}, Progress: pr},
			`leg 2/4 tiny/d128 (attempt 2) started: llama-bench -m "a b.gguf"`},
		{Event{Kind: EventLegStarted, Leg: "canary after tiny/d128", Role: RoleCanary, Argv: []string{"llama-bench"}}, "canary after tiny/d128 started: llama-bench"},
		{Event{Kind: EventSample, Leg: "tiny/d0", Sample: &runner.Sample{Test: "tg32", AvgTs: 9000, CV: 0.012}}, "  tiny/d0 tg32                9000.00 t/s  cv   1.2%"},
		{Event{Kind: EventLine, Line: &runner.Line{Text: "main: loaded", Dropped: 3}}, "  │ main: loaded   [3 earlier line(s) not shown: the console fell behind; the leg's transcript keeps them]"},
		{Event{Kind: EventFlagged, Leg: "tiny/d0", Flagged: &runner.Flagged{Reason: "cv 9% above 5%"}}, "  tiny/d0 flagged: cv 9% above 5%; the leg halts, the study continues"},
		{Event{Kind: EventLegFinished, Leg: "tiny/d0", Outcome: &LegOutcome{Class: "crashed", Results: 0, Expected: 2, Discarded: 1, Duration: 1500 * time.Millisecond, Reason: "killed by SIGSEGV"}},
			"leg tiny/d0 crashed: 0/2 results (0 flagged, 1 discarded) in 1.5s: killed by SIGSEGV"},
		{Event{Kind: EventCanary, Canary: &runner.Canary{After: "tiny/d0", Pass: false, Reason: "tg 40% below its baseline"}}, "canary after tiny/d0 FAILED: tg 40% below its baseline"},
		{Event{Kind: EventVerdict, Verdict: &v}, "verdict P1: HIT (9000 inside >= 1000)"},
		{Event{Kind: EventHalted, Reason: "stopped by the user"}, "halted: stopped by the user"},
		{Event{Kind: EventProgress, Progress: pr}, ""},
	} {
		if got := EventText(c.e); got != c.want {
			t.Errorf("%s: got %q, want %q", c.e.Kind, got, c.want)
		}
	}
}
