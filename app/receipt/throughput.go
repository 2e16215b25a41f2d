package receipt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/runner/vocab"
)

// SchemaThroughputStudy identifies a throughput bundle's study.json.
const SchemaThroughputStudy = "sparkbench.throughput-study/v1"

// throughputBundle is a throughput bundle's raw files, parsed and checked against each other.
type throughputBundle struct {
	ix        *Index
	nb        NotebookRecord
	planJSON  []byte
	plan      *study.Plan
	journal   []JournalLine
	chain     ChainSummary
	legs      []legFolder
	models    []ModelRecord
	headers   map[string]*gguf.File // plan model ID → GGUF header
	build     *BuildRecord
	machines  []NotebookMachine
	redaction Redaction
	rowsTied  int // legs whose rows.jsonl matched the rows_sha256 of their leg.finished
	rowsOld   int // finished legs journaled before rows_sha256 existed
	st        study.StoredStudy
	rawFiles  int
	rawBytes  int64
}

type legFolder struct {
	dir        string
	rec        LegRecord
	rows       []study.StoredRow
	statuses   []string
	transcript []byte
	rowsJSONL  []byte
	results    []benchfmt.Result
}

// ChainSummary describes the journal excerpt after its chain was re-walked.
type ChainSummary struct {
	FirstSeq      int64  `json:"first_seq"`
	LastSeq       int64  `json:"last_seq"`
	Entries       int    `json:"entries"`
	StudyEntries  int    `json:"study_entries"`
	FirstPrevHash string `json:"first_prev_hash"`
	LastHash      string `json:"last_hash"`
}

// readThroughput parses and cross-checks every raw file a throughput receipt reads.
func readThroughput(files Files, ix *Index) (*throughputBundle, error) {
	tb := &throughputBundle{ix: ix, headers: map[string]*gguf.File{}}
	for name, b := range files {
		if !IsDerived(name) {
			tb.rawFiles++
			tb.rawBytes += int64(len(b))
		}
	}
	b, err := need(files, FileNotebook)
	if err != nil {
		return nil, err
	}
	if err := decodeStrict(FileNotebook, b, &tb.nb); err != nil {
		return nil, err
	}
	if tb.planJSON, err = need(files, FilePlan); err != nil {
		return nil, err
	}
	if tb.plan, err = study.Decode(FilePlan, tb.planJSON); err != nil {
		return nil, err
	}
	if b, err = need(files, FileJournal); err != nil {
		return nil, err
	}
	if tb.journal, err = ParseJournal(b); err != nil {
		return nil, err
	}
	if tb.chain, err = WalkChain(tb.journal, tb.nb.StudyID); err != nil {
		return nil, err
	}
	if b, err = need(files, FileRedaction); err != nil {
		return nil, err
	}
	if err := decodeStrict(FileRedaction, b, &tb.redaction); err != nil {
		return nil, err
	}
	if b, ok := files[FileBuild]; ok {
		tb.build = &BuildRecord{}
		if err := decodeStrict(FileBuild, b, tb.build); err != nil {
			return nil, err
		}
	}
	if b, ok := files[FileMachines]; ok {
		if err := decodeStrict(FileMachines, b, &tb.machines); err != nil {
			return nil, err
		}
	}
	if err := tb.checkRecords(); err != nil {
		return nil, err
	}
	if err := tb.readModels(files); err != nil {
		return nil, err
	}
	if err := tb.readLegs(files); err != nil {
		return nil, err
	}
	if err := tb.storedStudy(); err != nil {
		return nil, err
	}
	if err := tb.checkLegs(); err != nil {
		return nil, err
	}
	return tb, nil
}

func (tb *throughputBundle) readModels(files Files) error {
	b, err := need(files, FileModels)
	if err != nil {
		return err
	}
	if err := decodeStrict(FileModels, b, &tb.models); err != nil {
		return err
	}
	for _, m := range tb.models {
		if m.Header == "" || m.Model == "" {
			continue
		}
		hb, err := need(files, m.Header)
		if err != nil {
			return fmt.Errorf("%s: model %s: %w", FileModels, m.Model, err)
		}
		h, err := gguf.Read(bytes.NewReader(hb), m.Bytes)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Header, err)
		}
		tb.headers[m.Model] = h
	}
	return nil
}

