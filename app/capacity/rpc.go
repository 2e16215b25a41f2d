package capacity

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"sparkbench/app/study"
)

// RPC topologies in capacity studies (docs/capacity.md "RPC topologies", docs/fleet.md): the
// plan's rpc_servers are started by the run over ssh; a candidate with rpc set registers them
// (--rpc), its server logs must show them (the RPC evidence gate), each of its lifetimes
// carries the per-host split llama-server's log gives, and each (local, RPC) pair of candidates
// on the same model gets the network tax.

// rpcGateDefinition is printed on results of plans with rpc_servers.
const rpcGateDefinition = "RPC evidence gate (rpc_servers, candidates with rpc): every server lifetime of an RPC candidate must show each of the plan's servers in its log as llama.cpp names it at load ('using device RPCn (ENDPOINT)'; else rpc:device_not_in_log) and hold a model buffer on one of them ('RPCn[ENDPOINT] model buffer size' above 0; else rpc:no_backend)"

// networkTaxDefinition is printed on results of plans with rpc_servers.
const networkTaxDefinition = "network tax: for each RPC candidate and each local candidate of the same model (path and SHA-256), the RPC candidate's aggregate generation rate / the local one's, at every (slots, clients) cell both measured, and the ratio of their selected points' rates (max sustainable throughput; absent unless both have one)"

// RPCArgs are the arguments the run puts before a candidate's server flags (a -dev RPCn there
// needs the servers registered first): --rpc and the plan's
// server endpoints, in plan order (devices RPC0, RPC1, …), for a candidate with rpc set.
func (p *Plan) RPCArgs(c Candidate) []string {
	if !c.RPC || len(p.RPCServers) == 0 {
		return nil
	}
	eps := make([]string, len(p.RPCServers))
	for i, s := range p.RPCServers {
		eps[i] = s.Endpoint
	}
	return []string{"--rpc", strings.Join(eps, ",")}
}

// rpcKey tells a candidate on the RPC servers from a local one of the same model and flags.
func rpcKey(c Candidate) string {
	if c.RPC {
		return "\x00rpc"
	}
	return ""
}

// checkRPC checks rpc_servers (the throughput plan's checks) and the candidates that use them.
func (v *validator) checkRPC() {
	p := v.p
	v.problems = append(v.problems, study.CheckRPCServers(p.RPCServers, nil)...)
	uses := false
	for i, c := range p.Candidates {
		at := fmt.Sprintf("candidates[%d]", i)
		for j, f := range c.ServerFlags {
			if name, _, _ := strings.Cut(f, "="); name == "--rpc" {
				v.errf(fmt.Sprintf("%s.server_flags[%d]", at, j), "%q: the run passes --rpc with the plan's rpc_servers to candidates with \"rpc\": true; remove it", f)
			}
		}
		if !c.RPC {
			continue
		}
		uses = true
		if len(p.RPCServers) == 0 {
			v.errf(at+".rpc", "true, but the plan lists no rpc_servers: add the servers the candidate offloads to (docs/fleet.md), or drop rpc")
		}
	}
	if len(p.RPCServers) > 0 && !uses {
		v.errf("rpc_servers", "no candidate uses them: give the candidate that offloads to the servers \"rpc\": true")
	}
}

// LifetimeRPC is what an RPC candidate's server log says about the plan's servers: each RPC
// device llama.cpp registered, with its endpoint, host, layers (counted only when the log has
// llama.cpp's debug lines, i.e. -v in server_flags) and buffers, and the layers kept local.
type LifetimeRPC struct {
	Devices []study.RPCDeviceUse `json:"devices"`
	Local   int                  `json:"local_layers"`
	// Layers says whether the log gave the layer assignment (llama-server prints it only at
	// debug verbosity, -v); without it the layer counts are 0 and the buffers are the split.
	Layers bool `json:"layers_logged"`
}

// RPCLifetime reads a lifetime's server log for the RPC split (nil unless the candidate uses
// the plan's servers).
func (p *Plan) RPCLifetime(c Candidate, log []byte) *LifetimeRPC {
	if !c.RPC || len(p.RPCServers) == 0 {
		return nil
	}
	text := string(log)
	uses, local := study.ParseRPCLog(text)
	host := map[string]string{}
	for _, s := range p.RPCServers {
		host[s.Endpoint] = s.Host
	}
	for i := range uses {
		uses[i].Host = host[uses[i].Endpoint]
	}
	return &LifetimeRPC{Devices: uses, Local: local, Layers: strings.Contains(text, " assigned to device ")}
}

