package receipt

import (
	"fmt"
)

// tmRPC writes the RPC layer split of a plan with rpc_servers: each leg's layers and buffers
// per RPC device and host, as llama.cpp's log said (the study.rpc_split entries). Nothing when
// no leg has one, so other receipts are unchanged.
func tmRPC(w *mdWriter, d *ThroughputStudy) {
	var rows [][]string
	for _, l := range d.Legs {
		if l.RPCSplit == nil {
			continue
		}
		for _, u := range l.RPCSplit.Devices {
			host := u.Host
			if host == "" {
				host = "—"
			}
			rows = append(rows, []string{code(fmt.Sprint(l.ID)), cell(l.Label), code(u.Device), cell(host), code(u.Endpoint),
				fmt.Sprint(u.Layers), fmt.Sprintf("%.2f", u.ModelMiB), fmt.Sprintf("%.2f", u.KVMiB), fmt.Sprintf("%.2f", u.ComputeMiB)})
		}
		rows = append(rows, []string{code(fmt.Sprint(l.ID)), cell(l.Label), "local", "—", "—", fmt.Sprint(l.RPCSplit.Local), "—", "—", "—"})
	}
	if len(rows) == 0 {
		return
	}
	w.heading(2, "RPC layer split")
	w.line("The plan's %s ran on bench hosts, started over ssh before the first leg and stopped after the last. Each leg on their devices ran %s; its log says which endpoint each RPC device is and how many layers llama.cpp assigned to it (the output layer counted) with its buffers in MiB.",
		code("rpc_servers"), code("llama-bench -v"))
	w.blank()
	w.table([]string{"Leg", "Label", "Device", "Host", "Endpoint", "Layers", "Model MiB", "KV MiB", "Compute MiB"}, "rlllllrrr", rows)
}