func (tb *throughputBundle) readLegs(files Files) error {
	dirs := map[string]bool{}
	for name := range files {
		if rest, ok := strings.CutPrefix(name, DirLegs); ok {
			dir, _, ok := strings.Cut(rest, "/")
			if !ok {
				return fmt.Errorf("%s: a leg's files live in a folder legs/NNN-label/", name)
			}
			dirs[DirLegs+dir] = true
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	seenID := map[int64]string{}
	for _, dir := range names {
		lf := legFolder{dir: dir}
		b, err := need(files, dir+"/"+LegFile)
		if err != nil {
			return err
		}
		if err := decodeStrict(dir+"/"+LegFile, b, &lf.rec); err != nil {
			return err
		}
		if other, dup := seenID[lf.rec.ID]; dup {
			return fmt.Errorf("%s/%s: leg %d is also %s", dir, LegFile, lf.rec.ID, other)
		}
		seenID[lf.rec.ID] = dir
		if lf.transcript, err = need(files, dir+"/"+LegTranscript); err != nil {
			return err
		}
		rowsName := dir + "/" + LegRowsFile
		if b, err = need(files, rowsName); err != nil {
			return err
		}
		lf.rowsJSONL = b
		var parser benchfmt.Parser
		lines := bytes.Split(b, []byte("\n"))
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		for i, line := range lines {
			if len(line) == 0 {
				return fmt.Errorf("%s: line %d is empty", rowsName, i+1)
			}
			var rr RowRecord
			if err := decodeStrict(fmt.Sprintf("%s: line %d", rowsName, i+1), line, &rr); err != nil {
				return err
			}
			if rr.Seq != int64(len(lf.rows)) {
				return fmt.Errorf("%s: line %d: seq %d, want %d (rows in arrival order from 0)", rowsName, i+1, rr.Seq, len(lf.rows))
			}
			switch rr.Status {
			case string(vocab.RowResult), string(vocab.RowFlagged), string(vocab.RowDiscarded), "":
			default:
				return fmt.Errorf("%s: line %d: status %q is not result, flagged, discarded or empty", rowsName, i+1, rr.Status)
			}
			res, err := parser.ParseLine(rr.Row)
			if err != nil {
				return fmt.Errorf("%s: line %d: %w", rowsName, i+1, err)
			}
			lf.rows = append(lf.rows, study.StoredRow{LegID: lf.rec.ID, Seq: rr.Seq, Status: rr.Status, Result: res})
			lf.statuses = append(lf.statuses, rr.Status)
		}
		tb.legs = append(tb.legs, lf)
	}
	return nil
}

// checkRecords holds the notebook's build and machine records to the record ids notebook.json
// lists (the ids the legs name; each leg.started journals its own).
func (tb *throughputBundle) checkRecords() error {
	if tb.build != nil {
		for _, b := range tb.build.NotebookBuilds {
			if !slices.Contains(tb.nb.BuildIDs, b.ID) {
				return fmt.Errorf("%s: build record %d is not one the legs name (%s lists %v)", FileBuild, b.ID, FileNotebook, tb.nb.BuildIDs)
			}
		}
	}
	for _, m := range tb.machines {
		if !slices.Contains(tb.nb.MachineIDs, m.ID) {
			return fmt.Errorf("%s: machine record %d is not one the legs name (%s lists %v)", FileMachines, m.ID, FileNotebook, tb.nb.MachineIDs)
		}
	}
	return nil
}

// payload helpers -------------------------------------------------------------------------

func parseAt(j JournalLine) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, j.At)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: entry %d: at %q: %w", FileJournal, j.Seq, j.At, err)
	}
	return t, nil
}

func payloadOf(j JournalLine, v any) error {
	if err := json.Unmarshal(j.Payload, v); err != nil {
		return fmt.Errorf("%s: entry %d (%s): payload: %w", FileJournal, j.Seq, j.Kind, err)
	}
	return nil
}