// rpcGates applies the RPC evidence gate to a cell's lifetimes.
func (p *Plan) rpcGates(lives []*lifetime, check func(GateCheck, string)) {
	var missing, unused []string
	for _, life := range lives {
		r := life.rpc
		if r == nil {
			continue
		}
		for i, s := range p.RPCServers {
			dev := fmt.Sprintf("RPC%d", i)
			if !slices.ContainsFunc(r.Devices, func(u study.RPCDeviceUse) bool { return u.Device == dev && u.Endpoint == s.Endpoint }) {
				missing = append(missing, fmt.Sprintf("%s: the log does not show %s at %s (\"using device %s (%s)\")", life.key.Pass, dev, s.Endpoint, dev, s.Endpoint))
			}
		}
		if !slices.ContainsFunc(r.Devices, func(u study.RPCDeviceUse) bool { return u.ModelMiB > 0 }) {
			unused = append(unused, fmt.Sprintf("%s: no model buffer on an RPC device in the log: the model did not go to the servers", life.key.Pass))
		}
	}
	g := GateCheck{Gate: "rpc_devices_in_log", Passed: len(missing) == 0}
	if len(missing) > 0 {
		g.Detail = strings.Join(missing, "; ")
	}
	check(g, study.CodeRPCNotInLog)
	g = GateCheck{Gate: "rpc_model_buffer", Passed: len(unused) == 0}
	if len(unused) > 0 {
		g.Detail = strings.Join(unused, "; ")
	}
	check(g, study.CodeRPCNoBackend)
}

// NetworkTax is an RPC candidate's rates over a local candidate's on the same model.
type NetworkTax struct {
	Local string `json:"local"` // candidate IDs
	RPC   string `json:"rpc"`
	// Selected is the RPC candidate's selected rate / the local one's (nil unless both have a
	// selected point); Note says why it is absent.
	Selected *float64         `json:"selected_ratio"`
	Note     string           `json:"note,omitempty"`
	Cells    []NetworkTaxCell `json:"cells"`
}

// NetworkTaxCell is the ratio at one (slots, clients) cell both candidates measured.
type NetworkTaxCell struct {
	Slots     int     `json:"slots"`
	Clients   int     `json:"clients"`
	LocalRate float64 `json:"local_rate"`
	RPCRate   float64 `json:"rpc_rate"`
	Ratio     float64 `json:"ratio"`
}

// networkTax pairs every RPC candidate with every local candidate of the same model, in plan
// order (nil for a plan without rpc_servers).
func networkTax(p *Plan, cands []CandidateResult) []NetworkTax {
	if len(p.RPCServers) == 0 {
		return nil
	}
	out := []NetworkTax{}
	byID := map[string]*CandidateResult{}
	for i := range cands {
		byID[cands[i].ID] = &cands[i]
	}
	for _, r := range p.Candidates {
		if !r.RPC {
			continue
		}
		for _, l := range p.Candidates {
			if l.RPC || l.Model != r.Model {
				continue
			}
			out = append(out, taxOf(byID[l.ID], byID[r.ID]))
		}
	}
	return out
}

func taxOf(l, r *CandidateResult) NetworkTax {
	t := NetworkTax{Local: l.ID, RPC: r.ID, Cells: []NetworkTaxCell{}}
	for _, rc := range r.Cells {
		for _, lc := range l.Cells {
			if lc.Slots != rc.Slots || lc.Clients != rc.Clients || lc.GenerationRate == nil || rc.GenerationRate == nil || *lc.GenerationRate <= 0 {
				continue
			}
			t.Cells = append(t.Cells, NetworkTaxCell{Slots: rc.Slots, Clients: rc.Clients, LocalRate: *lc.GenerationRate,
				RPCRate: *rc.GenerationRate, Ratio: *rc.GenerationRate / *lc.GenerationRate})
		}
	}
	switch {
	case l.Selected == nil:
		t.Note = fmt.Sprintf("%s has no selected point (no cell passes every gate)", l.ID)
	case r.Selected == nil:
		t.Note = fmt.Sprintf("%s has no selected point (no cell passes every gate)", r.ID)
	case l.Selected.GenerationRate > 0:
		t.Selected = fptr(r.Selected.GenerationRate / l.Selected.GenerationRate)
	}
	return t
}

