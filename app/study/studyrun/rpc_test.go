package studyrun

import (
	"context"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
)

// TestRPCEvidenceGateFlagsTheLeg: a leg on the plan's servers' devices whose rows do not name the
// RPC backend, or whose log does not show the devices, ends flagged with the gate's code and its
// rows flagged; one that shows both stays ok and journals its per-host layer split; a leg on
// the local arm is not gated.
func TestRPCEvidenceGateFlagsTheLeg(t *testing.T) {
	h := newHarness(t, func(p *study.Plan) {
		p.Axes.NGL = []int{99}
		p.Axes.Devices = []string{"none", "RPC0/RPC1"}
		p.RPCServers = []study.RPCServer{{Host: "host-a", Endpoint: "127.0.0.1:50161"}, {Host: "host-b", Endpoint: "127.0.0.1:50162"}}
		p.Repeatability, p.Canary = nil, nil
	})
	ctx := context.Background()
	l, err := study.LoadStudy(ctx, h.rec, h.id)
	if err != nil {
		t.Fatal(err)
	}
	var rpcLeg, localLeg string
	for _, lp := range l.Legs {
		if lp.Device == "RPC0/RPC1" && rpcLeg == "" {
			rpcLeg = lp.ID
			if !strings.Contains(strings.Join(lp.Args, " "), "--rpc 127.0.0.1:50161,127.0.0.1:50162 -dev RPC0/RPC1") || lp.Args[len(lp.Args)-3] != "-v" {
				t.Fatalf("RPC leg args %q", lp.Args)
			}
		}
		if lp.Device == "none" && localLeg == "" {
			localLeg = lp.ID
		}
	}
	r := &run{e: h.engine(), l: l, rpc: &rpcTopology{hosts: map[string]string{"127.0.0.1:50161": "host-a", "127.0.0.1:50162": "host-b"}}}
	log := "llama_prepare_model_devices: using device RPC0 (127.0.0.1:50161) (unknown id) - 1 MiB free\r\n" +
		"llama_prepare_model_devices: using device RPC1 (127.0.0.1:50162) (unknown id) - 1 MiB free\r\n" +
		"load_tensors: layer   0 assigned to device RPC0, is_swa = 0\r\nload_tensors: layer   1 assigned to device RPC1, is_swa = 0\r\n"
	leg := func(planLeg, backends, transcript string) study.LegEnd {
		res := &runner.LegResult{Rows: []runner.Row{{Sample: runner.Sample{Result: benchfmt.Result{Backends: backends}}, Status: runner.RowResult}},
			Transcript: &runner.Transcript{Records: []runner.Record{{Data: []byte(transcript)}}}}
		end := study.LegEnd{Class: string(runner.ClassOK), RowStatus: []string{string(runner.RowResult)}}
		if err := r.rpcGates(ctx, res, study.LegStart{Role: study.RoleLeg, PlanLeg: planLeg, Label: planLeg}, 7, &end); err != nil {
			t.Fatal(err)
		}
		return end
	}
	if end := leg(rpcLeg, "CPU", log); end.Class != string(runner.ClassFlagged) || !strings.HasPrefix(end.Reason, study.CodeRPCNoBackend+": ") || end.RowStatus[0] != string(runner.RowFlagged) {
		t.Errorf("rows without RPC: %+v", end)
	}
	if end := leg(rpcLeg, "Vulkan,RPC", "no devices here\r\n"); end.Class != string(runner.ClassFlagged) || !strings.HasPrefix(end.Reason, study.CodeRPCNotInLog+": ") {
		t.Errorf("a log without the devices: %+v", end)
	}
	notes := len(h.rec.studies[h.id].Notes)
	if end := leg(rpcLeg, "Vulkan,RPC", log); end.Class != string(runner.ClassOK) || end.RowStatus[0] != string(runner.RowResult) {
		t.Errorf("a leg with the evidence: %+v", end)
	}
	ns := h.rec.studies[h.id].Notes
	if len(ns) != notes+1 || ns[len(ns)-1].Kind != study.NoteRPCSplit || !strings.Contains(string(ns[len(ns)-1].Payload), `"host":"host-b"`) {
		t.Errorf("layer split not journaled: %d notes", len(ns)-notes)
	}
	if end := leg(localLeg, "Vulkan,RPC", ""); end.Class != string(runner.ClassOK) {
		t.Errorf("the local arm was gated: %+v", end)
	}
}