// storedStudy rebuilds what the notebook's study.Recorder returns from the journal excerpt
// (chain-checked) and notebook.json: the plan as registered, amendments, deviations, the
// latest computed and human verdict of each prediction, findings and the engine's notes.
func (tb *throughputBundle) storedStudy() error {
	id := tb.nb.StudyID
	st := study.StoredStudy{ID: id, Name: tb.nb.Name, Status: tb.nb.Status, PlanJSON: tb.planJSON,
		Verdicts: map[string]study.StoredVerdicts{}}
	keys := map[int64]string{}
	for _, p := range tb.nb.Predictions {
		keys[p.ID] = p.Key
	}
	type finding struct {
		number int
		f      study.StoredFinding
	}
	var findings []finding
	var created, registered bool
	for _, j := range tb.journal {
		if j.StudyID() != id {
			continue
		}
		at, err := parseAt(j)
		if err != nil {
			return err
		}
		switch j.Kind {
		case "study.created":
			var p struct {
				Name string `json:"name"`
				Kind string `json:"kind"`
			}
			if err := payloadOf(j, &p); err != nil {
				return err
			}
			if p.Name != tb.nb.Name || p.Kind != tb.nb.Kind {
				return fmt.Errorf("%s: study %d is %q (%s), the journal's study.created (entry %d) says %q (%s)", FileNotebook, id, tb.nb.Name, tb.nb.Kind, j.Seq, p.Name, p.Kind)
			}
			created = true
		case "plan.registered":
			var p struct {
				SHA256 string          `json:"plan_sha256"`
				Plan   json.RawMessage `json:"plan"`
			}
			if err := payloadOf(j, &p); err != nil {
				return err
			}
			sum := sha256.Sum256(tb.planJSON)
			if hex.EncodeToString(sum[:]) != p.SHA256 {
				return fmt.Errorf("%s: hashes to %s, the journal registered plan %s (entry %d)", FilePlan, hex.EncodeToString(sum[:]), p.SHA256, j.Seq)
			}
			if !bytes.Equal(p.Plan, tb.planJSON) {
				return fmt.Errorf("%s: differs from the plan journaled in entry %d", FilePlan, j.Seq)
			}
			st.PlanSHA256, st.RegisteredAt, registered = p.SHA256, at, true
		case "amendment":
			var p struct {
				Target string          `json:"target"`
				Reason string          `json:"reason"`
				Change json.RawMessage `json:"change"`
			}
			if err := payloadOf(j, &p); err != nil {
				return err
			}
			st.Amendments = append(st.Amendments, study.StoredAmendment{Target: p.Target, Reason: p.Reason, Change: p.Change, At: at})
		case "deviation":
			var p struct {
				Leg         *int64          `json:"leg"`
				Description string          `json:"description"`
				Detail      json.RawMessage `json:"detail"`
			}
			if err := payloadOf(j, &p); err != nil {
				return err
			}
			d := study.StoredDeviation{Description: p.Description, Detail: p.Detail, At: at}
			if p.Leg != nil {
				d.LegID = *p.Leg
			}
			st.Deviations = append(st.Deviations, d)
		case "verdict", "verdict.human":
			var p struct {
				Key       string          `json:"key"`
				Outcome   string          `json:"outcome"`
				Observed  *float64        `json:"observed"`
				Detail    json.RawMessage `json:"detail"`
				Rationale string          `json:"rationale"`
				Author    string          `json:"author"`
			}
			if err := payloadOf(j, &p); err != nil {
				return err
			}
			v := &study.StoredVerdict{Outcome: p.Outcome, Observed: p.Observed, Detail: p.Detail, Rationale: p.Rationale, Author: p.Author, At: at}
			sv := st.Verdicts[p.Key]
			if j.Kind == "verdict" {
				sv.Computed = v
			} else {
				sv.Human = v
			}
			st.Verdicts[p.Key] = sv
		case "finding":
			var p struct {
				Number      int     `json:"number"`
				Label       string  `json:"label"`
				Title       string  `json:"title"`
				Legs        []int64 `json:"legs"`
				Predictions []int64 `json:"predictions"`
			}
			if err := payloadOf(j, &p); err != nil {
				return err
			}
			f := study.StoredFinding{Label: p.Label, Text: p.Title, LegIDs: p.Legs, At: at}
			if len(f.LegIDs) == 0 {
				f.LegIDs = nil
			}
			for _, pid := range p.Predictions {
				k, ok := keys[pid]
				if !ok {
					return fmt.Errorf("%s: finding %s (entry %d) names prediction id %d, which %s does not list", FileJournal, p.Label, j.Seq, pid, FileNotebook)
				}
				f.Predictions = append(f.Predictions, k)
			}
			findings = append(findings, finding{p.Number, f})
		}
		if strings.HasPrefix(j.Kind, "study.") {
			st.Notes = append(st.Notes, study.StoredNote{Kind: j.Kind, Payload: j.Payload, At: at})
		}
	}
	switch {
	case !created:
		return fmt.Errorf("%s: no study.created entry for study %d in the excerpt", FileJournal, id)
	case !registered:
		return fmt.Errorf("%s: no plan.registered entry for study %d in the excerpt", FileJournal, id)
	}
	sort.SliceStable(findings, func(a, b int) bool { return findings[a].number < findings[b].number })
	for _, f := range findings {
		st.Findings = append(st.Findings, f.f)
	}
	// Model files are not in the bundle: a plan folder that cannot exist (a NUL byte makes
	// every lookup fail before it reaches the file system) keeps study.Show from reading
	// whatever happens to lie at the recorded path on this machine. Ceilings are computed
	// from the bundle's GGUF headers instead (fixModelFigures).
	st.PlanDir = "\x00bundle"
	tb.st = st
	return nil
}

