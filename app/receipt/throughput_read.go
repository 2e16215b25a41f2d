package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/vocab"
)

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
	// telemetry: the leg's telemetry.jsonl (absent: not sampled), as read and its bytes.
	telemetry      []telemetry.Sample
	telemetryJSONL []byte
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
		if err := lf.readTelemetry(files); err != nil {
			return err
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

func parseAt(j JournalLine) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, j.At)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: entry %d: at %q: %w", FileJournal, j.Seq, j.At, err)
	}
	return t, nil
}

// studyCreated is a study.created entry's payload, as far as receipts read it.
type studyCreated struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// createdPayload reads a study.created entry's study name and kind.
func createdPayload(j JournalLine) (studyCreated, error) {
	var p studyCreated
	err := payloadOf(j, &p)
	return p, err
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
			p, err := createdPayload(j)
			if err != nil {
				return err
			}
			if p.Name != tb.nb.Name || p.Kind != tb.nb.Kind {
				return fmt.Errorf("%s: study %d is %q (%s), the journal's study.created (entry %d) says %q (%s)", FileNotebook, id, tb.nb.Name, tb.nb.Kind, j.Seq, p.Name, p.Kind)
			}
			created = true
		case "plan.registered":
			sha, err := tb.planEntry(j)
			if err != nil {
				return err
			}
			st.PlanSHA256, st.RegisteredAt, registered = sha, at, true
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
			key, v, err := verdictEntry(j, at)
			if err != nil {
				return err
			}
			sv := st.Verdicts[key]
			if j.Kind == "verdict" {
				sv.Computed = v
			} else {
				sv.Human = v
			}
			st.Verdicts[key] = sv
		case "finding":
			n, f, err := findingEntry(j, at, keys)
			if err != nil {
				return err
			}
			findings = append(findings, finding{n, f})
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

// planEntry ties plan.json to the journal's plan.registered entry j: its SHA-256 and its bytes.
func (tb *throughputBundle) planEntry(j JournalLine) (string, error) {
	var p struct {
		SHA256 string          `json:"plan_sha256"`
		Plan   json.RawMessage `json:"plan"`
	}
	if err := payloadOf(j, &p); err != nil {
		return "", err
	}
	sum := sha256.Sum256(tb.planJSON)
	if hex.EncodeToString(sum[:]) != p.SHA256 {
		return "", fmt.Errorf("%s: hashes to %s, the journal registered plan %s (entry %d)", FilePlan, hex.EncodeToString(sum[:]), p.SHA256, j.Seq)
	}
	if !bytes.Equal(p.Plan, tb.planJSON) {
		return "", fmt.Errorf("%s: differs from the plan journaled in entry %d", FilePlan, j.Seq)
	}
	return p.SHA256, nil
}

// verdictEntry is a verdict or verdict.human entry: its prediction's key and the verdict.
func verdictEntry(j JournalLine, at time.Time) (string, *study.StoredVerdict, error) {
	var p struct {
		Key       string          `json:"key"`
		Outcome   string          `json:"outcome"`
		Observed  *float64        `json:"observed"`
		Detail    json.RawMessage `json:"detail"`
		Rationale string          `json:"rationale"`
		Author    string          `json:"author"`
	}
	if err := payloadOf(j, &p); err != nil {
		return "", nil, err
	}
	return p.Key, &study.StoredVerdict{Outcome: p.Outcome, Observed: p.Observed, Detail: p.Detail, Rationale: p.Rationale, Author: p.Author, At: at}, nil
}

// findingEntry is a finding entry: its number and the finding, its predictions named by their
// keys (keys: the notebook's prediction ids).
func findingEntry(j JournalLine, at time.Time, keys map[int64]string) (int, study.StoredFinding, error) {
	var p struct {
		Number      int     `json:"number"`
		Label       string  `json:"label"`
		Title       string  `json:"title"`
		Legs        []int64 `json:"legs"`
		Predictions []int64 `json:"predictions"`
	}
	if err := payloadOf(j, &p); err != nil {
		return 0, study.StoredFinding{}, err
	}
	f := study.StoredFinding{Label: p.Label, Text: p.Title, LegIDs: p.Legs, At: at}
	if len(f.LegIDs) == 0 {
		f.LegIDs = nil
	}
	for _, pid := range p.Predictions {
		k, ok := keys[pid]
		if !ok {
			return 0, f, fmt.Errorf("%s: finding %s (entry %d) names prediction id %d, which %s does not list", FileJournal, p.Label, j.Seq, pid, FileNotebook)
		}
		f.Predictions = append(f.Predictions, k)
	}
	return p.Number, f, nil
}
