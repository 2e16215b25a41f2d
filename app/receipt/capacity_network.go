package receipt

import (
	"fmt"
	"strings"

	"sparkbench/app/capacity"
)

// capNetwork writes a capacity receipt's network path section from the run manifest: for each
// server lifetime whose llama-server ran on a bench host (capacity run --on), the path its
// clients took and the round-trip floor measured over it before the load, and what was left on
// the host after the stop. Nothing when no lifetime has a network record, so the receipts of
// studies run on this machine are unchanged.
func capNetwork(w *mdWriter, cb *capacityBundle) {
	if cb.manifest == nil {
		return
	}
	var rows [][]string
	hosts := map[string]string{}
	var order []string
	for _, lt := range cb.manifest.Lifetimes {
		n := lt.Server.Network
		if n == nil {
			continue
		}
		if _, ok := hosts[n.Host]; !ok {
			hosts[n.Host] = n.SSH
			order = append(order, n.Host)
		}
		rtt := "not measured: " + inline(n.RTTError)
		if n.RTTError == "" {
			rtt = fmt.Sprintf("%d round trips: min %.3f ms, median %.3f ms", n.RTTProbes, n.RTTMinMs, n.RTTMedianMs)
		}
		left := "none"
		if len(n.Left) > 0 || n.StopError != "" {
			left = inline(strings.TrimSpace(strings.Join(n.Left, "; ") + " " + n.StopError))
		}
		rows = append(rows, []string{code(lt.Key), inline(n.Path), rtt, code(n.StopSignal), left})
	}
	if len(rows) == 0 {
		return
	}
	w.heading(2, "Network path")
	var where []string
	for _, h := range order {
		where = append(where, fmt.Sprintf("host %s (ssh destination %s)", code(h), code(hosts[h])))
	}
	w.line("llama-server ran on %s, started over its ssh connection with a remote terminal (%s); the load generator ran on this machine against a local port forwarded over that connection to the port the server bound on the host's 127.0.0.1. Before each lifetime's load, sequential %s requests over one kept-alive connection through that path measured its round-trip floor: every latency in this receipt includes at least that much network time. The server was stopped with a signal on the host, and the host's llama-server processes were listed afterwards.",
		strings.Join(where, ", "), code("ssh -tt"), code("GET /health"))
	w.blank()
	w.table([]string{"Server lifetime", "Network path", "Round-trip floor", "Stopped by", "Left on the host"}, "lllll", rows)
}

// runNetwork is what the receipt reads of a lifetime's network record.
type runNetwork = capacity.RunNetwork