// checkLegs holds every leg record against its journal entries: leg.started (label, kind,
// start, fingerprint, conditions, argv when not redacted), leg.rows_marked (row counts and the
// digest of the row statuses) and leg.finished (state, class, reason, exit, end, row count,
// and the transcript's SHA-256 when not redacted). Every leg the excerpt starts must be there.
func (tb *throughputBundle) checkLegs() error {
	type entries struct{ started, marked, finished *JournalLine }
	byLeg := map[int64]*entries{}
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
				return err
			}
		default:
			continue
		}
		e := byLeg[p.Leg]
		if e == nil {
			e = &entries{}
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
	have := map[int64]bool{}
	for _, lf := range tb.legs {
		r := lf.rec
		have[r.ID] = true
		name := lf.dir + "/" + LegFile
		e := byLeg[r.ID]
		if e == nil || e.started == nil {
			return fmt.Errorf("%s: leg %d has no leg.started entry in %s", name, r.ID, FileJournal)
		}
		var s struct {
			Label       string   `json:"label"`
			Kind        string   `json:"kind"`
			StartedAt   string   `json:"started_at"`
			Fingerprint string   `json:"fingerprint"`
			Conditions  []string `json:"conditions"`
			Argv        []string `json:"argv"`
		}
		if err := payloadOf(*e.started, &s); err != nil {
			return err
		}
		mismatch := func(field string, got, want any, seq int64) error {
			return fmt.Errorf("%s: %s is %v, the journal (entry %d) recorded %v", name, field, got, seq, want)
		}
		switch {
		case s.Label != r.Label:
			return mismatch("label", r.Label, s.Label, e.started.Seq)
		case s.Kind != r.Kind:
			return mismatch("kind", r.Kind, s.Kind, e.started.Seq)
		case s.StartedAt != r.StartedAt:
			return mismatch("started_at", r.StartedAt, s.StartedAt, e.started.Seq)
		case s.Fingerprint != r.Fingerprint:
			return mismatch("fingerprint", r.Fingerprint, s.Fingerprint, e.started.Seq)
		case !slices.Equal(s.Conditions, r.Conditions) && len(s.Conditions)+len(r.Conditions) > 0:
			return mismatch("conditions", r.Conditions, s.Conditions, e.started.Seq)
		case len(s.Argv) != len(r.Argv) || !tb.redaction.Redacted && !slices.Equal(s.Argv, r.Argv):
			return mismatch("argv", r.Argv, s.Argv, e.started.Seq)
		}
		if e.marked != nil {
			var m struct {
				Rows, Result, Flagged, Discarded int
				Statuses                         string `json:"statuses_sha256"`
			}
			if err := payloadOf(*e.marked, &m); err != nil {
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
					len(lf.rows), counts["result"], counts["flagged"], counts["discarded"], e.marked.Seq, m.Rows, m.Result, m.Flagged, m.Discarded)
			}
			if hex.EncodeToString(sum[:]) != m.Statuses {
				return fmt.Errorf("%s: the row statuses hash to %s, the journal (entry %d) recorded %s", rowsName, hex.EncodeToString(sum[:]), e.marked.Seq, m.Statuses)
			}
		}
		if e.finished == nil {
			if r.EndedAt != "" {
				return fmt.Errorf("%s: the leg ended at %s but %s has no leg.finished entry for it", name, r.EndedAt, FileJournal)
			}
			continue
		}
		var f struct {
			State      string `json:"state"`
			Class      string `json:"class"`
			Reason     string `json:"reason"`
			ExitCode   *int   `json:"exit_code"`
			Signal     string `json:"signal"`
			EndedAt    string `json:"ended_at"`
			BenchRows  int    `json:"bench_rows"`
			Transcript string `json:"transcript_sha256"`
			Rows       string `json:"rows_sha256"`
		}
		if err := payloadOf(*e.finished, &f); err != nil {
			return err
		}
		switch {
		case f.State != r.State:
			return mismatch("state", r.State, f.State, e.finished.Seq)
		case f.Class != r.Class:
			return mismatch("class", r.Class, f.Class, e.finished.Seq)
		case !tb.redaction.Redacted && f.Reason != r.Reason:
			return mismatch("reason", r.Reason, f.Reason, e.finished.Seq)
		case f.Signal != r.Signal:
			return mismatch("signal", r.Signal, f.Signal, e.finished.Seq)
		case (f.ExitCode == nil) != (r.ExitCode == nil) || f.ExitCode != nil && *f.ExitCode != *r.ExitCode:
			return mismatch("exit_code", intText(r.ExitCode), intText(f.ExitCode), e.finished.Seq)
		case f.EndedAt != r.EndedAt:
			return mismatch("ended_at", r.EndedAt, f.EndedAt, e.finished.Seq)
		case f.BenchRows != len(lf.rows):
			return fmt.Errorf("%s/%s: %d rows, the journal (entry %d) recorded %d", lf.dir, LegRowsFile, len(lf.rows), e.finished.Seq, f.BenchRows)
		}
		// The row values: rows.jsonl is written verbatim in the canonical serialization the
		// notebook hashed into rows_sha256 (canon.AppendRowLine). Entries journaled before
		// rows_sha256 existed tie the rows by count and status only.
		if f.Rows == "" {
			tb.rowsOld++
		} else {
			sum := sha256.Sum256(lf.rowsJSONL)
			if got := hex.EncodeToString(sum[:]); got != f.Rows {
				return fmt.Errorf("%s/%s: hashes to %s, the rows_sha256 the journal (entry %d) recorded is %s: a row's values or status differ from the notebook's", lf.dir, LegRowsFile, got, e.finished.Seq, f.Rows)
			}
			tb.rowsTied++
		}
		if !tb.redaction.Redacted {
			sum := sha256.Sum256(lf.transcript)
			if got := hex.EncodeToString(sum[:]); got != f.Transcript {
				return fmt.Errorf("%s/%s: hashes to %s, the journal (entry %d) recorded %s", lf.dir, LegTranscript, got, e.finished.Seq, f.Transcript)
			}
		}
	}
	for id, e := range byLeg {
		if !have[id] && e.started != nil {
			return fmt.Errorf("%s: entry %d starts leg %d, which has no folder under %s", FileJournal, e.started.Seq, id, DirLegs)
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

// bundleRecorder is study.RecordReader over a bundle's parsed raw files: a receipt is computed
// by the same Show the notebook's study uses, and nothing can be written through it.
type bundleRecorder struct{ tb *throughputBundle }

func (r bundleRecorder) Study(_ context.Context, id int64) (study.StoredStudy, error) {
	if id != r.tb.st.ID {
		return study.StoredStudy{}, fmt.Errorf("the bundle holds study %d, not %d", r.tb.st.ID, id)
	}
	st := r.tb.st
	// Show reads the plan's model paths; relative base names keep it inside the unreachable
	// plan folder (see storedStudy).
	p, err := study.Decode(FilePlan, st.PlanJSON)
	if err != nil {
		return st, err
	}
	for i := range p.Models {
		p.Models[i].Path = filepath.Base(p.Models[i].Path)
	}
	if st.PlanJSON, err = json.Marshal(p); err != nil {
		return st, err
	}
	return st, nil
}
func (r bundleRecorder) Legs(context.Context, int64) ([]study.StoredLeg, error) {
	out := make([]study.StoredLeg, 0, len(r.tb.legs))
	for _, lf := range r.tb.legs {
		l := lf.rec
		sl := study.StoredLeg{ID: l.ID, Label: l.Label, Kind: l.Kind, PlanLeg: l.PlanLeg, Role: l.Role, Attempt: l.Attempt,
			State: l.State, Class: l.Class, Reason: l.Reason, ExitCode: l.ExitCode, Signal: l.Signal, Argv: l.Argv,
			Conditions: l.Conditions, PeakRSS: l.PeakRSSBytes, Rows: len(lf.rows)}
		var err error
		if sl.StartedAt, err = time.Parse(time.RFC3339Nano, l.StartedAt); err != nil {
			return nil, fmt.Errorf("%s/%s: started_at: %w", lf.dir, LegFile, err)
		}
		if l.EndedAt != "" {
			if sl.EndedAt, err = time.Parse(time.RFC3339Nano, l.EndedAt); err != nil {
				return nil, fmt.Errorf("%s/%s: ended_at: %w", lf.dir, LegFile, err)
			}
		}
		for _, s := range lf.statuses {
			switch s {
			case "result":
				sl.Results++
			case "flagged":
				sl.Flagged++
			case "discarded":
				sl.Discarded++
			default:
				sl.Unmarked++
			}
		}
		out = append(out, sl)
	}
	return out, nil
}
func (r bundleRecorder) Rows(context.Context, int64) ([]study.StoredRow, error) {
	var out []study.StoredRow
	for _, lf := range r.tb.legs {
		out = append(out, lf.rows...)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].LegID != out[b].LegID {
			return out[a].LegID < out[b].LegID
		}
		return out[a].Seq < out[b].Seq
	})
	return out, nil
}

