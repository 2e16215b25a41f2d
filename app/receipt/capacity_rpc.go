package receipt

import (
	"strconv"

	"sparkbench/app/capacity"
)

func itoa(n int) string { return strconv.Itoa(n) }

func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// capRPC writes the network tax and the lifetimes' RPC splits of a plan with rpc_servers
// (nothing for other plans).
func capRPC(w *mdWriter, r *capacity.Result) {
	if len(r.Plan.RPCServers) == 0 {
		return
	}
	w.heading(2, "RPC topology")
	var srv [][]string
	for i, s := range r.Plan.RPCServers {
		srv = append(srv, []string{cell("RPC" + itoa(i)), cell(s.Host), code(s.Endpoint)})
	}
	w.table([]string{"Device", "Host", "Endpoint"}, "lll", srv)
	w.blank()
	w.heading(3, "Network tax")
	if len(r.NetworkTax) == 0 {
		w.line("%s", "No local candidate shares a model with an RPC candidate: no network tax.")
		w.blank()
	}
	for _, t := range r.NetworkTax {
		var rows [][]string
		for _, c := range t.Cells {
			rows = append(rows, []string{"P" + itoa(c.Slots) + "/C" + itoa(c.Clients), f2(c.LocalRate) + " tok/s", f2(c.RPCRate) + " tok/s", f4(c.Ratio)})
		}
		sel := "—"
		if t.Selected != nil {
			sel = f4(*t.Selected)
		}
		rows = append(rows, []string{"selected points", "", "", sel})
		w.line("%s over %s:", code(t.RPC), code(t.Local))
		w.blank()
		w.table([]string{"Cell", "Local generation rate", "RPC generation rate", "Network tax"}, "lrrr", rows)
		if t.Note != "" {
			w.line("%s", inline(t.Note)+".")
		}
		w.blank()
	}
	w.line("%s", "Network tax = the RPC candidate's aggregate generation rate / the local candidate's at the same cell (same model); the selected points' ratio compares their max sustainable throughput. 0.5 means the topology delivers half the local rate.")
	w.blank()
	splits := capacity.RPCSplits(r)
	if len(splits) == 0 {
		return
	}
	w.heading(3, "RPC split")
	for _, s := range splits {
		w.line("- %s", inline(capacity.RPCSplitText(s)))
	}
	w.blank()
}
