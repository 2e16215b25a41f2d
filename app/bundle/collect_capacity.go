package bundle

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
)

// A capacity study's bundle, from a run folder.

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
	// Redaction is the redaction record (redaction.json, verbatim) of the bundle a run folder
	// was laid out from (a capacity study imported with `sparkbench import`): its files were
	// redacted where that bundle was written, so they are not redacted again and the record
	// goes into this bundle as it was.
	Redaction []byte
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
	red := NewRedactor(opt.Home, opt.Redact && opt.Redaction == nil)
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
	dirs := capacity.LifetimeDirs{} // where each lifetime's files are: run.json says (rundirs.go)
	if rf.exists(runManifestFile) {
		b, err := rf.read(runManifestFile)
		if err != nil {
			return nil, err
		}
		if dirs, err = capacity.ReadLifetimeDirs(b); err != nil {
			return nil, fmt.Errorf("capacity run folder %s: %w", runDir, err)
		}
		ci.Manifest = runManifestFile
		files[ci.Manifest] = red.Bytes(ci.Manifest, b)
	}
	if err := rf.lifetimeFiles(plan, dirs, ci, files, red); err != nil {
		return nil, err
	}
	if err := rf.servingFiles(plan, dirs, ci, files, red); err != nil {
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
	if opt.Redaction != nil {
		files[receipt.FileRedaction] = opt.Redaction
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
// evidence (from its folder in dirs: the attempt the run assembled), and each quality guard's
// evidence when the plan is quality-gated. The files of a lifetime's earlier attempts are
// evidence (otherEvidence).
func (rf runFolder) lifetimeFiles(plan *capacity.Plan, dirs capacity.LifetimeDirs, ci *receipt.CapacityIndex, files receipt.Files, red *Redactor) error {
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
		dir := dirs.Of(lt.Key)
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
		if rel := first(dir, capacity.RunTelemetryFile); rel != "" { // a sampled lifetime (docs/telemetry.md)
			b, err := rf.read(rel)
			if err != nil {
				return err
			}
			files[rel] = b
			if ci.Telemetry == nil {
				ci.Telemetry = map[string]string{}
			}
			ci.Telemetry[k] = rel
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
