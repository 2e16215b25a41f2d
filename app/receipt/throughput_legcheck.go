package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// A throughput bundle's legs checked against the journal entries that recorded them.

// checkLegs holds every leg record against its journal entries: leg.started (label, kind,
// start, fingerprint, conditions, argv when not redacted), leg.rows_marked (row counts and the
// digest of the row statuses) and leg.finished (state, class, reason, exit, end, row count,
// and the transcript's SHA-256 when not redacted). Every leg the excerpt starts must be there.
func (tb *throughputBundle) checkLegs() error {
	byLeg, err := tb.legEntries()
	if err != nil {
		return err
	}
	have := map[int64]bool{}
	for _, lf := range tb.legs {
		r := lf.rec
		have[r.ID] = true
		name := lf.dir + "/" + LegFile
		e := byLeg[r.ID]
		if e == nil || e.started == nil {
			return fmt.Errorf("%s: leg %d has no leg.started entry in %s", name, r.ID, FileJournal)
		}
		if err := tb.checkLegStarted(lf, name, e.started); err != nil {
			return err
		}
		if e.marked != nil {
			if err := checkLegMarked(lf, e.marked); err != nil {
				return err
			}
		}
		if e.finished == nil {
			if len(lf.telemetry) > 0 {
				return fmt.Errorf("%s/%s: the leg has telemetry samples but %s has no leg.finished entry for it", lf.dir, LegTelemetry, FileJournal)
			}
			if r.EndedAt != "" {
				return fmt.Errorf("%s: the leg ended at %s but %s has no leg.finished entry for it", name, r.EndedAt, FileJournal)
			}
			continue
		}
		if err := tb.checkLegFinished(lf, name, e.finished); err != nil {
			return err
		}
	}
	for id, e := range byLeg {
		if !have[id] && e.started != nil {
			return fmt.Errorf("%s: entry %d starts leg %d, which has no folder under %s", FileJournal, e.started.Seq, id, DirLegs)
		}
	}
	return nil
}

// legEntries are the journal's leg.started, leg.rows_marked and leg.finished entries of the
// study, by leg.
type legEntries struct{ started, marked, finished *JournalLine }

func (tb *throughputBundle) legEntries() (map[int64]*legEntries, error) {
	byLeg := map[int64]*legEntries{}
	for i := range tb.journal {
		j := &tb.journal[i]
		if j.StudyID() != tb.nb.StudyID {
			continue
		}
		var p struct {
			Leg int64 `json:"leg"`
		}
		switch j.Kind {
		case "leg.started", "leg.rows_marked", "leg.finished":
			if err := payloadOf(*j, &p); err != nil {
				return nil, err
			}
		default:
			continue
		}
		e := byLeg[p.Leg]
		if e == nil {
			e = &legEntries{}
			byLeg[p.Leg] = e
		}
		switch j.Kind {
		case "leg.started":
			e.started = j
		case "leg.rows_marked":
			e.marked = j
		case "leg.finished":
			e.finished = j
		}
	}
	return byLeg, nil
}

// legMismatch says that a leg's field differs from what the journal's entry seq recorded.
func legMismatch(name, field string, got, want any, seq int64) error {
	return fmt.Errorf("%s: %s is %v, the journal (entry %d) recorded %v", name, field, got, seq, want)
}

// checkLegStarted ties leg.json to its leg.started entry.
func (tb *throughputBundle) checkLegStarted(lf legFolder, name string, started *JournalLine) error {
	r := lf.rec
	var s struct {
		Label       string   `json:"label"`
		Kind        string   `json:"kind"`
		StartedAt   string   `json:"started_at"`
		Fingerprint string   `json:"fingerprint"`
		Conditions  []string `json:"conditions"`
		Argv        []string `json:"argv"`
	}
	if err := payloadOf(*started, &s); err != nil {
		return err
	}
	switch {
	case s.Label != r.Label:
		return legMismatch(name, "label", r.Label, s.Label, started.Seq)
	case s.Kind != r.Kind:
		return legMismatch(name, "kind", r.Kind, s.Kind, started.Seq)
	case s.StartedAt != r.StartedAt:
		return legMismatch(name, "started_at", r.StartedAt, s.StartedAt, started.Seq)
	case s.Fingerprint != r.Fingerprint:
		return legMismatch(name, "fingerprint", r.Fingerprint, s.Fingerprint, started.Seq)
	case !slices.Equal(s.Conditions, r.Conditions) && len(s.Conditions)+len(r.Conditions) > 0:
		return legMismatch(name, "conditions", r.Conditions, s.Conditions, started.Seq)
	case len(s.Argv) != len(r.Argv) || !tb.redaction.Redacted && !slices.Equal(s.Argv, r.Argv):
		return legMismatch(name, "argv", r.Argv, s.Argv, started.Seq)
	}
	return nil
}