var _ study.RecordReader = bundleRecorder{}

// Report is the study's report (what `study show --json` prints) computed from the bundle's
// raw files alone.
func (tb *throughputBundle) report() (*study.Report, error) {
	rep, err := study.Show(context.Background(), bundleRecorder{tb}, tb.nb.StudyID)
	if err != nil {
		return nil, err
	}
	rep.Study.PlanDir = ""
	if err := tb.fixModelFigures(rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// fixModelFigures recomputes the figures that read model headers (ceilings and efficiency),
// and the verdicts of predictions about them, from the GGUF headers in the bundle: study.Show
// reads them from the model files, which a bundle does not carry.
func (tb *throughputBundle) fixModelFigures(rep *study.Report) error {
	if rep.BandwidthGBs == nil {
		return nil
	}
	needs := func(s *study.Selector) bool {
		return s != nil && (s.Figure == study.FigureCeiling || s.Figure == study.FigureEfficiency)
	}
	res, preds, err := tb.results(*rep.BandwidthGBs)
	if err != nil {
		return err
	}
	for i := range rep.Figures {
		f := &rep.Figures[i]
		if !needs(&f.Selector) {
			continue
		}
		v, err := res.Resolve(f.Selector)
		f.Sources, f.Detail, f.Problem, f.Value = v.Sources, v.Detail, "", nil
		if f.Sources == nil {
			f.Sources = []string{}
		}
		if err != nil {
			f.Problem = err.Error()
		} else if !math.IsInf(v.X, 0) && !math.IsNaN(v.X) {
			x := v.X
			f.Value = &x
		}
	}
	devAfter := map[string][]study.Prediction{}
	for _, d := range rep.Deviations {
		var det struct {
			Kind   string                `json:"kind"`
			Change study.AmendmentChange `json:"change"`
		}
		if json.Unmarshal(d.Detail, &det) == nil && det.Kind == "prediction_change" {
			devAfter[det.Change.Prediction] = append(devAfter[det.Change.Prediction], det.Change.After)
		}
	}
	for i := range rep.Scoreboard {
		sc := &rep.Scoreboard[i]
		p, ok := preds[sc.Prediction]
		if ok && (needs(&p.About) || needs(p.Than)) {
			v := res.Evaluate(p)
			if v.Sources == nil {
				v.Sources = []string{}
			}
			sc.Verdict, sc.Word = v, v.Word()
		}
		for j := range sc.Deviations {
			if j < len(devAfter[sc.Prediction]) {
				after := devAfter[sc.Prediction][j]
				if needs(&after.About) || needs(after.Than) {
					v := res.Evaluate(after)
					sc.Deviations[j].Verdict, sc.Deviations[j].Word = v, "DEVIATION: "+v.Word()
				}
			}
		}
	}
	return nil
}

// results gathers the study's result rows as the engine does (status result, from the final
// finished attempt of each plan leg) with the bundle's model headers, and the predictions with
// accepted amendments applied.
func (tb *throughputBundle) results(bandwidth float64) (*study.Results, map[string]study.Prediction, error) {
	legs, err := study.Expand(tb.plan, "")
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]study.LegPlan{}
	for _, lp := range legs {
		byID[lp.ID] = lp
	}
	res := &study.Results{Plan: tb.plan, Finished: map[string]bool{}, Models: map[string]study.ModelInfo{}, BandwidthGBs: bandwidth}
	for id, h := range tb.headers {
		res.Models[id] = study.ModelInfo{Path: id, ContextLength: h.ContextLength, Header: h}
	}
	order := make([]int, len(tb.legs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return tb.legs[order[a]].rec.StartedAt < tb.legs[order[b]].rec.StartedAt })
	stored := make([]study.StoredLeg, len(order))
	index := map[int64]int{} // notebook leg id → index into tb.legs
	for k, i := range order {
		r := tb.legs[i].rec
		stored[k] = study.StoredLeg{ID: r.ID, Label: r.Label, PlanLeg: r.PlanLeg, Role: r.Role, Attempt: r.Attempt, State: r.State, Class: r.Class}
		index[r.ID] = i
	}
	// The engine's reading of the legs: final plan legs, and the attempt whose rows count.
	finished, counting := study.FinalLegs(tb.plan, legs, stored)
	res.Finished = finished
	final := map[string]int{} // plan leg → index into tb.legs
	planLegs := make([]string, 0, len(counting))
	for pl, s := range counting {
		final[pl] = index[s.ID]
		planLegs = append(planLegs, pl)
	}
	sort.Slice(planLegs, func(a, b int) bool { return tb.legs[final[planLegs[a]]].rec.ID < tb.legs[final[planLegs[b]]].rec.ID })
	for _, pl := range planLegs {
		lf := tb.legs[final[pl]]
		for _, row := range lf.rows {
			if row.Status != string(vocab.RowResult) {
				continue
			}
			res.Rows = append(res.Rows, study.ResultRow{Leg: pl, Ref: study.RowRef(row.LegID, row.Seq),
				Model: modelOfRow(tb.plan, byID[pl], &row.Result), Result: row.Result})
		}
	}
	preds := map[string]study.Prediction{}
	for _, p := range tb.plan.Predictions {
		preds[p.ID] = p
	}
	for _, a := range tb.st.Amendments {
		key, ok := strings.CutPrefix(a.Target, "prediction:")
		if !ok {
			continue
		}
		var ch study.AmendmentChange
		if err := json.Unmarshal(a.Change, &ch); err != nil {
			return nil, nil, fmt.Errorf("amendment of %s: %w", key, err)
		}
		preds[key] = ch.After
	}
	return res, preds, nil
}

func modelOfRow(p *study.Plan, lp study.LegPlan, r *benchfmt.Result) string {
	if len(lp.Models) == 1 {
		return lp.Models[0]
	}
	for _, m := range p.Models {
		if filepath.Base(r.ModelFilename) == filepath.Base(m.Path) {
			return m.ID
		}
	}
	return ""
}

// Throughput study.json -------------------------------------------------------------------

// ThroughputStudy is a throughput bundle's study.json: the report `study show --json` gives
// (legs, results, figures, scoreboard, amendments, deviations, findings) with the plan, the
// metric definitions, provenance, the journal excerpt's summary and the redaction. It decodes
// into a study.Report as well.
type ThroughputStudy struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	*study.Report
	Legs        []ReceiptLeg      `json:"legs"`
	Plan        json.RawMessage   `json:"plan"`
	Definitions map[string]string `json:"definitions"`
	Provenance  Provenance        `json:"provenance"`
	Journal     ChainSummary      `json:"journal"`
	Redaction   Redaction         `json:"redaction"`
	Plots       []string          `json:"plots"`
}

