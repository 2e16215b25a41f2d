package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sparkbench/app/capacity"
)

// The KV cache quality check of a capacity or concurrency study with KV arms (a candidate
// whose cache type is not f16 beside an f16 candidate on the same model): a complete run ends
// with it (its steps in the console), and the panel shows each arm's KL divergence beside the
// speed its cache type bought, as `capacity show` does.

// kvText is the report's KV cache lines: each checked arm (capacity.KVQualityLine: the speed
// change, the mean KLD, the gate), then, once the study is complete, each arm not checked yet;
// "" for a study without KV arms.
func kvText(r *capacity.Report) string {
	var lines []string
	for _, q := range r.KVQuality {
		lines = append(lines, capacity.KVQualityLine(q))
	}
	if r.Study.Status == capacity.StatusComplete {
		for _, c := range r.KVUnchecked {
			lines = append(lines, fmt.Sprintf("%s: KL divergence from the f16 cache not checked yet (Run checks it; the cells are kept)", c))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "KV cache types, speed against quality (KL divergence from an f16 cache on the same model):\n" + strings.Join(lines, "\n")
}

// kvPending says whether the shown study is complete with KV arms not checked yet: Run then
// runs the check alone.
func (v *CapacityPanel) kvPending() bool {
	return v.study != nil && v.study.Report.Study.Status == capacity.StatusComplete && len(v.study.Report.KVUnchecked) > 0
}

// onLine runs on the run's goroutine: a line that is no run event (the KV cache check's steps
// and results) goes to the console and the progress message.
func (v *CapacityPanel) onLine(line string) {
	v.mu.Lock()
	v.console = appendConsole(v.console, line)
	v.mu.Unlock()
	v.text.Submit(func() {
		if v.Running() {
			setText(v.ProgressMsg, line)
		}
		v.refreshConsole()
	})
}

// KVCheckError is a KV cache check that failed after every cell was measured and assembled:
// the run's result stands, and Run runs the check again.
type KVCheckError struct{ Err error }

func (e *KVCheckError) Error() string { return "the KV cache check: " + e.Err.Error() }

func (e *KVCheckError) Unwrap() error { return e.Err }

// kvOutcome says how a run ended when the KV cache check decides it: the check failed or was
// stopped, or the run was the check alone; ok is false otherwise.
func kvOutcome(kvOnly bool, err error) (string, bool) {
	var kv *KVCheckError
	switch {
	case errors.As(err, &kv) && errors.Is(err, context.Canceled):
		return "stopped by you during the KV cache check: every cell is measured and kept; Run runs the check again.", true
	case errors.As(err, &kv):
		return fmt.Sprintf("every cell is measured and assembled, but %v; Run runs the check again (the cells are kept).", err), true
	case kvOnly && err == nil:
		return "finished: the KV cache check ran (every cell was measured before); its result is shown under the selected points.", true
	}
	return "", false
}
