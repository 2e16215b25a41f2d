package telemetry_test

import (
	"sync"
	"testing"
	"time"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

// StartNotify hands every sample the sampler keeps to its watcher as it is read, the same
// samples Stop returns, in the same order per source.
func TestSamplerNotifiesEachSampleKept(t *testing.T) {
	var mu sync.Mutex
	var seen []telemetry.Sample
	src := &telemetrytest.Script{SourceName: "gpu", Reads: []telemetrytest.ScriptRead{{Points: []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: 120}}}}}
	s := telemetry.StartNotify([]telemetry.Source{src}, time.Millisecond, func(smp telemetry.Sample) {
		mu.Lock()
		seen = append(seen, smp)
		mu.Unlock()
	})
	for src.ReadCount() < 4 {
		time.Sleep(time.Millisecond)
	}
	kept := s.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(kept) || len(kept) < 4 {
		t.Fatalf("notified %d samples, kept %d", len(seen), len(kept))
	}
	for i := range kept {
		if seen[i].T != kept[i].T || len(seen[i].Points) != 1 || seen[i].Points[0].Value != 120 {
			t.Fatalf("sample %d: notified %+v, kept %+v", i, seen[i], kept[i])
		}
	}
}