// ReceiptLeg is a report leg with its duration in seconds (ms precision), its fingerprint and
// its transcript's size and SHA-256 in the bundle.
type ReceiptLeg struct {
	study.ReportLeg
	DurationS        *float64 `json:"duration_s"`
	Fingerprint      string   `json:"fingerprint"`
	Dir              string   `json:"dir"`
	TranscriptBytes  int      `json:"transcript_bytes"`
	TranscriptSHA256 string   `json:"transcript_sha256"`
	PeakRSSBytes     int64    `json:"peak_rss_bytes"`
}

// Provenance is where the numbers came from.
type Provenance struct {
	PlanSHA256   string          `json:"plan_sha256"`
	RegisteredAt string          `json:"registered_at"`
	Sparkbench   string          `json:"sparkbench"`
	Builds       []BuildSeen     `json:"builds"`   // as llama-bench reported them in its rows
	Machines     []MachineSeen   `json:"machines"` // as llama-bench reported them in its rows
	Binaries     []BinaryRecord  `json:"binaries"`
	Missing      []MissingBinary `json:"binaries_missing"`
	BinariesNote string          `json:"binaries_note"`
	Models       []ModelRecord   `json:"models"`
	MachineIDs   []int64         `json:"notebook_machine_ids"`
	BuildIDs     []int64         `json:"notebook_build_ids"`
	// The notebook's build and machine records (build.json, machines.json), as recorded when
	// the study ran; empty in bundles written before they were exported.
	NotebookBuilds   []NotebookBuild   `json:"notebook_builds"`
	NotebookMachines []NotebookMachine `json:"notebook_machines"`
	Rows             string            `json:"rows"`             // how the rows relate to the journal's digests
	RowsTied         int               `json:"rows_tied_legs"`   // finished legs whose rows.jsonl matched rows_sha256
	RowsUntied       int               `json:"rows_untied_legs"` // finished legs journaled without rows_sha256
	NotebookHead     ChainPoint        `json:"notebook_head"`
	RawFiles         int               `json:"raw_files"`
	RawBytes         int64             `json:"raw_bytes"`
	Transcripts      string            `json:"transcripts"` // how the transcripts relate to the journal's digests
}

