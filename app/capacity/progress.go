package capacity

import (
	"fmt"
	"strings"
	"time"
)

// ProgressLine is the one-line account of a run event that the CLI prints and the window's
// console shows; "" for events not worth a line (requests, lifetime starts).
func ProgressLine(ev RunEvent) string {
	p := ev.Progress
	eta := "ETA ?"
	if p.ETA >= 0 && p.CellsDone > 0 {
		eta = "ETA " + p.ETA.Round(time.Second).String()
	}
	head := fmt.Sprintf("[configurations %d/%d, cells %d/%d, %s, %s]", p.LifetimesDone, p.LifetimesTotal,
		p.CellsDone, p.CellsTotal, p.Elapsed.Round(100*time.Millisecond), eta)
	switch ev.Type {
	case RunStarted:
		line := fmt.Sprintf("%s %d server lifetimes, %d cells", head, p.LifetimesTotal, p.CellsTotal)
		if rs := ev.Resume; rs != nil {
			line += fmt.Sprintf("; resumed: %d %s done before (kept, not run again), %d to run", len(rs.Lifetimes),
				plural(len(rs.Lifetimes), "lifetime", "lifetimes"), p.LifetimesTotal-len(rs.Lifetimes))
			if len(rs.Guards) > 0 {
				line += fmt.Sprintf(", %d quality %s kept", len(rs.Guards), plural(len(rs.Guards), "guard", "guards"))
			}
			if len(rs.Kept) > 0 {
				line += "; run again, the earlier attempt's files kept in " + strings.Join(rs.Kept, ", ")
			}
			if len(rs.Cleared) > 0 {
				line += "; run again from scratch: " + strings.Join(rs.Cleared, ", ")
			}
			if rs.Previous != "" {
				line += "; the run before ended: " + rs.Previous
			}
		}
		return line
	case NotResumed:
		return fmt.Sprintf("not resumed: %s; starting a new run folder", ev.Error)
	case RPCServerEvent:
		return rpcProgressLine(head, ev.RPC)
	case ServerReady:
		if s := ev.Server; s != nil {
			return fmt.Sprintf("%s %s: llama-server ready on 127.0.0.1:%d in %s (pid %d)", head, ev.Lifetime, s.Port,
				s.ReadyIn.Round(time.Millisecond), s.Pid)
		}
	case ServerFailed:
		return fmt.Sprintf("%s %s: llama-server failed: %s; its cells are recorded as not sent", head, ev.Lifetime, ev.Error)
	case CellStarted:
		return fmt.Sprintf("%s %s C=%d", head, ev.Lifetime, ev.Clients)
	case CellDone:
		if c := ev.Cell; c != nil {
			line := fmt.Sprintf("%s %s C=%d: %d/%d completed, %.1f tok/s", head, ev.Lifetime, ev.Clients, c.Completed, c.Attempted, c.Rate)
			if c.FirstErr != "" {
				line += "; first failure: " + c.FirstErr
			}
			return line
		}
	case GuardStarted:
		return fmt.Sprintf("%s quality guard %s", head, ev.Lifetime)
	case GuardDone:
		if g := ev.Guard; g != nil {
			return fmt.Sprintf("%s quality guard %s: %d/%d cases passed", head, ev.Lifetime, g.Score, g.Cases)
		}
	case LifetimeDone:
		if ev.Error != "" {
			return fmt.Sprintf("%s %s: %s; a resumed run measures it again", head, ev.Lifetime, ev.Error)
		}
		if s := ev.Server; s != nil && s.Unexpect {
			return fmt.Sprintf("%s %s: llama-server ended on its own: %s %s", head, ev.Lifetime, s.Class, s.Reason)
		}
	case AssemblyFailed:
		return fmt.Sprintf("%s assembly failed: %s", head, ev.Error)
	case RunDone:
		if ev.Error != "" {
			return fmt.Sprintf("%s run ended: %s", head, ev.Error)
		}
		return head + " done"
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
