package loadgen

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func constantSchedule(n int, gap time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for k := range s {
		s[k] = time.Duration(k) * gap
	}
	return s
}

// TestOpenLoopSendsOnTheSchedule: with an open-loop schedule the requests go out at their due
// times whatever the earlier ones are doing: one client level of 1 still has many requests in
// flight at the fake (each takes 200 ms, one is due every 2 ms), every result carries its due
// time exactly as scheduled, and none is sent before it is due.
func TestOpenLoopSendsOnTheSchedule(t *testing.T) {
	f, err := StartFake(FakeConfig{TTFT: 200 * time.Millisecond, ITL: time.Millisecond, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sched := constantSchedule(20, 2*time.Millisecond)
	a := Start(context.Background(), Config{URL: f.URL, Clients: 1, Warmups: 1, Measured: 20, NPredict: 4,
		Prompt: prompt, Schedule: sched})
	rs := collect(a)
	var measured []Result
	for _, r := range rs {
		if !r.OK() || r.Tokens != 4 {
			t.Fatalf("result %+v", r)
		}
		if r.Phase == PhaseMeasured {
			measured = append(measured, r)
		} else if r.Scheduled != 0 {
			t.Errorf("warmup %d has a due time %v: warmups are closed-loop", r.Seq, r.Scheduled)
		}
	}
	if len(measured) != 20 {
		t.Fatalf("%d measured results, want 20", len(measured))
	}
	slices.SortFunc(measured, func(x, y Result) int { return x.Seq - y.Seq })
	t0 := measured[0].Scheduled
	for k, r := range measured {
		if got := r.Scheduled - t0; got != sched[k] {
			t.Errorf("request %d due at +%v, the schedule says +%v", k, got, sched[k])
		}
		if r.Send < r.Scheduled {
			t.Errorf("request %d sent at %v before it was due at %v", k, r.Send, r.Scheduled)
		}
	}
	// Requests in flight at the fake: received before an earlier one's final event.
	served := served(t, f, 21)
	overlap := 0
	for i, s := range served {
		for _, o := range served[:i] {
			if s.Received.Before(o.Final) && o.Received.Before(s.Received) {
				overlap++
				break
			}
		}
	}
	if overlap == 0 {
		t.Errorf("no request arrived while another was in flight: the load was not open-loop")
	}
}

// TestOpenLoopBoundedInFlightDelaysSends: a client allowed one request in flight cannot keep
// a schedule of one request every millisecond against a server that takes at least 10 ms per
// request: each send waits for the previous request's end, and the delays say so (the k-th
// send is at least k × 10 ms after the first while due k × 1 ms after it).
func TestOpenLoopBoundedInFlightDelaysSends(t *testing.T) {
	f, err := StartFake(FakeConfig{TTFT: 10 * time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: 8, NPredict: 2,
		Prompt: prompt, Schedule: constantSchedule(8, time.Millisecond), MaxInFlight: 1})
	rs := collect(a)
	slices.SortFunc(rs, func(x, y Result) int { return x.Seq - y.Seq })
	for k, r := range rs {
		if !r.OK() {
			t.Fatalf("result %+v", r)
		}
		if k > 0 && r.Send < rs[k-1].End {
			t.Errorf("request %d sent at %v before request %d ended at %v: more than one in flight", k, r.Send, k-1, rs[k-1].End)
		}
	}
	last := rs[len(rs)-1]
	if delay := last.Send - last.Scheduled; delay < 7*(10-1)*time.Millisecond {
		t.Errorf("last send delay %v: want at least 63 ms (7 waits of >= 10 ms for 7 gaps of 1 ms)", delay)
	}
}

// TestOpenLoopStreamCutIsAnError: a server that drops a stream mid-response gives an error
// result, never a short success, in an open loop as in a closed one.
func TestOpenLoopStreamCutIsAnError(t *testing.T) {
	f, err := StartFake(FakeConfig{ITL: time.Millisecond, Fault: func(n int) Fault {
		if n == 2 {
			return Fault{CutAfter: 3}
		}
		return Fault{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs := collect(Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: 4, NPredict: 8,
		Prompt: prompt, Schedule: constantSchedule(4, 20*time.Millisecond)}))
	bad := 0
	for _, r := range rs {
		if r.OK() {
			continue
		}
		bad++
		if !strings.Contains(r.Error, "without the final event") || r.Tokens == 8 {
			t.Errorf("cut stream: %+v", r)
		}
	}
	if bad != 1 {
		t.Errorf("%d failed requests, want the 1 cut", bad)
	}
}

func TestOpenLoopRefusesABadSchedule(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Measured: 3, Schedule: constantSchedule(2, time.Millisecond)}, "2 send times for 3 measured"},
		{Config{Measured: 2, Schedule: []time.Duration{5, 1}}, "non-decreasing"},
		{Config{Measured: 2, MaxInFlight: 4}, "no"},
	} {
		cfg := tc.cfg
		cfg.URL, cfg.Clients, cfg.NPredict, cfg.Prompt = "http://127.0.0.1:1", 1, 2, prompt
		rs := collect(Start(context.Background(), cfg))
		if len(rs) != cfg.Measured || !rs[0].NotSent || !strings.Contains(rs[0].Error, tc.want) {
			t.Errorf("%+v: got %+v, want not sent with %q", tc.cfg, rs, tc.want)
		}
	}
}
