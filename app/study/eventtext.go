package study

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EventText is an engine event in words: the one wording the CLI prints and the window's
// console shows (the window adds the time of day). It is "" for events that say nothing on
// their own (progress ticks, the end of a run: the callers show those their own way).
func EventText(e Event) string {
	pr := e.Progress
	switch e.Kind {
	case EventRunStarted:
		if pr.LegsDone > 0 {
			return fmt.Sprintf("resuming: %d/%d legs finished before", pr.LegsDone, pr.LegsTotal)
		}
	case EventBandwidth:
		return fmt.Sprintf("memory bandwidth measured: %.1f GB/s (triad)", e.BandwidthGBs)
	case EventLegSkipped:
		return fmt.Sprintf("leg %s finished in an earlier run", e.Leg)
	case EventLegStarted:
		if e.Role != RoleLeg && e.Role != "" { // a canary: its label says what it is
			return fmt.Sprintf("%s started: %s", e.Leg, JoinArgs(e.Argv))
		}
		label := e.Leg
		if e.Attempt > 1 {
			label += fmt.Sprintf(" (attempt %d)", e.Attempt)
		}
		if c := e.Chunk; c != nil {
			// Adaptive: every leg runs chunk after chunk until the rule stops them together.
			return fmt.Sprintf("round %d, chunk %d/%d: leg %s chunk %d (reps %d–%d of at most %d) started: %s", c.Round, c.InRound, c.RoundChunks,
				label, c.Chunk, c.RepsBefore+1, c.RepsBefore+c.Reps, c.MaxReps, JoinArgs(e.Argv))
		}
		return fmt.Sprintf("leg %d/%d %s started: %s", pr.LegsDone+1, pr.LegsTotal, label, JoinArgs(e.Argv))
	case EventLine:
		if l := e.Line; l != nil {
			text := "  │ " + l.Text
			if l.Dropped > 0 {
				text += fmt.Sprintf("   [%d earlier line(s) not shown: the console fell behind; the leg's transcript keeps them]", l.Dropped)
			}
			return text
		}
	case EventSample:
		if s := e.Sample; s != nil {
			return fmt.Sprintf("  %s %-16s %10.2f t/s  cv %5.1f%%", e.Leg, s.Test, s.AvgTs, s.CV*100)
		}
	case EventFlagged:
		if f := e.Flagged; f != nil {
			if f.Counted {
				return fmt.Sprintf("  %s flagged: %s; the leg goes on", e.Leg, f.Reason)
			}
			return fmt.Sprintf("  %s flagged: %s; the leg halts, the study continues", e.Leg, f.Reason)
		}
	case EventLegFinished:
		if o := e.Outcome; o != nil {
			msg := fmt.Sprintf("leg %s %s: %d/%d results", e.Leg, o.Class, o.Results, o.Expected)
			if o.Flagged+o.Discarded > 0 {
				msg += fmt.Sprintf(" (%d flagged, %d discarded)", o.Flagged, o.Discarded)
			}
			msg += " in " + o.Duration.Round(time.Millisecond).String()
			if o.Reason != "" {
				msg += ": " + o.Reason
			}
			return msg
		}
	case EventCanary:
		if c := e.Canary; c != nil {
			word := "passed"
			if !c.Pass {
				word = "FAILED"
			}
			return fmt.Sprintf("canary after %s %s: %s", c.After, word, c.Reason)
		}
	case EventVerdict:
		if v := e.Verdict; v != nil {
			msg := fmt.Sprintf("verdict %s: %s", v.Prediction, v.Word())
			if v.Detail != "" {
				msg += " (" + v.Detail + ")"
			}
			if v.Problem != "" {
				msg += ": " + v.Problem
			}
			return msg
		}
	case EventHalted:
		return "halted: " + e.Reason
	}
	return ""
}

// JoinArgs writes an argv as a shell would read it back: arguments with spaces or shell
// characters quoted.
func JoinArgs(a []string) string {
	out := make([]string, len(a))
	for i, s := range a {
		if s == "" || strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			s = strconv.Quote(s)
		}
		out[i] = s
	}
	return strings.Join(out, " ")
}