// BuildSeen is one build identity found in the rows.
type BuildSeen struct {
	Commit   string `json:"build_commit"`
	Number   int64  `json:"build_number"`
	Backends string `json:"backends"`
	Rows     int    `json:"rows"`
}

// MachineSeen is one machine identity found in the rows.
type MachineSeen struct {
	CPU  string `json:"cpu_info"`
	GPU  string `json:"gpu_info"`
	Rows int    `json:"rows"`
}

// ThroughputDefinitions are printed on every throughput receipt.
var ThroughputDefinitions = map[string]string{
	"pp":                 "pp<N>: prompt processing, N prompt tokens evaluated in batches (llama-bench -p N); tokens per second",
	"tg":                 "tg<N>: token generation, N tokens generated one at a time (llama-bench -n N); tokens per second",
	"depth":              "@ d<D>: the test runs with D tokens already in the KV cache (llama-bench -d D)",
	"mean_sd":            "mean ± sd: llama-bench's avg_ts and stddev_ts over the repetitions (-r)",
	"cv":                 "coefficient of variation: sd / mean",
	"depth_slope":        "(m(d) - m(first depth)) / m(first depth)",
	"crossing_depth":     "depth where a metric first falls below a line, linear interpolation between the bracketing measured depths",
	"ceiling":            "memory bandwidth (GB/s) / active bytes per token; house convention: file bytes / params x active params; tensor-exact: non-expert tensor bytes + expert tensor bytes x experts used / experts, the token-embedding table counting one row",
	"efficiency":         "observed tg / ceiling",
	"repeatability_cv":   "CV of the means of the same leg run again (start / middle / end)",
	"contamination":      "contaminated leg / mean(quiet leg before, quiet leg after) - 1",
	"row_reference":      "leg N seq S: row S (0-based, arrival order) of notebook leg N; the rows are in legs/NNN-label/rows.jsonl",
	"cv_gate":            "a test whose CV exceeds the plan's gate is flagged and its leg halted; flagged and discarded rows never count as results",
	"result_rows":        "only rows with status result of each plan leg's final finished attempt count",
	"verdict_band":       "band: HIT inside [lo, hi]; MISS with the signed distance from the nearest bound; MISS (edge) within the noise floor",
	"verdict_fork":       "fork: the arm whose range holds the value, or INCONCLUSIVE",
	"verdict_comparison": "comparison: HOLDS or FAILS within the tolerance",
	"verdict_question":   "question: ANSWERED with the value",
}

