package ui

import (
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// A complete window run of a study with a KV arm ends with the KV cache check, its lines in
// the console. A build without llama-perplexity leaves the arm unchecked: the run says so, the
// panel lists the arm as not checked, and Run (now "Run the KV cache check") runs the check
// alone, keeping the envelope; then the arm's KL divergence is shown beside its speed change
// and gate, and nothing is left to run.
func TestCapacityPanelKVQualityCheck(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeCapacity{events: capEvents}
	kld := 0.01
	checked := capacity.KVQuality{Candidate: "q8", Base: "f16",
		KVCheck: study.KVCheck{Model: "tiny", KV: "q8_0/q8_0", Leg: "kv/tiny/q8_0", MeanKLD: 0.001234, P99KLD: 0.01, SameTopP: 0.99, Lines: []int{3, 9}},
		Speed:   []capacity.KVSpeed{{Figure: capacity.KVSpeedSelected, Slots: 2, Clients: 2, BaseSlots: 2, BaseClients: 2, Ratio: 1.031}},
		Gate:    "pass", Max: &kld}
	svc.kv = func(kvOnly bool, say func(string)) error {
		svc.mu.Lock()
		defer svc.mu.Unlock()
		if !kvOnly {
			say("kv quality: not checked: no llama-perplexity in /opt/llama")
			svc.kvUnchecked = []string{"q8"}
			return &KVCheckError{Err: errors.New("1 KV arm(s) not checked (no llama-perplexity in /opt/llama)")}
		}
		say("kv quality: kld-base/tiny: base logits of the f16 cache")
		say("  " + capacity.KVQualityLine(checked))
		svc.kvUnchecked, svc.kvQuality = nil, []capacity.KVQuality{checked}
		return nil
	}
	v := build(func() *CapacityPanel { return newCapacityPanel(a, a.NewWindow("t"), svc, nil, nil) })
	defer Locked(v.close)
	Locked(func() { v.Show(9) })
	waitCap(t, v, func() bool { return v.study != nil && !v.RunButton.Disabled() })
	Locked(func() {
		if v.KV.Visible() {
			t.Errorf("KV lines before any check: %q", v.KV.Text)
		}
		test.Tap(v.RunButton)
	})
	waitCap(t, v, func() bool {
		return !v.Running() && v.study != nil && v.study.Report.Study.Status == capacity.StatusComplete && !v.RunButton.Disabled()
	})
	Locked(func() {
		if !strings.HasPrefix(v.ProgressMsg.Text, "every cell is measured and assembled, but the KV cache check: 1 KV arm(s) not checked (no llama-perplexity in /opt/llama)") {
			t.Errorf("outcome %q", v.ProgressMsg.Text)
		}
		if !strings.Contains(strings.Join(v.ConsoleLines(), "\n"), "kv quality: not checked: no llama-perplexity in /opt/llama") {
			t.Errorf("console:\n%s", strings.Join(v.ConsoleLines(), "\n"))
		}
		if !v.KV.Visible() || !strings.Contains(v.KV.Text, "q8: KL divergence from the f16 cache not checked yet") {
			t.Errorf("KV lines %q (shown %v)", v.KV.Text, v.KV.Visible())
		}
		if v.RunButton.Text != "Run the KV cache check (the cells are kept)" || len(v.Rows()) != 3 {
			t.Errorf("run button %q, %d envelope rows", v.RunButton.Text, len(v.Rows()))
		}
		test.Tap(v.RunButton)
		if len(v.Rows()) != 3 {
			t.Errorf("the KV check alone cleared the envelope: %d rows", len(v.Rows()))
		}
	})
	waitCap(t, v, func() bool {
		return !v.Running() && strings.HasPrefix(v.ProgressMsg.Text, "finished: the KV cache check ran") && v.RunButton.Disabled()
	})
	Locked(func() {
		for _, want := range []string{"q8 (q8_0/q8_0 KV) vs f16: selected rate faster by 3.1% (P2/C2 against f16's P2/C2)",
			"mean KLD 0.001234", "gate (mean KLD <= 0.01): pass"} {
			if !strings.Contains(v.KV.Text, want) {
				t.Errorf("KV lines %q lack %q", v.KV.Text, want)
			}
		}
		if strings.Contains(v.KV.Text, "not checked") || v.RunButton.Text != "Run again (nothing left to run)" || len(v.Rows()) != 3 {
			t.Errorf("after the check: KV %q, run button %q, %d rows", v.KV.Text, v.RunButton.Text, len(v.Rows()))
		}
		if !strings.Contains(strings.Join(v.ConsoleLines(), "\n"), "kv quality: kld-base/tiny") {
			t.Errorf("console:\n%s", strings.Join(v.ConsoleLines(), "\n"))
		}
	})
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.runs != 2 || svc.kvRuns != 1 {
		t.Errorf("%d runs, %d of them the KV check alone", svc.runs, svc.kvRuns)
	}
}
