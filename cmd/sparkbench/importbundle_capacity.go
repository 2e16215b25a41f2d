package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/kinds"
	"sparkbench/app/receipt"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// A capacity study's receipt bundle imported (`sparkbench import BUNDLE`). Its verified raw
// files (plan, prompt plan, request records, server logs, peak RSS, quality evidence, …) are
// laid out again as a run folder beside the notebook (NOTEBOOK.imported/SHA), the way a
// capacity run keeps its evidence in its run folder, with the bundle's study.json; the study
// goes into the notebook as the store imports any bundle (store.ImportBundle): its plan,
// predictions, verdicts, findings and the engine's notes from the bundle's journal excerpt,
// its server lifetimes as legs with their request rows (importbundle_capacity_legs.go),
// its capacity.assembled entry pointing at the laid-out folder with that study.json's
// SHA-256, and the excerpt kept with its origin. Its receipt is then written from that folder
// with the kept excerpt, so it re-assembles the same study.json and receipt.md.

// importing is a verified bundle ready to import: the study, and for a capacity bundle the
// run folder files to lay out (relative path → bytes).
type importing struct {
	b      store.BundleStudy
	runDir map[string][]byte
	placed string // the run folder laid out for this import ("": none)
	// records counts a ladder's candidate records (what its legs' rows are to other kinds).
	records int
}

// bundleToImport reads a verified bundle's study by its kind.
func bundleToImport(files receipt.Files, source string) (importing, error) {
	// The receipts that are not one study's (they have no bundle.json to name their kind).
	switch {
	case workbench.IsOverviewBundle(files):
		return importing{}, errors.New("an overview bundle (the figures across a notebook's studies, from `sparkbench overview receipt`) is not a study: only throughput, capacity and quantization ladder study bundles are imported as studies; keep it and check it with `sparkbench verify`")
	case workbench.IsFleetBundle(files):
		return importing{}, errors.New("a fleet bundle (one plan on several hosts, from `sparkbench fleet receipt`) is not a study: only throughput, capacity and quantization ladder study bundles are imported as studies; keep it and check it with `sparkbench verify`")
	}
	ix, err := receipt.ReadIndex(files)
	if err != nil {
		return importing{}, err
	}
	switch ix.Kind {
	case receipt.KindThroughput:
		b, err := bundleStudy(files, source)
		return importing{b: b}, err
	case receipt.KindCapacity:
		return capacityBundleStudy(files, ix, source)
	case kinds.Quant:
		return quantBundleStudy(files, ix, source)
	}
	return importing{}, fmt.Errorf("a %s bundle: only throughput, capacity and quantization ladder study bundles are imported as studies; keep it and check it with `sparkbench verify`", ix.Kind)
}

// capacityBundleStudy is a verified capacity bundle's study as the store imports it, and the
// run folder its receipt is written from again.
func capacityBundleStudy(files receipt.Files, ix *receipt.Index, source string) (importing, error) {
	ci := ix.Capacity
	if ci == nil || ci.Journal == "" || ci.StudyID <= 0 {
		return importing{}, errors.New("a capacity bundle written from a run folder alone (`receipt --capacity-run`) has no notebook journal, so it is not a study to import; keep it and check it with `sparkbench verify`, or export the study's receipt from its notebook (`sparkbench receipt ID`)")
	}
	journal, err := receipt.ParseJournal(files[receipt.FileJournal])
	if err != nil {
		return importing{}, err
	}
	if len(journal) == 0 {
		return importing{}, fmt.Errorf("%s is empty", receipt.FileJournal)
	}
	sums := sha256.Sum256(files[receipt.FileSums])
	last := journal[len(journal)-1]
	b := store.BundleStudy{BundleSHA256: hex.EncodeToString(sums[:]), Source: source, Kind: kinds.Capacity, Sparkbench: ix.Sparkbench,
		OriginStudyID: ci.StudyID, OriginStatus: "assembled", OriginHeadSeq: last.Seq, OriginHeadHash: last.Hash, Machines: json.RawMessage("[]")}
	// A finding names predictions by their origin ids; the study's verdicts name both.
	keys := map[int64]string{}
	for _, j := range journal {
		if j.StudyID() == ci.StudyID && (j.Kind == store.KindVerdict || j.Kind == store.KindHumanVerdict) {
			var v struct {
				Prediction int64  `json:"prediction"`
				Key        string `json:"key"`
			}
			if json.Unmarshal(j.Payload, &v) == nil && v.Key != "" {
				keys[v.Prediction] = v.Key
			}
		}
	}
	var assembled *receipt.JournalLine
	for i, j := range journal {
		b.Journal = append(b.Journal, store.BundleEntry{Seq: j.Seq, Kind: j.Kind, StudyID: j.StudyID(), At: j.At, Payload: j.Payload, PrevHash: j.PrevHash, Hash: j.Hash})
		if j.StudyID() != ci.StudyID {
			continue
		}
		if err := capacityEntry(&b, j, keys); err != nil {
			return importing{}, fmt.Errorf("%s: entry %d (%s): %w", receipt.FileJournal, j.Seq, j.Kind, err)
		}
		if j.Kind == capacity.NoteAssembled {
			assembled = &journal[i]
		}
	}
	switch {
	case b.PlanJSON == nil:
		return importing{}, fmt.Errorf("%s registers no plan for study %d", receipt.FileJournal, ci.StudyID)
	case assembled == nil:
		return importing{}, fmt.Errorf("%s has no %s entry for study %d: the study was never assembled", receipt.FileJournal, capacity.NoteAssembled, ci.StudyID)
	}
	if b.Legs, err = capacityLegs(files, ci, journal, ci.StudyID); err != nil {
		return importing{}, err
	}
	// The bundle's study.json (which its capacity.assembled entry is pointed at) and its
	// redaction record (its receipt is written with it again) go with the raw files.
	run := map[string][]byte{capacity.RunStudyFile: files[receipt.FileStudy]}
	if rd, ok := files[receipt.FileRedaction]; ok {
		run[receipt.FileRedaction] = rd
	}
	for _, rel := range capacityRawFiles(ci) {
		data, ok := files[rel]
		if !ok {
			return importing{}, fmt.Errorf("%s names %s, which the bundle does not hold", receipt.FileIndex, rel)
		}
		run[rel] = data
	}
	return importing{b: b, runDir: run}, nil
}