// checkLegMarked ties rows.jsonl's row count and statuses to the leg.rows_marked entry.
func checkLegMarked(lf legFolder, marked *JournalLine) error {
	var m struct {
		Rows, Result, Flagged, Discarded int
		Statuses                         string `json:"statuses_sha256"`
	}
	if err := payloadOf(*marked, &m); err != nil {
		return err
	}
	var digest []byte
	counts := map[string]int{}
	for _, st := range lf.statuses {
		digest = append(append(digest, st...), '\n')
		counts[st]++
	}
	sum := sha256.Sum256(digest)
	rowsName := lf.dir + "/" + LegRowsFile
	if m.Rows != len(lf.rows) || m.Result != counts["result"] || m.Flagged != counts["flagged"] || m.Discarded != counts["discarded"] {
		return fmt.Errorf("%s: %d rows (%d result, %d flagged, %d discarded), the journal (entry %d) recorded %d (%d, %d, %d)", rowsName,
			len(lf.rows), counts["result"], counts["flagged"], counts["discarded"], marked.Seq, m.Rows, m.Result, m.Flagged, m.Discarded)
	}
	if hex.EncodeToString(sum[:]) != m.Statuses {
		return fmt.Errorf("%s: the row statuses hash to %s, the journal (entry %d) recorded %s", rowsName, hex.EncodeToString(sum[:]), marked.Seq, m.Statuses)
	}
	return nil
}

// checkLegFinished ties leg.json's outcome, rows.jsonl and the transcript to the leg.finished
// entry (redacted fields by their form only).
func (tb *throughputBundle) checkLegFinished(lf legFolder, name string, finished *JournalLine) error {
	r := lf.rec
	var f struct {
		State        string `json:"state"`
		Class        string `json:"class"`
		Reason       string `json:"reason"`
		ExitCode     *int   `json:"exit_code"`
		Signal       string `json:"signal"`
		EndedAt      string `json:"ended_at"`
		BenchRows    int    `json:"bench_rows"`
		Transcript   string `json:"transcript_sha256"`
		Rows         string `json:"rows_sha256"`
		Telemetry    int64  `json:"telemetry_rows"`
		TelemetrySHA string `json:"telemetry_sha256"`
	}
	if err := payloadOf(*finished, &f); err != nil {
		return err
	}
	switch {
	case f.State != r.State:
		return legMismatch(name, "state", r.State, f.State, finished.Seq)
	case f.Class != r.Class:
		return legMismatch(name, "class", r.Class, f.Class, finished.Seq)
	case !tb.redaction.Redacted && f.Reason != r.Reason:
		return legMismatch(name, "reason", r.Reason, f.Reason, finished.Seq)
	case f.Signal != r.Signal:
		return legMismatch(name, "signal", r.Signal, f.Signal, finished.Seq)
	case (f.ExitCode == nil) != (r.ExitCode == nil) || f.ExitCode != nil && *f.ExitCode != *r.ExitCode:
		return legMismatch(name, "exit_code", intText(r.ExitCode), intText(f.ExitCode), finished.Seq)
	case f.EndedAt != r.EndedAt:
		return legMismatch(name, "ended_at", r.EndedAt, f.EndedAt, finished.Seq)
	case f.BenchRows != len(lf.rows):
		return fmt.Errorf("%s/%s: %d rows, the journal (entry %d) recorded %d", lf.dir, LegRowsFile, len(lf.rows), finished.Seq, f.BenchRows)
	}
	if err := checkLegTelemetry(lf, f.Telemetry, f.TelemetrySHA, finished.Seq); err != nil {
		return err
	}
	// The row values: rows.jsonl is written verbatim in the canonical serialization the
	// notebook hashed into rows_sha256 (canon.AppendRowLine). Entries journaled before
	// rows_sha256 existed tie the rows by count and status only.
	if f.Rows == "" {
		tb.rowsOld++
	} else {
		sum := sha256.Sum256(lf.rowsJSONL)
		if got := hex.EncodeToString(sum[:]); got != f.Rows {
			return fmt.Errorf("%s/%s: hashes to %s, the rows_sha256 the journal (entry %d) recorded is %s: a row's values or status differ from the notebook's", lf.dir, LegRowsFile, got, finished.Seq, f.Rows)
		}
		tb.rowsTied++
	}
	if !tb.redaction.Redacted {
		sum := sha256.Sum256(lf.transcript)
		if got := hex.EncodeToString(sum[:]); got != f.Transcript {
			return fmt.Errorf("%s/%s: hashes to %s, the journal (entry %d) recorded %s", lf.dir, LegTranscript, got, finished.Seq, f.Transcript)
		}
	}
	return nil
}

func intText(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}