// rpcProgressLine is the console's line for an rpc_server event.
func rpcProgressLine(head string, n *study.RPCServerNote) string {
	if n == nil {
		return ""
	}
	line := fmt.Sprintf("%s ggml-rpc-server on host %s (%s) %s", head, n.Host, n.Endpoint, n.Event)
	if n.PID > 0 {
		line += fmt.Sprintf(" (pid %d on the host", n.PID)
		if n.Signal != "" {
			line += ", " + n.Signal
		}
		line += ")"
	}
	if n.Error != "" {
		line += ": " + n.Error
	}
	return line
}

// RPCSplit is one lifetime's split among the plan's servers (study show, receipts).
type RPCSplit struct {
	Candidate string `json:"candidate"`
	Pass      string `json:"pass"`
	Slots     int    `json:"slots"`
	LifetimeRPC
}

// RPCSplits lists the lifetimes' RPC splits of a result, candidates in plan order.
func RPCSplits(r *Result) []RPCSplit {
	var out []RPCSplit
	for _, c := range r.Candidates {
		for _, l := range c.Lifetimes {
			if l.RPC != nil {
				out = append(out, RPCSplit{Candidate: c.ID, Pass: l.Pass, Slots: l.Slots, LifetimeRPC: *l.RPC})
			}
		}
	}
	return out
}

// NetworkTaxText is the network tax of one pair as text lines: the selected points' ratio, then
// each cell's.
func NetworkTaxText(t NetworkTax) []string {
	head := fmt.Sprintf("%s / %s: selected points ", t.RPC, t.Local)
	if t.Selected != nil {
		head += fmt.Sprintf("%.4f", *t.Selected)
	} else {
		head += "— (" + t.Note + ")"
	}
	out := []string{head}
	for _, c := range t.Cells {
		out = append(out, fmt.Sprintf("P%d/C%d: %.2f / %.2f tok/s = %.4f", c.Slots, c.Clients, c.RPCRate, c.LocalRate, c.Ratio))
	}
	return out
}

// RPCSplitText is one lifetime's split as a line.
func RPCSplitText(s RPCSplit) string {
	line := fmt.Sprintf("%s %s/p%d:", s.Candidate, s.Pass, s.Slots)
	for _, d := range s.Devices {
		host := d.Host
		if host == "" {
			host = "?"
		}
		line += fmt.Sprintf(" %s %s (%s)", d.Device, host, d.Endpoint)
		if s.Layers {
			line += fmt.Sprintf(" %d layers,", d.Layers)
		}
		line += fmt.Sprintf(" model %.2f, KV %.2f, compute %.2f MiB;", d.ModelMiB, d.KVMiB, d.ComputeMiB)
	}
	if s.Layers {
		line += fmt.Sprintf(" local %d layers", s.Local)
	} else {
		line += " (no layer assignment in the log: -v in server_flags logs it)"
	}
	return line
}

// writeRPC prints the network tax and the lifetimes' RPC splits (nothing for other plans).
func writeRPC(w io.Writer, r *Report) {
	if len(r.NetworkTax) > 0 {
		fprintf(w, "network tax (RPC candidate rate / local candidate rate, same model):\n")
		for _, t := range r.NetworkTax {
			for i, l := range NetworkTaxText(t) {
				if i > 0 {
					l = "  " + l
				}
				fprintf(w, "  %s\n", l)
			}
		}
	}
	if len(r.RPCSplits) > 0 {
		fprintf(w, "RPC split (llama-server's log; buffers in MiB):\n")
		for _, s := range r.RPCSplits {
			fprintf(w, "  %s\n", RPCSplitText(s))
		}
	}
}

// RPCSplitNote is the journal entry of a lifetime's RPC split (NoteRPCSplit).
type RPCSplitNote struct {
	Lifetime string `json:"lifetime"`
	LifetimeRPC
}
