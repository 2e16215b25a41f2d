package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"

	"sparkbench/app/kinds"
	"sparkbench/app/receipt"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// `sparkbench import BUNDLE…`: a receipt bundle written elsewhere (a study run headless on a
// bench host, then `sparkbench receipt` there) is verified exactly as `sparkbench verify` does
// (every file against SHA256SUMS, the journal excerpt's chain, study.json and receipt.md
// re-assembled, the plots re-rendered) and only then added to this notebook as an imported
// study (store.ImportBundle): its plan, predictions, legs with their rows, verdicts, findings
// and journal excerpt as the bundle holds them, with the origin notebook's chain head.

const importBundleUsage = "import BUNDLE… [--notebook P]   (a receipt bundle: a folder or a .tar.gz)"

// isBundleArg says whether an argument of `import` is a receipt bundle: a folder holding
// SHA256SUMS or bundle.json, or a gzip file (a .tar.gz bundle). llama-bench output is neither.
func isBundleArg(p string) bool {
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	if st.IsDir() {
		for _, name := range []string{receipt.FileSums, receipt.FileIndex} {
			if fi, err := os.Stat(filepath.Join(p, name)); err == nil && fi.Mode().IsRegular() {
				return true
			}
		}
		return false
	}
	if !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false
	}
	return magic[0] == 0x1f && magic[1] == 0x8b
}

