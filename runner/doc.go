// Package runner drives llama.cpp processes: a pty process driver (StartProc) and, on top of
// it, the llama-bench leg (StartLeg) and the leg queue (StartQueue).
//
// The API follows tsenart/vegeta: a producer returns at once, delivers Events on a channel
// and closes it after its last event; Stop is idempotent. Every event type, the leg spec and
// the leg record are plain JSON-serialisable structs; the package knows nothing of the store
// or the UI.
//
//	leg := runner.StartLeg(ctx, runner.LegSpec{Bench: loc.Bench, Args: cfg.Args()})
//	for ev := range leg.Events() {
//		switch ev.Type {
//		case runner.EventSample: // ev.Sample.Result is the typed llama-bench row
//		case runner.EventExit:   // ev.Exit.Class, ev.Exit.Reason
//		}
//	}
//	rec := leg.Result() // rows marked result/flagged/discarded, fingerprint, transcript
//
// A process runs in a pty (creack/pty), from an argv, never a shell string, in its own session
// and process group with Pdeathsig, with NO_COLOR=1 and TERM=dumb. One goroutine reads the
// pty: verbatim bytes with arrival times go to the Transcript (capped), CRLF and ANSI are
// removed for parsing. Every wait is bounded (Limits: first output, idle output, overall,
// SIGTERM grace), and after every end the whole process group is gone before the Exit event.
// See docs/runner.md.
package runner
