package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
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
	if files[receipt.FileIndex], err = canonLine(receipt.Index{Schema: receipt.SchemaBundle, Kind: receipt.KindThroughput, Sparkbench: opt.Version}); err != nil {
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

// The run folder's file names (capacity run writes them; the seed fixture uses the GNU time
// and stderr names).
const (
	runPlanFile      = "plan.json"
	runManifestFile  = "run.json"
	runRequestsFile  = "requests.jsonl"
	runRSSFile       = "rss.json"
	runServerLogFile = "server.log"
	runEvidenceFile  = "evidence.json"
)

// CapacityOptions say how a capacity bundle is written.
type CapacityOptions struct {
	Options
	BenchTG map[string]float64 // candidate → llama-bench tg (t/s), for the serving tax
	// Batched is candidate → a llama-batched-bench output file, for the server tax, when the
	// run folder has none for it (capacity run --batched copies them to batched/ID.txt, which
	// the bundle takes by itself); a file named here replaces the run folder's. Either is a
	// raw file of the bundle, batched/ID.txt.
	Batched map[string]string
	// PromptPlan is the prompt plan's file when the run folder has no copy of it (capacity run
	// reads it from the plan's folder); "" looks in the run folder only. Whichever file is
	// found must hash to the plan's prompt_plan.sha256: Capacity refuses a different one.
	PromptPlan string
	// RequirePromptPlan refuses a bundle without the prompt plan (written from the notebook,
	// where PromptPlan is resolved against the registered plan's folder), so the bundle is
	// self-contained.
	RequirePromptPlan bool
	// Journal is the study's journal excerpt when it is in the notebook (gathered as for
	// ThroughputSource.Journal: from the study's first entry to its last, other studies'
	// entries in between included), written verbatim as journal.jsonl; StudyID is the
	// notebook's id of the study. Both are left empty for a run folder without the notebook.
	Journal []receipt.JournalLine
	StudyID int64
}

// Capacity writes a capacity study's bundle from a run folder (capacity run's output, or any
// folder with the same layout: plan.json, runs/PASS/CANDIDATE/pP/{requests.jsonl,
// rss.json|server-time.txt, server.log|server.stderr.log[, evidence.json]},
// quality/CANDIDATE/pP/quality-evidence.json, optionally run.json and the prompt plan), with
// the study's journal excerpt when opt carries one.
func Capacity(runDir string, opt CapacityOptions) (receipt.Files, error) {
	root, err := os.OpenRoot(runDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rf := runFolder{root: root, dir: runDir}
	red := NewRedactor(opt.Home, opt.Redact)
	files := receipt.Files{}
	ci := &receipt.CapacityIndex{Plan: receipt.FilePlan, Requests: map[string]string{}, RSS: map[string]string{},
		ServerLogs: map[string]string{}, Quality: map[string]string{}, BenchTG: opt.BenchTG}
	pb, err := rf.read(runPlanFile)
	if err != nil {
		return nil, fmt.Errorf("capacity run folder: %w", err)
	}
	plan, err := capacity.Decode(filepath.Join(runDir, runPlanFile), pb)
	if err != nil {
		return nil, err
	}
	plan.Defaults()
	files[receipt.FilePlan] = pb
	verbatim := []string{receipt.FilePlan}
	promptBytes, ok, err := rf.promptPlan(plan, opt)
	if err != nil {
		return nil, err
	}
	if ok {
		ci.PromptPlan = "prompt-plan.json"
		files[ci.PromptPlan] = promptBytes
		verbatim = append(verbatim, ci.PromptPlan)
	}
	if rf.exists(runManifestFile) {
		b, err := rf.read(runManifestFile)
		if err != nil {
			return nil, err
		}
		ci.Manifest = runManifestFile
		files[ci.Manifest] = red.Bytes(ci.Manifest, b)
	}
	if err := rf.lifetimeFiles(plan, ci, files, red); err != nil {
		return nil, err
	}
	if err := rf.batchedFiles(plan, opt.Batched, ci, files, red); err != nil {
		return nil, err
	}
	if err := rf.otherEvidence(ci, files, red); err != nil {
		return nil, err
	}
	if len(opt.Journal) > 0 {
		if opt.StudyID <= 0 {
			return nil, fmt.Errorf("capacity bundle: a journal excerpt needs the notebook's study id")
		}
		if files[receipt.FileJournal], err = receipt.MarshalJournal(opt.Journal); err != nil {
			return nil, err
		}
		ci.Journal, ci.StudyID = receipt.FileJournal, opt.StudyID
		verbatim = append(verbatim, receipt.FileJournal)
	}
	if len(files) > DefaultLimits.MaxEntries {
		return nil, fmt.Errorf("capacity run folder %s: %d files, more than a bundle may hold", runDir, len(files))
	}
	if files[receipt.FileIndex], err = canonLine(receipt.Index{Schema: receipt.SchemaBundle, Kind: receipt.KindCapacity, Sparkbench: opt.Version, Capacity: ci}); err != nil {
		return nil, err
	}
	if err := finishRedaction(files, red, verbatim); err != nil {
		return nil, err
	}
	if err := receipt.Finish(files); err != nil {
		return nil, err
	}
	return files, nil
}

// runFolder reads a capacity run folder's plain files, none through a link out of it.
type runFolder struct {
	root *os.Root
	dir  string
}

// read is a plain file of the folder, bounded by a bundle file's size.
func (rf runFolder) read(rel string) ([]byte, error) {
	st, err := rf.root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a plain file", filepath.Join(rf.dir, rel))
	}
	if st.Size() > DefaultLimits.MaxEntryBytes {
		return nil, fmt.Errorf("%s has %d bytes, more than a bundle file may", filepath.Join(rf.dir, rel), st.Size())
	}
	return rf.root.ReadFile(rel)
}

func (rf runFolder) exists(rel string) bool {
	st, err := rf.root.Lstat(rel)
	return err == nil && st.Mode().IsRegular()
}

// promptPlan is the prompt plan to bundle (ok false: none found and none required): the named
// file, else the run folder's copy; it must be the one the plan names by SHA-256 (the receipt
// and verify compare them: a different file is refused here rather than bundled).
func (rf runFolder) promptPlan(plan *capacity.Plan, opt CapacityOptions) (data []byte, ok bool, err error) {
	promptFrom := ""
	var promptBytes []byte
	if opt.PromptPlan != "" {
		st, err := os.Stat(opt.PromptPlan)
		switch {
		case err != nil:
			return nil, false, fmt.Errorf("prompt plan: %w (the plan's prompt_plan.sha256 is %s; restore the file the study ran with)", err, plan.PromptPlan.SHA256)
		case !st.Mode().IsRegular():
			return nil, false, fmt.Errorf("prompt plan %s is not a plain file", opt.PromptPlan)
		case st.Size() > DefaultLimits.MaxEntryBytes:
			return nil, false, fmt.Errorf("prompt plan %s has %d bytes, more than a bundle file may", opt.PromptPlan, st.Size())
		}
		if promptBytes, err = os.ReadFile(opt.PromptPlan); err != nil {
			return nil, false, fmt.Errorf("prompt plan: %w", err)
		}
		promptFrom = opt.PromptPlan
	}
	for _, cand := range []string{filepath.ToSlash(filepath.Clean(plan.PromptPlan.Path)), "prompt-plan.json"} {
		if promptFrom != "" {
			break
		}
		if cand == "" || strings.HasPrefix(cand, "../") || filepath.IsAbs(cand) || !rf.exists(cand) {
			continue
		}
		if promptBytes, err = rf.read(cand); err != nil {
			return nil, false, err
		}
		promptFrom = filepath.Join(rf.dir, cand)
	}
	switch {
	case promptFrom == "" && opt.RequirePromptPlan:
		return nil, false, fmt.Errorf("prompt plan %q (sha256 %s) not found: the bundle would not be self-contained; restore the file the study ran with", plan.PromptPlan.Path, plan.PromptPlan.SHA256)
	case promptFrom == "":
		return nil, false, nil
	case canon.SHA256Hex(promptBytes) != plan.PromptPlan.SHA256:
		return nil, false, fmt.Errorf("prompt plan %s hashes to %s, but the plan's prompt_plan.sha256 is %s: it is not the file the study ran with (changed since?); restore that file rather than bundle a different one",
			promptFrom, canon.SHA256Hex(promptBytes), plan.PromptPlan.SHA256)
	}
	return promptBytes, true, nil
}

// lifetimeFiles adds each server lifetime's request records, peak RSS record, server log and
// evidence, and each quality guard's evidence when the plan is quality-gated.
func (rf runFolder) lifetimeFiles(plan *capacity.Plan, ci *receipt.CapacityIndex, files receipt.Files, red *Redactor) error {
	first := func(dir string, names ...string) string {
		for _, n := range names {
			if rf.exists(dir + "/" + n) {
				return dir + "/" + n
			}
		}
		return ""
	}
	for _, lt := range capacity.Schedule(plan, "") {
		k := lt.Key.String()
		dir := fmt.Sprintf("runs/%s/%s/p%d", lt.Key.Pass, lt.Key.Candidate, lt.Key.Slots)
		for _, role := range []struct {
			m     map[string]string
			names []string
			what  string
		}{{ci.Requests, []string{runRequestsFile}, "request records"},
			{ci.RSS, []string{runRSSFile, "server-time.txt"}, "peak RSS record"},
			{ci.ServerLogs, []string{runServerLogFile, "server.stderr.log"}, "server log"}} {
			rel := first(dir, role.names...)
			if rel == "" {
				return fmt.Errorf("capacity run folder %s: lifetime %s has no %s (%s/%s)", rf.dir, k, role.what, dir, strings.Join(role.names, " or "))
			}
			b, err := rf.read(rel)
			if err != nil {
				return err
			}
			files[rel] = red.Bytes(rel, b)
			role.m[k] = rel
		}
		if rel := first(dir, runEvidenceFile); rel != "" {
			b, err := rf.read(rel)
			if err != nil {
				return err
			}
			files[rel] = red.Bytes(rel, b)
			ci.Evidence = append(ci.Evidence, rel)
		}
	}
	if !plan.Limits.QualityGated() {
		return nil
	}
	for _, c := range plan.Candidates {
		for _, s := range plan.Slots {
			k := capacity.QualityKey{Candidate: c.ID, Slots: s}.String()
			rel := fmt.Sprintf("quality/%s/p%d/quality-evidence.json", c.ID, s)
			b, err := rf.read(rel)
			if err != nil {
				return fmt.Errorf("capacity run folder %s: quality evidence %s: %w", rf.dir, k, err)
			}
			files[rel] = red.Bytes(rel, b)
			ci.Quality[k] = rel
		}
	}
	return nil
}

// batchedFiles adds each candidate's llama-batched-bench output, for the server tax: the file
// named in batched (which must name candidates of the plan), else the run folder's
// batched/ID.txt; a candidate with neither has none.
func (rf runFolder) batchedFiles(plan *capacity.Plan, batched map[string]string, ci *receipt.CapacityIndex, files receipt.Files, red *Redactor) error {
	for id := range batched {
		if _, ok := plan.Candidate(id); !ok {
			return fmt.Errorf("%s %s: not a candidate of this plan (%s)", capacity.FlagBatched, id, candidateList(plan))
		}
	}
	for _, c := range plan.Candidates {
		rel := capacity.RunBatchedFile(c.ID)
		var b []byte
		if path, ok := batched[c.ID]; ok {
			st, err := os.Stat(path)
			switch {
			case err != nil:
				return fmt.Errorf("%s %s: %w", capacity.FlagBatched, c.ID, err)
			case !st.Mode().IsRegular():
				return fmt.Errorf("%s %s: %s is not a plain file", capacity.FlagBatched, c.ID, path)
			case st.Size() > DefaultLimits.MaxEntryBytes:
				return fmt.Errorf("%s %s: %s has %d bytes, more than a bundle file may", capacity.FlagBatched, c.ID, path, st.Size())
			}
			if b, err = os.ReadFile(path); err != nil {
				return fmt.Errorf("%s %s: %w", capacity.FlagBatched, c.ID, err)
			}
		} else if rf.exists(rel) {
			var err error
			if b, err = rf.read(rel); err != nil {
				return err
			}
		} else {
			continue
		}
		if ci.Batched == nil {
			ci.Batched = map[string]string{}
		}
		files[rel] = red.Bytes(rel, b)
		ci.Batched[c.ID] = rel
	}
	return nil
}

// otherEvidence adds every other plain file of the run's lifetimes and quality guards (the
// guard's server logs, …) as evidence too, and sorts the evidence list.
func (rf runFolder) otherEvidence(ci *receipt.CapacityIndex, files receipt.Files, red *Redactor) error {
	for _, top := range []string{"runs", "quality"} {
		if st, err := rf.root.Lstat(top); err != nil || !st.IsDir() {
			continue
		}
		err := fs.WalkDir(rf.root.FS(), top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() {
				return err
			}
			if _, have := files[p]; have {
				return nil
			}
			if err := receipt.CheckName(p); err != nil {
				return err
			}
			b, err := rf.read(p)
			if err != nil {
				return err
			}
			files[p] = red.Bytes(p, b)
			ci.Evidence = append(ci.Evidence, p)
			return nil
		})
		if err != nil {
			return fmt.Errorf("capacity run folder %s: %w", rf.dir, err)
		}
	}
	sort.Strings(ci.Evidence)
	return nil
}

func candidateList(p *capacity.Plan) string {
	ids := make([]string, len(p.Candidates))
	for i, c := range p.Candidates {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}