// cmdImportBundles imports each bundle in turn. Exit 0: every bundle imported; 2: a bundle
// refused (does not verify, already imported, not a kind that imports, unreadable), nothing of
// it written; 1: the notebook failed.
func cmdImportBundles(nbFlag string, paths []string, stdout, stderr io.Writer) int {
	for _, p := range paths {
		if !isBundleArg(p) {
			fprintf(stderr, "sparkbench import: %s is not a receipt bundle (a folder with SHA256SUMS, or a .tar.gz); import llama-bench output and bundles in separate runs; nothing was imported\n", p)
			return 2
		}
	}
	path, err := notebookPath(nbFlag)
	if err != nil {
		fprintf(stderr, "sparkbench import: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	var nb *store.Notebook
	for _, p := range paths {
		im, code := verifiedBundle(ctx, p, stderr)
		if code != 0 {
			return code
		}
		b := im.b
		if nb == nil {
			var c int
			if nb, c = openNotebook("import", path, false, stderr); nb == nil {
				return c
			}
			defer nb.Close()
		}
		_, found, err := nb.ImportedBundleBySHA(ctx, b.BundleSHA256)
		if err != nil {
			fprintf(stderr, "sparkbench import: %v\n", err)
			return 1
		}
		if !found { // else ImportBundle refuses it, and the run folder is the earlier import's
			if err := im.placeRunDir(path); err != nil {
				im.dropRunDir() // placed before the failure: an import that failed leaves nothing
				fprintf(stderr, "sparkbench import: %s: run folder: %v; nothing was imported\n", p, err)
				return 1
			}
			b = im.b
		}
		id, err := nb.ImportBundle(ctx, b)
		var dup *store.AlreadyImportedError
		if err != nil {
			im.dropRunDir()
		}
		switch {
		case errors.As(err, &dup):
			fprintf(stderr, "sparkbench import: %s: already imported: %v\n", p, err)
			return 2
		case err != nil:
			fprintf(stderr, "sparkbench import: %s: %v; nothing was imported\n", p, err)
			return 1
		}
		rows := 0
		for _, l := range b.Legs {
			rows += len(l.Rows)
		}
		s, err := nb.Study(ctx, id)
		if err != nil {
			fprintf(stderr, "sparkbench import: %v\n", err)
			return 1
		}
		switch {
		case b.Kind == kinds.Quant: // a ladder: its figures are its candidates' records, its legs have no rows in a bundle
			fprintf(stdout, "imported %s (%s bundle, sha256 %s) as study %d %q: %d candidate %s, %d %s (without rows or transcripts: a ladder's bundle holds none)\n", p, b.Kind, b.BundleSHA256, id, s.Name,
				im.records, plural(im.records, "record", "records"), len(b.Legs), plural(len(b.Legs), "leg", "legs"))
		case im.placed != "": // a capacity study: its evidence is the run folder laid out from the bundle
			fprintf(stdout, "imported %s (%s bundle, sha256 %s) as study %d %q: %d %s; run folder %s (%d files)\n", p, b.Kind, b.BundleSHA256, id, s.Name,
				len(b.Predictions), plural(len(b.Predictions), "prediction", "predictions"), im.placed, len(im.runDir))
		default:
			fprintf(stdout, "imported %s (%s bundle, sha256 %s) as study %d %q: %d %s, %d %s, %d %s\n", p, b.Kind, b.BundleSHA256, id, s.Name,
				len(b.Legs), plural(len(b.Legs), "leg", "legs"), rows, plural(rows, "row", "rows"),
				len(b.Predictions), plural(len(b.Predictions), "prediction", "predictions"))
		}
		fprintf(stdout, "  origin: study %d %q (%s) of a notebook whose journal head was entry %d %s; excerpt entries %d to %d kept\n",
			b.OriginStudyID, b.Name, b.OriginStatus, b.OriginHeadSeq, b.OriginHeadHash, b.Journal[0].Seq, b.Journal[len(b.Journal)-1].Seq)
	}
	return 0
}

// verifiedBundle reads and verifies a bundle (as `sparkbench verify` does) and reads its study.
// On a refusal it prints why, naming each file that does not hold, and returns exit 2.
func verifiedBundle(ctx context.Context, p string, stderr io.Writer) (importing, int) {
	v, err := workbench.VerifyBundle(ctx, workbench.VerifyRequest{Path: p})
	if err != nil {
		fprintf(stderr, "sparkbench import: %v; nothing was imported\n", err)
		return importing{}, 2
	}
	if !v.OK() {
		fprintf(stderr, "sparkbench import: %s does not verify (%d %s); nothing was imported:\n", p, len(v.Report.Problems), plural(len(v.Report.Problems), "problem", "problems"))
		for _, pr := range v.Report.Problems {
			fprintf(stderr, "  DIFFERS %s\n", pr)
		}
		return importing{}, 2
	}
	im, err := bundleToImport(v.Files, p)
	if err != nil {
		fprintf(stderr, "sparkbench import: %s: %v; nothing was imported\n", p, err)
		return importing{}, 2
	}
	return im, 0
}

// bundleStudy is a verified throughput bundle's study as the store imports it, from its raw
// files as verify reads them (receipt.ReadThroughputContents).
func bundleStudy(files receipt.Files, source string) (store.BundleStudy, error) {
	c, err := receipt.ReadThroughputContents(files)
	if err != nil {
		return store.BundleStudy{}, err
	}
	nbr := c.Notebook
	sums := sha256.Sum256(files[receipt.FileSums])
	planSum := sha256.Sum256(c.Plan)
	b := store.BundleStudy{BundleSHA256: hex.EncodeToString(sums[:]), Source: source, Kind: c.Index.Kind, Sparkbench: c.Index.Sparkbench,
		OriginStudyID: nbr.StudyID, Name: nbr.Name, OriginStatus: nbr.Status, OriginHeadSeq: nbr.Head.Seq, OriginHeadHash: nbr.Head.Hash,
		Machines: json.RawMessage(files[receipt.FileMachines]), PlanJSON: c.Plan, PlanSHA256: hex.EncodeToString(planSum[:])}
	keys := map[int64]string{}
	for _, p := range nbr.Predictions {
		keys[p.ID] = p.Key
	}
	for _, j := range c.Journal {
		b.Journal = append(b.Journal, store.BundleEntry{Seq: j.Seq, Kind: j.Kind, StudyID: j.StudyID(), At: j.At, Payload: j.Payload, PrevHash: j.PrevHash, Hash: j.Hash})
		if j.StudyID() == nbr.StudyID {
			if err := addEntry(&b, j, keys); err != nil {
				return b, fmt.Errorf("%s: entry %d (%s): %w", receipt.FileJournal, j.Seq, j.Kind, err)
			}
		}
	}
	b.Legs, err = bundleLegs(c.Legs)
	return b, err
}

// bundleLegs are the bundle's legs as the store imports them, in the order they were recorded.
func bundleLegs(folders []receipt.ThroughputLeg) ([]store.BundleLeg, error) {
	var legs []store.BundleLeg
	for _, f := range folders {
		rec := f.Record
		detail, err := json.Marshal(map[string]any{"plan_leg": rec.PlanLeg, "role": rec.Role, "attempt": rec.Attempt})
		if err != nil {
			return nil, err
		}
		rows := sha256.Sum256(f.RowsJSONL)
		l := store.BundleLeg{OriginID: rec.ID, Dir: f.Dir, Label: rec.Label, Kind: rec.Kind, Detail: detail, State: rec.State, Class: rec.Class,
			Reason: rec.Reason, ExitCode: rec.ExitCode, Signal: rec.Signal, Argv: rec.Argv, Env: rec.Env, Conditions: rec.Conditions,
			StartedAt: rec.StartedAt, EndedAt: rec.EndedAt, Fingerprint: rec.Fingerprint, PeakRSS: rec.PeakRSSBytes,
			TempBefore: rec.TempBeforeC, TempAfter: rec.TempAfterC, Transcript: f.Transcript,
			RowsSHA256: hex.EncodeToString(rows[:]), Rows: f.Results, Statuses: f.Statuses, Telemetry: f.Telemetry}
		if f.TelemetryJSONL != nil {
			ts := sha256.Sum256(f.TelemetryJSONL)
			l.TelemetrySHA256 = hex.EncodeToString(ts[:])
		}
		legs = append(legs, l)
	}
	sort.Slice(legs, func(a, b int) bool { return legs[a].OriginID < legs[b].OriginID })
	return legs, nil
}

// addEntry takes one of the study's own journal entries into the import: its description,
// predictions, amendments, deviations, verdicts, findings and the engine's notes (payloads as
// the bundle holds them; leg and prediction ids mapped by the store).
func addEntry(b *store.BundleStudy, j receipt.JournalLine, keys map[int64]string) error {
	var p struct {
		Description string          `json:"description"`
		Key         string          `json:"key"`
		Kind        string          `json:"kind"`
		Text        string          `json:"text"`
		Selector    json.RawMessage `json:"selector"`
		Spec        json.RawMessage `json:"spec"`
		Target      string          `json:"target"`
		Reason      string          `json:"reason"`
		Change      json.RawMessage `json:"change"`
		Leg         *int64          `json:"leg"`
		Detail      json.RawMessage `json:"detail"`
		Source      string          `json:"source"`
		Outcome     string          `json:"outcome"`
		Observed    *float64        `json:"observed"`
		Rationale   string          `json:"rationale"`
		Author      string          `json:"author"`
		Title       string          `json:"title"`
		Body        string          `json:"body"`
		Legs        []int64         `json:"legs"`
		Predictions []int64         `json:"predictions"`
	}
	switch j.Kind {
	case store.KindStudyCreated, store.KindPredictionRegistered, store.KindAmendment, store.KindDeviation,
		store.KindVerdict, store.KindHumanVerdict, store.KindFinding:
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return err
		}
	}
	switch j.Kind {
	case store.KindStudyCreated:
		b.Description = p.Description
	case store.KindPredictionRegistered:
		b.Predictions = append(b.Predictions, store.BundlePrediction{Key: p.Key, Kind: p.Kind, Text: p.Text, Selector: p.Selector, Spec: p.Spec})
	case store.KindAmendment:
		b.Amendments = append(b.Amendments, store.BundleAmendment{Target: p.Target, Reason: p.Reason, Change: p.Change})
	case store.KindDeviation:
		d := store.BundleDeviation{Description: p.Description, Detail: p.Detail}
		if p.Leg != nil {
			d.OriginLeg = *p.Leg
		}
		b.Deviations = append(b.Deviations, d)
	case store.KindVerdict, store.KindHumanVerdict:
		b.Verdicts = append(b.Verdicts, store.BundleVerdict{Human: j.Kind == store.KindHumanVerdict, Key: p.Key, Source: p.Source,
			Outcome: p.Outcome, Observed: p.Observed, Detail: p.Detail, Rationale: p.Rationale, Author: p.Author})
	case store.KindFinding:
		f := store.BundleFinding{Title: p.Title, Body: p.Body, OriginLegs: p.Legs}
		for _, id := range p.Predictions {
			k, ok := keys[id]
			if !ok {
				return fmt.Errorf("a finding names prediction id %d, which %s does not list", id, receipt.FileNotebook)
			}
			f.Predictions = append(f.Predictions, k)
		}
		b.Findings = append(b.Findings, f)
	default:
		// The engine's notes (study.bandwidth, study.run, study.incomplete, study.adaptive,
		// study.host, study.fleet, …); where the plan came from is this bundle now.
		// (Not the origin's status changes: the imported study's status is imported.)
		if strings.HasPrefix(j.Kind, "study.") && j.Kind != "study.plan_source" && j.Kind != store.KindStudyImported && j.Kind != store.KindStudyStatus {
			b.Notes = append(b.Notes, store.BundleNote{Kind: j.Kind, Payload: j.Payload})
		}
	}
	return nil
}

// importedFrom is how an imported study's origin reads in one line.
func importedFrom(o store.ImportedOrigin) string {
	return fmt.Sprintf("imported from %s (bundle sha256 %s…, origin study %d %q, %s there; origin journal head entry %d %s…)",
		o.Source, o.BundleSHA256[:16], o.OriginStudyID, o.OriginName, o.OriginStatus, o.OriginHeadSeq, short(o.OriginHeadHash))
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// printImportedOrigin prints the "imported from …" line above an imported study's report,
// and whether its kept journal excerpt still chains; nothing for a study recorded here.
func printImportedOrigin(ctx context.Context, nb *store.Notebook, id int64, w io.Writer) {
	o, found, err := nb.ImportedOriginOf(ctx, id)
	if err != nil || !found {
		return
	}
	fprintf(w, "%s\n", importedFrom(o))
	if err := nb.CheckImportedChain(ctx, o); err != nil {
		fprintf(w, "  its journal excerpt does NOT hold: %v\n", err)
		return
	}
	fprintf(w, "  its journal excerpt (entries %d to %d) re-walks from prev_hash %s… to %s…\n\n", o.FirstSeq, o.LastSeq, short(o.FirstPrevHash), short(o.LastHash))
}

// studyList: sparkbench study list [--notebook P] — every study, an imported one with where
// it came from.
func studyList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study list", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 0 {
		fprintf(stderr, "sparkbench study list: takes no arguments\n")
		return 2
	}
	nb, code := openNotebookFlag("study list", *nbFlag, true, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx := context.Background()
	studies, err := nb.Studies(ctx)
	if err != nil {
		fprintf(stderr, "sparkbench study list: %v\n", err)
		return 1
	}
	sort.Slice(studies, func(a, b int) bool { return studies[a].ID < studies[b].ID })
	for _, s := range studies {
		fprintf(stdout, "%d\t%s\t%s\t%d %s\t%s\n", s.ID, s.Kind, s.Status, s.Legs, plural(s.Legs, "leg", "legs"), s.Name)
		if o, found, err := nb.ImportedOriginOf(ctx, s.ID); err == nil && found {
			fprintf(stdout, "\t%s\n", importedFrom(o))
		}
	}
	return 0
}

// refuseImportedRun refuses `study run` of a study imported from a bundle (the notebook would
// refuse its change of status anyway, but only after the models were looked for).
func refuseImportedRun(ctx context.Context, nb *store.Notebook, id int64) error {
	o, found, err := nb.ImportedOriginOf(ctx, id)
	if err != nil || !found {
		return err
	}
	return fmt.Errorf("study %d is %w (%s, origin study %d %q): it is not run here; register its plan as a new study to run it on this machine",
		id, store.ErrImportedStudy, o.Source, o.OriginStudyID, o.OriginName)
}