// capacityEntry takes one of the study's own journal entries into the import: its name and
// plan, and, as for a throughput bundle, its predictions, verdicts, findings and the engine's
// study.* and capacity.* notes.
func capacityEntry(b *store.BundleStudy, j receipt.JournalLine, keys map[int64]string) error {
	switch {
	case j.Kind == store.KindStudyCreated:
		var p struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return err
		}
		b.Name = p.Name
		if kinds.Server(p.Kind) { // a concurrency study's bundle is a capacity bundle too
			b.Kind = p.Kind
		}
	case j.Kind == store.KindPlanRegistered:
		var p struct {
			SHA  string          `json:"plan_sha256"`
			Plan json.RawMessage `json:"plan"`
		}
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return err
		}
		b.PlanJSON, b.PlanSHA256 = []byte(p.Plan), p.SHA
		return nil
	case strings.HasPrefix(j.Kind, "capacity."):
		b.Notes = append(b.Notes, store.BundleNote{Kind: j.Kind, Payload: j.Payload})
		return nil
	}
	return addEntry(b, j, keys)
}

// capacityRawFiles are the bundle's raw files that make up a run folder, by the paths its
// bundle.json names (the same as in the run folder it was written from).
func capacityRawFiles(ci *receipt.CapacityIndex) []string {
	seen := map[string]bool{}
	add := func(rel string) {
		if rel != "" {
			seen[rel] = true
		}
	}
	add(ci.Plan)
	add(ci.PromptPlan)
	add(ci.Manifest)
	add(ci.Harness)
	for _, m := range []map[string]string{ci.Requests, ci.RSS, ci.ServerLogs, ci.Quality, ci.Batched, ci.Serving, ci.Telemetry} {
		for _, rel := range m {
			add(rel)
		}
	}
	for _, rel := range ci.Evidence {
		add(rel)
	}
	out := make([]string, 0, len(seen))
	for rel := range seen {
		out = append(out, rel)
	}
	sort.Strings(out)
	return out
}

// importedRunDir is where an imported capacity bundle's run folder is laid out: beside the
// notebook, named by the bundle's SHA-256.
func importedRunDir(notebook, bundleSHA string) (string, error) {
	abs, err := filepath.Abs(notebook)
	if err != nil {
		return "", err
	}
	return filepath.Join(abs+".imported", bundleSHA[:16]), nil
}

// placeRunDir lays the run folder out beside the notebook (in a staging folder first, then
// moved to its place, so no half-written folder is ever at it) and points the study's
// capacity.assembled note at it. dropRunDir removes it when the notebook did not take the
// study.
func (im *importing) placeRunDir(notebook string) error {
	if im.runDir == nil {
		return nil
	}
	final, err := importedRunDir(notebook, im.b.BundleSHA256)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(final); err == nil {
		return fmt.Errorf("%s exists (the run folder of an earlier, unfinished import of this bundle?); remove it and import again", final)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(filepath.Dir(final), ".staging-")
	if err != nil {
		return err
	}
	for rel, data := range im.runDir {
		p := filepath.Join(staging, filepath.FromSlash(rel))
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, data, 0o644)
		}
		if err != nil {
			_ = os.RemoveAll(staging)
			return err
		}
	}
	if err := os.Rename(staging, final); err != nil {
		_ = os.RemoveAll(staging)
		return err
	}
	im.placed = final
	for i, n := range im.b.Notes {
		if n.Kind != capacity.NoteAssembled {
			continue
		}
		var a capacity.AssembledNote
		if err := json.Unmarshal(n.Payload, &a); err != nil {
			return fmt.Errorf("%s: %w", capacity.NoteAssembled, err)
		}
		sum := sha256.Sum256(im.runDir[capacity.RunStudyFile])
		a.RunDir, a.StudyFile, a.StudySHA256 = final, capacity.RunStudyFile, hex.EncodeToString(sum[:])
		if im.b.Notes[i].Payload, err = json.Marshal(a); err != nil {
			return err
		}
	}
	return nil
}

func (im *importing) dropRunDir() {
	if im.placed != "" {
		_ = os.RemoveAll(im.placed)
		im.placed = ""
	}
}
