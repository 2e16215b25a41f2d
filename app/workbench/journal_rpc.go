package workbench

import (
	"fmt"
	"strings"

	"sparkbench/app/study"
)

// The RPC topology's entries (docs/fleet.md) in one sentence each.
func init() {
	journalSentences[study.NoteRPCServer] = func(m jmap) string {
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
	journalSentences[study.NoteRPCSplit] = func(m jmap) string {
		var parts []string
		for _, d := range m.list("devices") {
			dm, _ := d.(map[string]any)
			j := jmap(dm)
			parts = append(parts, fmt.Sprintf("%s on %s %d", j.str("device"), j.str("host"), j.int("layers")))
		}
		return fmt.Sprintf("leg %s layers: %s, local %d", m.str("label"), strings.Join(parts, ", "), m.int("local_layers"))
	}
}
