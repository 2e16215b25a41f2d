package capacity

import (
	"math"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// rpcPlan: the small plan with candidate b on a's model and the plan's two RPC servers.
func rpcPlan() *Plan {
	p := smallPlan()
	p.Candidates[1].Model = p.Candidates[0].Model
	p.Candidates[1].RPC = true
	p.Candidates[1].ServerFlags = []string{"-t", "4", "-lv", "4", "-dev", "RPC0,RPC1"}
	p.RPCServers = []study.RPCServer{{Host: "host-a", Endpoint: "127.0.0.1:50061", Threads: 1}, {Host: "host-b", Endpoint: "127.0.0.1:50062"}}
	return p
}

// rpcLog is a server log with llama.cpp's lines for the given RPC devices (index: endpoint).
func rpcLog(eps ...string) []byte {
	var lines []string
	for i, ep := range eps {
		dev := "RPC" + string(rune('0'+i))
		lines = append(lines, "using device "+dev+" ("+ep+") (unknown id) - 24105 MiB free",
			"RPC0["+ep+"] model buffer size =     0.50 MiB", "RPC0["+ep+"] KV buffer size =     0.12 MiB")
	}
	return serverLog(nil, lines)
}

func TestRPCPlanValidation(t *testing.T) {
	p := rpcPlan()
	if errs := study.Errors(Validate(p, ValidateOptions{})); len(errs) > 0 {
		t.Fatalf("valid RPC plan refused: %v", errs)
	}
	for _, c := range []struct {
		name string
		edit func(p *Plan)
		path string
		want string
	}{
		{"rpc without servers", func(p *Plan) { p.RPCServers = nil }, "candidates[1].rpc", "lists no rpc_servers"},
		{"servers without an rpc candidate", func(p *Plan) { p.Candidates[1].RPC = false }, "rpc_servers", "no candidate uses them"},
		{"--rpc in the flags", func(p *Plan) { p.Candidates[0].ServerFlags = append(p.Candidates[0].ServerFlags, "--rpc=127.0.0.1:1") }, "candidates[0].server_flags[4]", "the run passes --rpc"},
		{"a bad endpoint", func(p *Plan) { p.RPCServers[1].Endpoint = "nowhere" }, "rpc_servers[1].endpoint", ""},
		{"the same endpoint twice", func(p *Plan) { p.RPCServers[1].Endpoint = p.RPCServers[0].Endpoint }, "rpc_servers[1].endpoint", "listed twice"},
		{"a bad host", func(p *Plan) { p.RPCServers[0].Host = "Host A" }, "rpc_servers[0].host", "hosts file"},
	} {
		p := rpcPlan()
		c.edit(p)
		errs := study.Errors(Validate(p, ValidateOptions{}))
		if !slices.ContainsFunc(errs, func(e study.Problem) bool { return e.Path == c.path && strings.Contains(e.Msg, c.want) }) {
			t.Errorf("%s: %v, want an error at %s saying %q", c.name, errs, c.path, c.want)
		}
	}
}

// TestRPCPlanBytes: rpc_servers and rpc are written only when given (other plans keep their
// bytes and SHA-256), and round-trip.
func TestRPCPlanBytes(t *testing.T) {
	_, b, err := smallPlan().SHA256()
	if err != nil || strings.Contains(string(b), "rpc") {
		t.Fatalf("a plan without RPC writes %s (%v)", b, err)
	}
	_, b, err = rpcPlan().SHA256()
	if err != nil || !strings.Contains(string(b), `"rpc":true`) || !strings.Contains(string(b), `"rpc_servers":[{"endpoint":"127.0.0.1:50061","host":"host-a","threads":1}`) {
		t.Fatalf("RPC plan bytes %s (%v)", b, err)
	}
	back, err := Decode("plan", b)
	if err != nil || len(back.RPCServers) != 2 || !back.Candidates[1].RPC {
		t.Fatalf("round trip: %+v %v", back, err)
	}
}

// TestRPCSchedule: the RPC candidate's servers get --rpc with every endpoint before its flags
// (a -dev RPCn there needs them registered); the local one's do not.
func TestRPCSchedule(t *testing.T) {
	p := rpcPlan()
	for _, lt := range Schedule(p, "") {
		a := strings.Join(lt.Args, " ")
		rpc := strings.Contains(a, "--rpc 127.0.0.1:50061,127.0.0.1:50062 -t 4 -lv 4 -dev RPC0,RPC1")
		if rpc != (lt.Key.Candidate == "b") || (lt.Key.Candidate == "a" && strings.Contains(a, "--rpc")) {
			t.Errorf("%s: %s", lt.Key, a)
		}
	}
}

// TestRPCEvidenceGateAndNetworkTax: the RPC candidate's cells pass when every server log shows
// both servers with a model buffer, and fail rpc:device_not_in_log / rpc:no_backend when one
// does not; each lifetime carries the split; the network tax is b's rate / a's.
func TestRPCEvidenceGateAndNetworkTax(t *testing.T) {
	p := rpcPlan()
	good := rpcLog("127.0.0.1:50061", "127.0.0.1:50062")
	logs := func(bad LifetimeKey, log []byte) func(k LifetimeKey) []byte {
		return func(k LifetimeKey) []byte {
			switch {
			case k == bad:
				return log
			case k.Candidate == "b":
				return good
			}
			return serverLog(nil, nil)
		}
	}
	// b runs at half a's rate: its requests take twice as long
	levels := func(k LifetimeKey) []levelSpec {
		e2e := 1000.0
		if k.Candidate == "b" {
			e2e = 2000
		}
		var out []levelSpec
		for _, c := range p.ClientLevels(k.Slots) {
			out = append(out, uniform(c, p.Measured, 200, e2e, 0))
		}
		return out
	}
	r := mustAssemble(t, p, fixture{levels: levels, logs: logs(LifetimeKey{}, nil)}.inputs(t, p))
	a, b := r.Candidates[0], r.Candidates[1]
	for _, c := range b.Cells {
		if !c.Passed {
			t.Errorf("b P%d/C%d failed: %v", c.Slots, c.Clients, c.Failures)
		}
	}
	if b.Lifetimes[0].RPC == nil || len(b.Lifetimes[0].RPC.Devices) != 2 || b.Lifetimes[0].RPC.Devices[1].Host != "host-b" || a.Lifetimes[0].RPC != nil {
		t.Errorf("splits: a %+v, b %+v", a.Lifetimes[0].RPC, b.Lifetimes[0].RPC)
	}
	if len(r.NetworkTax) != 1 || r.NetworkTax[0].Local != "a" || r.NetworkTax[0].RPC != "b" || len(r.NetworkTax[0].Cells) != 4 {
		t.Fatalf("network tax %+v", r.NetworkTax)
	}
	for i, c := range r.NetworkTax[0].Cells {
		want := *b.Cells[i].GenerationRate / *a.Cells[i].GenerationRate
		if math.Abs(c.Ratio-want) > 1e-12 || c.Ratio > 0.6 || c.Ratio < 0.4 {
			t.Errorf("cell %d: %+v, the cells give %v", i, c, want)
		}
	}
	if s := r.NetworkTax[0].Selected; s == nil || math.Abs(*s-b.Selected.GenerationRate/a.Selected.GenerationRate) > 1e-12 {
		t.Errorf("selected ratio %v", s)
	}
	if r.Definitions["network_tax"] == "" || r.Definitions["rpc_gate"] == "" {
		t.Errorf("definitions %v", r.Definitions)
	}
	for _, c := range []struct {
		log  []byte
		code string
	}{
		{rpcLog("127.0.0.1:50061"), study.CodeRPCNotInLog},
		{serverLog(nil, []string{"using device RPC0 (127.0.0.1:50061) (unknown id)", "using device RPC1 (127.0.0.1:50062) (unknown id)"}), study.CodeRPCNoBackend},
	} {
		bad := LifetimeKey{PassReverse, "b", 2}
		r := mustAssemble(t, p, fixture{logs: logs(bad, c.log)}.inputs(t, p))
		for _, cell := range r.Candidates[1].Cells {
			if got := slices.Contains(cell.Failures, c.code); got != (cell.Slots == 2) {
				t.Errorf("%s: b P%d/C%d failures %v", c.code, cell.Slots, cell.Clients, cell.Failures)
			}
		}
	}
}

// TestNetworkTaxWithoutSelection: a pair whose local candidate has no selected point gets the
// cells' ratios, no selected ratio, and a note saying why.
func TestNetworkTaxWithoutSelection(t *testing.T) {
	p := rpcPlan()
	rate := 10.0
	cands := []CandidateResult{
		{ID: "a", Cells: []CellResult{{Slots: 1, Clients: 1, GenerationRate: &rate}}},
		{ID: "b", Cells: []CellResult{{Slots: 1, Clients: 1, GenerationRate: fptr(4)}}, Selected: &Selection{GenerationRate: 4}},
	}
	tx := networkTax(p, cands)
	if len(tx) != 1 || tx[0].Selected != nil || !strings.Contains(tx[0].Note, "a has no selected point") || len(tx[0].Cells) != 1 || tx[0].Cells[0].Ratio != 0.4 {
		t.Fatalf("%+v", tx)
	}
	if networkTax(smallPlan(), cands) != nil {
		t.Error("a plan without rpc_servers has a network tax")
	}
}
