package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/receipt"
	"sparkbench/runner/gguf"
)

// Options say how a bundle is written.
type Options struct {
	Redact  bool   // write the home folder as ~ in transcripts, records and logs
	Home    string // the home folder to redact (the user's)
	Version string // sparkbench's version, recorded in bundle.json
}

// ThroughputSource is a throughput study as the notebook holds it, gathered by the caller
// (cmd wires the store to it): plain data, paths unredacted.
type ThroughputSource struct {
	Notebook receipt.NotebookRecord
	// Journal is a contiguous excerpt of the notebook's journal, from the study's first entry
	// to its last (other studies' entries in between included, so the chain can be re-walked).
	Journal  []receipt.JournalLine
	PlanJSON []byte // the registered canonical plan
	Legs     []SourceLeg
	Models   []SourceModel
	// Builds and Machines are the notebook's records the legs name (build.json,
	// machines.json), as recorded when the study ran; machines without their host name.
	Builds   []receipt.NotebookBuild
	Machines []receipt.NotebookMachine
}

// SourceLeg is one leg with its rows and transcript.
type SourceLeg struct {
	Record     receipt.LegRecord
	Rows       []SourceRow
	Transcript []byte
	// Telemetry is the leg's telemetry samples in their canonical serialization (the
	// notebook's TelemetryJSONL); empty for a leg that was not sampled.
	Telemetry []byte
}

// SourceRow is one llama-bench row: its JSON as llama-bench writes it, with seq and status.
type SourceRow struct {
	Seq    int64
	Status string
	JSON   []byte
}

// SourceModel is an artefact record and where its file is (for the GGUF header).
type SourceModel struct {
	Record receipt.ModelRecord
	File   string // on this machine; "" when unknown
}

// MaxHeaderBytes caps the GGUF header copied into a bundle.
const MaxHeaderBytes = 64 << 20

var slugRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func slug(s string) string {
	s = strings.Trim(slugRE.ReplaceAllString(s, "-"), "-.")
	if len(s) > 60 {
		s = s[:60]
	}
	if s == "" {
		s = "leg"
	}
	return s
}