func (tb *throughputBundle) doc(rep *study.Report) *ThroughputStudy {
	d := &ThroughputStudy{Schema: SchemaThroughputStudy, Kind: KindThroughput, Report: rep, Plan: json.RawMessage(tb.planJSON),
		Definitions: ThroughputDefinitions, Journal: tb.chain, Redaction: tb.redaction, Plots: []string{}}
	if d.Redaction.Files == nil {
		d.Redaction.Files = map[string]int{}
	}
	if d.Redaction.Verbatim == nil {
		d.Redaction.Verbatim = []string{}
	}
	byID := map[int64]legFolder{}
	for _, lf := range tb.legs {
		byID[lf.rec.ID] = lf
	}
	for _, l := range rep.Legs {
		rl := ReceiptLeg{ReportLeg: l}
		if l.Duration > 0 {
			s := math.Round(l.Duration.Seconds()*1000) / 1000
			rl.DurationS = &s
		}
		if lf, ok := byID[l.ID]; ok && l.ID != 0 {
			sum := sha256.Sum256(lf.transcript)
			rl.Fingerprint, rl.Dir, rl.TranscriptBytes = lf.rec.Fingerprint, lf.dir, len(lf.transcript)
			rl.TranscriptSHA256, rl.PeakRSSBytes = hex.EncodeToString(sum[:]), lf.rec.PeakRSSBytes
		}
		d.Legs = append(d.Legs, rl)
	}
	pv := Provenance{PlanSHA256: rep.Study.PlanSHA256, RegisteredAt: rep.Study.RegisteredAt.UTC().Format(time.RFC3339Nano),
		Sparkbench: tb.ix.Sparkbench, Builds: []BuildSeen{}, Machines: []MachineSeen{}, Binaries: []BinaryRecord{},
		Missing: []MissingBinary{}, Models: tb.models, MachineIDs: tb.nb.MachineIDs, BuildIDs: tb.nb.BuildIDs,
		NotebookHead: tb.nb.Head, RawFiles: tb.rawFiles, RawBytes: tb.rawBytes}
	if pv.Models == nil {
		pv.Models = []ModelRecord{}
	}
	if pv.MachineIDs == nil {
		pv.MachineIDs = []int64{}
	}
	if pv.BuildIDs == nil {
		pv.BuildIDs = []int64{}
	}
	pv.NotebookBuilds, pv.NotebookMachines = []NotebookBuild{}, append([]NotebookMachine{}, tb.machines...)
	if tb.build != nil {
		pv.NotebookBuilds = append(pv.NotebookBuilds, tb.build.NotebookBuilds...)
		pv.BinariesNote = tb.build.Note
		pv.Binaries = append(pv.Binaries, tb.build.Binaries...)
		pv.Missing = append(pv.Missing, tb.build.Missing...)
	}
	builds := map[BuildSeen]int{}
	machines := map[MachineSeen]int{}
	for _, lf := range tb.legs {
		for _, r := range lf.rows {
			builds[BuildSeen{Commit: r.Result.BuildCommit, Number: r.Result.BuildNumber, Backends: r.Result.Backends}]++
			machines[MachineSeen{CPU: r.Result.CPUInfo, GPU: r.Result.GPUInfo}]++
		}
	}
	for b, n := range builds {
		b.Rows = n
		pv.Builds = append(pv.Builds, b)
	}
	sort.Slice(pv.Builds, func(i, j int) bool {
		a, b := pv.Builds[i], pv.Builds[j]
		return a.Commit+"\x00"+a.Backends+fmt.Sprint(a.Number) < b.Commit+"\x00"+b.Backends+fmt.Sprint(b.Number)
	})
	for m, n := range machines {
		m.Rows = n
		pv.Machines = append(pv.Machines, m)
	}
	sort.Slice(pv.Machines, func(i, j int) bool {
		return pv.Machines[i].CPU+"\x00"+pv.Machines[i].GPU < pv.Machines[j].CPU+"\x00"+pv.Machines[j].GPU
	})
	if tb.redaction.Redacted {
		pv.Transcripts = "redacted: their SHA-256 differs from the digest the notebook journaled; a bundle written with --no-redact is checked against it"
	} else {
		pv.Transcripts = "verbatim: each matches the transcript_sha256 its leg.finished entry journaled"
	}
	pv.RowsTied, pv.RowsUntied = tb.rowsTied, tb.rowsOld
	switch {
	case tb.rowsOld == 0:
		pv.Rows = "verbatim: each finished leg's rows.jsonl matches the rows_sha256 its leg.finished entry journaled"
	case tb.rowsTied == 0:
		pv.Rows = "tied by row count and statuses only: the legs were journaled before leg.finished recorded rows_sha256; sparkbench notebook verify on the notebook proves the values"
	default:
		pv.Rows = "partly: the legs journaled before leg.finished recorded rows_sha256 are tied by row count and statuses only"
	}
	d.Provenance = pv
	return d
}

// AssembleThroughput returns study.json and receipt.md of a throughput bundle.
func assembleThroughput(files Files, ix *Index) ([]byte, []byte, error) {
	tb, err := readThroughput(files, ix)
	if err != nil {
		return nil, nil, err
	}
	rep, err := tb.report()
	if err != nil {
		return nil, nil, err
	}
	d := tb.doc(rep)
	d.Plots = throughputPlotNames(d)
	js, err := canon.Marshal(d)
	if err != nil {
		return nil, nil, err
	}
	js = append(js, '\n')
	md := throughputMarkdown(d)
	return js, md, nil
}
