package workbench

import (
	"fmt"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// The RPC topology's entries (docs/fleet.md) in one sentence each.
func init() {
	journalSentences[study.NoteRPCServer] = rpcServer
	journalSentences[capacity.NoteRPCServer] = rpcServer // a capacity run's servers: the same payload
	journalSentences[study.NoteRPCSplit] = func(m jmap) string {
		return fmt.Sprintf("leg %s layers: %s, local %d", m.str("label"), rpcDevices(m, true), m.int("local_layers"))
	}
	journalSentences[capacity.NoteRPCSplit] = func(m jmap) string {
		// llama-server logs the layer assignment only at debug verbosity: without it the
		// buffers are the split.
		if b, _ := m["layers_logged"].(bool); b {
			return fmt.Sprintf("server lifetime %s layers: %s, local %d", m.str("lifetime"), rpcDevices(m, true), m.int("local_layers"))
		}
		return fmt.Sprintf("server lifetime %s buffers (layers not logged): %s", m.str("lifetime"), rpcDevices(m, false))
	}
}

// rpcServer is a ggml-rpc-server of the plan started, stopped or refused (study.RPCServerNote).
func rpcServer(m jmap) string {
	at := fmt.Sprintf("ggml-rpc-server on host %s (%s)", m.str("host"), m.str("endpoint"))
	switch ev := m.str("event"); ev {
	case "started":
		return fmt.Sprintf("%s started over ssh, PID %d on the host", at, m.int("pid"))
	case "stopped":
		how := "stopped with " + m.str("signal")
		if m.str("signal") == "" {
			how = "had already ended"
		}
		left := "none left on the host"
		if n := len(m.list("left")); n > 0 {
			left = fmt.Sprintf("%d process(es) left on the host", n)
		}
		if e := m.str("error"); e != "" && len(m.list("left")) == 0 {
			left = e
		}
		return fmt.Sprintf("%s %s: %s", at, how, left)
	default:
		return fmt.Sprintf("%s %s: %s", at, ev, m.str("error"))
	}
}

// rpcDevices is a split's devices: each with its host and layers, or its buffers.
func rpcDevices(m jmap, layers bool) string {
	var parts []string
	for _, d := range m.list("devices") {
		dm, _ := d.(map[string]any)
		j := jmap(dm)
		if layers {
			parts = append(parts, fmt.Sprintf("%s on %s %d", j.str("device"), j.str("host"), j.int("layers")))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s on %s model %s MiB, KV %s MiB, compute %s MiB", j.str("device"), j.str("host"),
			figure(numOr(j, "model_mib")), figure(numOr(j, "kv_mib")), figure(numOr(j, "compute_mib"))))
	}
	if len(parts) == 0 {
		return "no RPC device in the log"
	}
	return strings.Join(parts, ", ")
}
