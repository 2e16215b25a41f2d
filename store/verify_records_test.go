package store

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestFaultsVerifyWhileRecording: verify of a notebook another connection is recording into (legs
// started with rows, finished, findings) never reports a row recorded after its chain walk
// as damaged: each run is intact, and the records it held grow.
func TestFaultsVerifyWhileRecording(t *testing.T) {
	n, path := openTemp(t)
	st := must[Study](t)(n.CreateStudy(ctx, Study{Name: "busy", Kind: StudyThroughput}))
	must[Plan](t)(n.RegisterPlan(ctx, st.ID, map[string]any{"reps": 2}))
	rows := parseRows(t, "bench-depth-jsonl.stdout")
	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	defer ro.Close()
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		// Bounded: each verify holds every record so far, so an unbounded writer makes the
		// verifies ever slower (under -race on a slow machine the test never ended).
		for i := 0; i < 60; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			leg, sw, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: fmt.Sprint("leg ", i), Detail: json.RawMessage(`{"plan_leg":"tiny/d0"}`)})
			if err == nil {
				err = sw.AddBench(rows...)
			}
			if err == nil {
				_, _, err = n.FinishLeg(ctx, leg.ID, LegOutcome{PeakRSSBytes: int64(1000 + i)})
			}
			if err == nil {
				_, err = n.AddFinding(ctx, Finding{StudyID: st.ID, Title: fmt.Sprint("finding ", i), LegIDs: []int64{leg.ID}})
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var last int64
	for k := 0; k < 40; k++ {
		rep, err := ro.Verify(ctx)
		if err != nil || !rep.OK() {
			close(stop)
			<-done
			t.Fatalf("verify %d while recording: %v %v", k, err, rep.Broken)
		}
		last = rep.RecordsChecked
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if last == 0 {
		t.Fatal("verify held no records")
	}
}
