package study

import (
	"encoding/json"
	"io"
)

// ReportRPCSplit is where a leg's layers and buffers went among the plan's RPC servers, as
// llama.cpp's log said (journaled as study.rpc_split).
type ReportRPCSplit struct {
	Devices []RPCDeviceUse `json:"devices"`
	Local   int            `json:"local_layers"`
}

// reportRPCSplits attaches each leg's journaled layer split (none for a plan without
// rpc_servers: the field is then absent).
func reportRPCSplits(l *Loaded, legs []ReportLeg) {
	by := map[int64]*ReportRPCSplit{}
	for _, n := range l.St.Notes {
		if n.Kind != NoteRPCSplit {
			continue
		}
		var s RPCSplitNote
		if json.Unmarshal(n.Payload, &s) != nil || s.Leg == 0 || len(s.Devices) == 0 {
			continue
		}
		by[s.Leg] = &ReportRPCSplit{Devices: s.Devices, Local: s.Local}
	}
	for i := range legs {
		if r, ok := by[legs[i].ID]; ok && legs[i].ID != 0 {
			legs[i].RPCSplit = r
		}
	}
}

// writeRPCSplits prints each leg's per-host layer split.
func writeRPCSplits(w io.Writer, r *Report) {
	head := false
	for _, l := range r.Legs {
		if l.RPCSplit == nil {
			continue
		}
		if !head {
			fprintf(w, "\nRPC layer split (llama.cpp's log: layers assigned, the output layer counted; buffers in MiB)\n")
			head = true
		}
		fprintf(w, "  %s:", l.Label)
		for _, d := range l.RPCSplit.Devices {
			host := d.Host
			if host == "" {
				host = "?"
			}
			fprintf(w, " %s %s (%s) %d layers, model %.2f, KV %.2f, compute %.2f;", d.Device, host, d.Endpoint, d.Layers, d.ModelMiB, d.KVMiB, d.ComputeMiB)
		}
		fprintf(w, " local %d layers\n", l.RPCSplit.Local)
	}
}