func canonLine(v any) ([]byte, error) {
	b, err := canon.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Throughput writes a throughput study's bundle: the raw files (docs/receipts.md), then the
// derived receipt.md, study.json, plots and SHA256SUMS.
func Throughput(src ThroughputSource, opt Options) (receipt.Files, error) {
	red := NewRedactor(opt.Home, opt.Redact)
	files := receipt.Files{}
	put := func(name string, b []byte, redact bool) {
		if redact {
			b = red.Bytes(name, b)
		}
		files[name] = b
	}
	var err error
	// An adaptive plan's receipt is written under the rules that say how its cells ended.
	ix := receipt.Index{Schema: receipt.SchemaBundle, Kind: receipt.KindThroughput, Sparkbench: opt.Version, Rules: receipt.ThroughputRules(src.PlanJSON)}
	if files[receipt.FileIndex], err = canonLine(ix); err != nil {
		return nil, err
	}
	nb := src.Notebook
	if nb.Predictions == nil {
		nb.Predictions = []receipt.PredictionKey{}
	}
	machines, builds := map[int64]bool{}, map[int64]bool{}
	for _, l := range src.Legs {
		if l.Record.MachineID != 0 {
			machines[l.Record.MachineID] = true
		}
		if l.Record.BuildID != 0 {
			builds[l.Record.BuildID] = true
		}
	}
	nb.MachineIDs, nb.BuildIDs = sortedIDs(machines), sortedIDs(builds)
	b, err := canonLine(nb)
	if err != nil {
		return nil, err
	}
	put(receipt.FileNotebook, b, true)
	files[receipt.FilePlan] = src.PlanJSON
	if files[receipt.FileJournal], err = receipt.MarshalJournal(src.Journal); err != nil {
		return nil, err
	}
	verbatim := []string{receipt.FilePlan, receipt.FileJournal}
	binaries := map[string]bool{}
	for i, l := range src.Legs {
		dir := fmt.Sprintf("%s%03d-%s", receipt.DirLegs, i+1, slug(l.Record.Label))
		rec := l.Record
		if rec.Argv == nil {
			rec.Argv = []string{}
		}
		if rec.Env == nil {
			rec.Env = map[string]string{}
		}
		if rec.Conditions == nil {
			rec.Conditions = []string{}
		}
		if len(rec.Argv) > 0 && rec.Argv[0] != "" {
			binaries[rec.Argv[0]] = true
		}
		lb, err := canonLine(rec)
		if err != nil {
			return nil, err
		}
		put(dir+"/"+receipt.LegFile, lb, true)
		// rows.jsonl is the rows' canonical serialization, verbatim (never redacted): its
		// SHA-256 is the rows_sha256 the notebook journaled in leg.finished.
		var rows []byte
		for _, r := range l.Rows {
			rows = canon.AppendRowLine(rows, r.Seq, r.Status, r.JSON)
		}
		if rows == nil {
			rows = []byte{}
		}
		files[dir+"/"+receipt.LegRowsFile] = rows
		verbatim = append(verbatim, dir+"/"+receipt.LegRowsFile)
		put(dir+"/"+receipt.LegTranscript, l.Transcript, true)
		if len(l.Telemetry) > 0 { // verbatim: its SHA-256 is the telemetry_sha256 of leg.finished
			files[dir+"/"+receipt.LegTelemetry] = l.Telemetry
			verbatim = append(verbatim, dir+"/"+receipt.LegTelemetry)
		}
	}
	models, headers := modelRecords(src.Models, files)
	verbatim = append(verbatim, headers...)
	if b, err = canonLine(models); err != nil {
		return nil, err
	}
	put(receipt.FileModels, b, true)
	br := receipt.BuildRecord{Note: "binaries: hashed when the bundle was written, from the binary paths the legs ran; notebook_builds: the notebook's build records, hashed when the study ran",
		Binaries: []receipt.BinaryRecord{}, Missing: []receipt.MissingBinary{}, NotebookBuilds: []receipt.NotebookBuild{}}
	for _, b := range src.Builds {
		if builds[b.ID] {
			br.NotebookBuilds = append(br.NotebookBuilds, b)
		}
	}
	sort.Slice(br.NotebookBuilds, func(i, j int) bool { return br.NotebookBuilds[i].ID < br.NotebookBuilds[j].ID })
	ms := []receipt.NotebookMachine{}
	for _, m := range src.Machines {
		if machines[m.ID] {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	if b, err = canonLine(ms); err != nil {
		return nil, err
	}
	put(receipt.FileMachines, b, true)
	for _, p := range sortedKeys(binaries) {
		sum, size, err := hashFile(p)
		if err != nil {
			br.Missing = append(br.Missing, receipt.MissingBinary{Path: p, Why: errText(err)})
			continue
		}
		br.Binaries = append(br.Binaries, receipt.BinaryRecord{Path: p, Bytes: size, SHA256: sum})
	}
	if b, err = canonLine(br); err != nil {
		return nil, err
	}
	put(receipt.FileBuild, b, true)
	if err := finishRedaction(files, red, verbatim); err != nil {
		return nil, err
	}
	if err := receipt.Finish(files); err != nil {
		return nil, err
	}
	return files, nil
}

// modelRecords are the models' records, each plan model's GGUF header (its metadata and
// tensor table, verbatim) added to files when its file can be read; headers are their names.
func modelRecords(src []SourceModel, files receipt.Files) (models []receipt.ModelRecord, headers []string) {
	for _, m := range src {
		rec := m.Record
		if rec.Model != "" && m.File != "" {
			hdr, note := readHeader(m.File, rec.Bytes)
			if hdr != nil {
				rec.Header = receipt.DirModels + slug(rec.Model) + receipt.HeaderSuffix
				files[rec.Header] = hdr
				headers = append(headers, rec.Header)
			} else {
				rec.HeaderNote = note
			}
		} else if rec.Model != "" {
			rec.HeaderNote = "the model's file is not known"
		}
		models = append(models, rec)
	}
	if models == nil {
		models = []receipt.ModelRecord{}
	}
	return models, headers
}

func finishRedaction(files receipt.Files, red *Redactor, verbatim []string) error {
	rd := receipt.Redaction{Redacted: red.On(), Files: map[string]int{}, Verbatim: []string{}}
	if red.On() {
		rd.Replacement = Replacement
		rd.Files = red.Counts
		sort.Strings(verbatim)
		rd.Verbatim = verbatim
	}
	b, err := canonLine(rd)
	if err != nil {
		return err
	}
	files[receipt.FileRedaction] = b
	return nil
}

func sortedIDs(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// readHeader copies a GGUF file's bytes up to its tensor data (metadata and tensor table),
// if the file still has the size the notebook recorded.
func readHeader(file string, size int64) ([]byte, string) {
	st, err := os.Stat(file)
	if err != nil {
		return nil, "the model file could not be read when the bundle was written (" + errText(err) + ")"
	}
	if st.Size() != size {
		return nil, fmt.Sprintf("the model file has %d bytes now, %d when it was recorded", st.Size(), size)
	}
	h, err := gguf.ReadFile(file)
	if err != nil {
		return nil, "the model file's header could not be read: " + err.Error()
	}
	if h.DataOffset > MaxHeaderBytes {
		return nil, fmt.Sprintf("its header is %d bytes, more than the %d the bundle copies", h.DataOffset, MaxHeaderBytes)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, errText(err)
	}
	defer f.Close()
	b := make([]byte, h.DataOffset)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, errText(err)
	}
	return b, ""
}
