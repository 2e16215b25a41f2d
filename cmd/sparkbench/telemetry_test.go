package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/telemetry"
	"sparkbench/store"
)

// A plan with a telemetry block runs on the real llama-bench as any other: on this machine
// (no sensors) only the host sampler reads, every plan leg keeps its samples with a mark per
// row and the leg's end, no leg is flagged, and there is no energy to report. A bad block is
// refused with its path; the same plan without the block records no telemetry at all.
func TestStudyWithTelemetryRealBench(t *testing.T) {
	llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	bad := writePlan(t, dir, "telemetry bad", tiny, moe, 2, 16, `, "telemetry": {"interval_ms": 5, "gates": {"clock_drop_max": 2}}`)
	code, _, errOut := runCLI("study", "validate", bad)
	if code != 2 || !strings.Contains(errOut, "telemetry.interval_ms: 5: want 10 to 60000 ms") || !strings.Contains(errOut, "telemetry.gates.clock_drop_max: 2 is not a fraction") {
		t.Fatalf("bad telemetry block: %d %s", code, errOut)
	}
	for _, c := range []struct {
		name, extra string
		sampled     bool
	}{{"telemetry on", `, "telemetry": {"interval_ms": 20, "gates": {"clock_drop_max": 0.1, "temp_max_c": 95}}`, true}, {"telemetry off", "", false}} {
		nb := filepath.Join(dir, c.name+".db")
		file := writePlan(t, dir, c.name, tiny, moe, 2, 16, c.extra)
		code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
		if code != 0 {
			t.Fatalf("register: %d %s %s", code, out, errOut)
		}
		id := registeredID(t, out)
		if code, out, errOut := runStudy(t, id, "--notebook", nb); code != 0 {
			t.Fatalf("%s: run: %d %s %s", c.name, code, out, errOut)
		}
		n, err := store.Open(nb)
		if err != nil {
			t.Fatal(err)
		}
		sid, _ := strconv.ParseInt(id, 10, 64)
		legs, err := store.StudyRecorder{N: n}.Legs(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range legs {
			samples, err := n.Telemetry(context.Background(), l.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !c.sampled || l.Role != study.RoleLeg {
				if len(samples) != 0 {
					t.Errorf("%s: leg %s has %d telemetry samples", c.name, l.Label, len(samples))
				}
				continue
			}
			marks, end, ok := energy.Marks(samples)
			host := 0
			for _, s := range samples {
				if s.Source == "host" && s.Err == "" {
					host++
				} else if s.Source != telemetry.SourceMark {
					t.Errorf("leg %s: a sample of %s on a machine without it: %+v", l.Label, s.Source, s)
				}
			}
			// A leg the CV gate flagged on this shared machine (it runs again) is sampled the same.
			if (l.Class != "ok" && l.Class != "flagged") || !ok || end <= 0 || len(marks) != l.Rows || host < 2 {
				t.Errorf("leg %s (%s): %d marks for %d rows, end %v %v, %d host samples", l.Label, l.Class, len(marks), l.Rows, end, ok, host)
			}
			if _, hasEnergy := energy.Leg(samples, energy.Window{To: end}, nil); hasEnergy {
				t.Errorf("leg %s: energy without a power sampler", l.Label)
			}
		}
		n.Close()
	}
}
