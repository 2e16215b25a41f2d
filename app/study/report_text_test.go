package study

import (
	"bytes"
	"strings"
	"testing"
)

// study show's text says why each leg that did not end ok ended (the gate's code and message),
// as --json does: a leg the device gate flagged names device:not_used; an ok leg and a pending
// one are not listed.
func TestShowTextSaysWhyLegsEnded(t *testing.T) {
	why := "tg16: device:not_used: row ran on the CPU (gpu_info \"\", n_gpu_layers 99)"
	r := &Report{Study: ReportStudy{ID: 1, Name: "s", Status: StatusComplete}, Legs: []ReportLeg{
		{ID: 1, Label: "tiny/d0", PlanLeg: "tiny/d0", Role: RoleLeg, State: "finished", Class: "flagged", Reason: why, Rows: 2, Results: 1, Flagged: 1},
		{ID: 2, Label: "tiny/d32", PlanLeg: "tiny/d32", Role: RoleLeg, State: "finished", Class: "ok", Rows: 2, Results: 2},
		{Label: "tiny/d64", PlanLeg: "tiny/d64", Role: RoleLeg, State: "pending"},
	}}
	var b bytes.Buffer
	WriteReport(&b, r)
	text := b.String()
	if !strings.Contains(text, "why legs ended otherwise than ok\n  tiny/d0: flagged: "+why+"\n") {
		t.Fatalf("show text does not say why tiny/d0 ended:\n%s", text)
	}
	if strings.Contains(text, "tiny/d32: ok") || strings.Contains(text, "tiny/d64: ") {
		t.Errorf("an ok or pending leg is listed as ended otherwise:\n%s", text)
	}
}

// TestShowStatesTheUnit (issue 31, item 7 in part): show's results say what their ± is at the
// process level: the spread within one llama-bench process (a fixed cell), or of an adaptive
// cell's processes together, never the spread between processes.
func TestShowStatesTheUnit(t *testing.T) {
	fixed := &Report{Results: []ReportCell{{Model: "m", Test: "tg16", Depth: 0, Mean: 20, SD: 0.1, Reps: 3, processes: 1},
		{Model: "m", Test: "tg16", Depth: 256, Mean: 18, SD: 0.1, Reps: 3, processes: 1}}}
	var b strings.Builder
	writeResults(&b, fixed)
	if !strings.Contains(b.String(), "the unit is the llama-bench process: each cell above is one process of 3 repetitions, and ± is the spread within it,\nnot between processes") {
		t.Errorf("fixed cells:\n%s", b.String())
	}
	chunked := &Report{Results: []ReportCell{{Model: "m", Test: "tg16", Depth: 0, Mean: 20, SD: 0.1, Reps: 9, processes: 3},
		{Model: "m", Test: "tg16", Depth: 256, Mean: 18, SD: 0.1, Reps: 6, processes: 2}}}
	b.Reset()
	writeResults(&b, chunked)
	if !strings.Contains(b.String(), "each cell above ran as 2–3 processes (its chunks), 6–9 repetitions in all, and ± is\nthe spread of those repetitions together") {
		t.Errorf("adaptive cells:\n%s", b.String())
	}
}
