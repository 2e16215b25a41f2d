package loadgen

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConversationsTurnsInOrder: with Follows, first turns go out on the schedule (two
// conversations 5 ms apart, both in flight at once) and each later turn is sent only after the
// turn before it ended, due at that end; a turn whose predecessor failed is not sent, saying
// why, and neither is anything after it.
func TestConversationsTurnsInOrder(t *testing.T) {
	f, err := StartFake(FakeConfig{TTFT: 30 * time.Millisecond, ITL: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Measured: conversation A = requests 0, 1, 2; conversation B = 3, 4; C = 5, 6.
	prompts := []string{"A1", "A2", "A3", "B1", "B2", "C1", "C2"}
	follows := []int{-1, 0, 1, -1, 3, -1, 5}
	fail, _ := StartFake(FakeConfig{Fault: func(int) Fault {
		return Fault{Status: 500, Body: `{"error":{"code":500,"message":"boom","type":"server_error"}}`}
	}})
	defer fail.Close()
	a := Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: len(prompts), NPredict: 3,
		Prompt: func(i int) string { return prompts[i] }, Schedule: []time.Duration{0, 5 * time.Millisecond, 10 * time.Millisecond}, Follows: follows})
	rs := collect(a)
	if len(rs) != len(prompts) {
		t.Fatalf("%d results", len(rs))
	}
	slices.SortFunc(rs, func(x, y Result) int { return x.Seq - y.Seq })
	for k, r := range rs {
		if !r.OK() {
			t.Fatalf("request %d: %+v", k, r)
		}
		if p := follows[k]; p >= 0 {
			if r.Scheduled != rs[p].End || r.Send < rs[p].End {
				t.Errorf("request %d due %v, sent %v; the turn before it ended %v", k, r.Scheduled, r.Send, rs[p].End)
			}
		}
	}
	if d := rs[3].Scheduled - rs[0].Scheduled; d != 5*time.Millisecond {
		t.Errorf("conversation B due %v after A, want 5ms (the schedule)", d)
	}
	if rs[3].Send > rs[0].End {
		t.Errorf("conversation B waited for A's first turn (sent %v, A ended %v): conversations are open-loop", rs[3].Send, rs[0].End)
	}
	// A failing first turn: its conversation's later turns are not sent.
	b := Start(context.Background(), Config{URL: fail.URL, Clients: 1, Measured: 3, NPredict: 3,
		Prompt: func(i int) string { return prompts[i] }, Schedule: []time.Duration{0}, Follows: []int{-1, 0, 1}})
	rs = collect(b)
	slices.SortFunc(rs, func(x, y Result) int { return x.Seq - y.Seq })
	if rs[0].HTTPStatus != 500 || !rs[1].NotSent || !rs[2].NotSent || !strings.Contains(rs[1].Error, "the turn before it (request 0) got no reply (HTTP 500: boom)") {
		t.Errorf("after a failed turn: %+v", rs)
	}
	// Refused layouts.
	for _, c := range []struct {
		follows []int
		sched   int
		want    string
	}{
		{[]int{-1, 0}, 2, "2 send times for 1 first turns"},
		{[]int{-1, 1}, 1, "follows[1] = 1"},
		{[]int{-1, 0, 0}, 1, "already followed"},
		{[]int{-1}, 1, "1 entries for 2 measured"},
	} {
		m := max(len(c.follows), 2)
		r := collect(Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: m, NPredict: 3, Prompt: func(int) string { return "x" },
			Schedule: make([]time.Duration, c.sched), Follows: c.follows}))
		if !r[0].NotSent || !strings.Contains(r[0].Error, c.want) {
			t.Errorf("follows %v: %+v, want %q", c.follows, r[0], c.want)
		}
	}
}
