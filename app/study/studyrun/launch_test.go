package studyrun

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// TestEngineRunsEveryLegUnderTheLaunchWrapper: each leg and canary of a plan with a launch
// wrapper gets it, keeps its own command line as its argv, and has its launch journaled
// (study.leg_launch) and shown in the report; a plan without one journals no launch at all.
func TestEngineRunsEveryLegUnderTheLaunchWrapper(t *testing.T) {
	h := newHarness(t, func(p *study.Plan) { p.Build.LaunchWrapper = []string{"taskset", "-c", "0"} })
	if _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := study.Show(context.Background(), h.rec, h.id)
	if err != nil {
		t.Fatal(err)
	}
	noted := map[int64]bool{}
	for _, n := range h.rec.studies[h.id].Notes {
		if n.Kind != study.NoteLegLaunch {
			continue
		}
		var ll study.LegLaunch
		if err := json.Unmarshal(n.Payload, &ll); err != nil {
			t.Fatal(err)
		}
		if strings.Join(ll.Wrapper, " ") != "taskset -c 0" || ll.LaunchedAs[3] != "/fake/llama-bench" || ll.Affinity == nil || ll.Affinity.CPUs != "0" {
			t.Errorf("leg %d %s: launch %+v", ll.Leg, ll.Label, ll.Launch)
		}
		noted[ll.Leg] = true
	}
	stored, _ := h.rec.Legs(context.Background(), h.id)
	if len(stored) < 2 {
		t.Fatalf("%d legs stored", len(stored))
	}
	if n := h.journalCount(study.NoteLegLaunch); n != len(stored) {
		t.Errorf("%d launches journaled for %d legs", n, len(stored))
	}
	for _, s := range stored {
		if !noted[s.ID] || s.Argv[0] != "/fake/llama-bench" {
			t.Errorf("leg %d %s: launch journaled %v, argv %q (want the leg's own command line)", s.ID, s.Label, noted[s.ID], s.Argv)
		}
	}
	for _, l := range rep.Legs {
		if l.ID != 0 && (l.Launch == nil || l.Launch.Affinity == nil || l.Launch.Affinity.CPUs != "0") {
			t.Errorf("report leg %s: launch %+v", l.Label, l.Launch)
		}
	}

	plain := newHarness(t, nil)
	if _, err := plain.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := plain.journalCount(study.NoteLegLaunch); n != 0 {
		t.Errorf("a plan without a wrapper journaled %d launches", n)
	}
	rp, _ := study.Show(context.Background(), plain.rec, plain.id)
	b, _ := json.Marshal(rp)
	if strings.Contains(string(b), `"launch"`) {
		t.Errorf("a plan without a wrapper reports a launch: %s", b)
	}
}
