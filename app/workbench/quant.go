package workbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sparkbench/app/energy"
	"sparkbench/runner/telemetry/live"
	"strings"
	"sync"
	"time"

	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/charts"
	"sparkbench/app/kinds"
	"sparkbench/app/quant"
	"sparkbench/app/quant/quantrun"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/plots"
	"sparkbench/runner"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamacpp"
	"sparkbench/store"
)

// The quantization ladder kind (app/quant, docs/quant.md), registered like any other: the
// `study` verbs take its plans (schema sparkbench.quant/v1) and studies, and `receipt` and
// `verify` its bundles.
func init() {
	RegisterKind(Kind{Names: []string{kinds.Quant}, PlanSchema: quant.SchemaQuant,
		Validate: validateQuantKind, Register: registerQuantKind, Run: runQuantKind, Show: showQuantKind, Receipt: quantStudyFiles})
	receipt.RegisterBundleKind(receipt.BundleKind{Kind: kinds.Quant,
		CheckIndex: func(ix *receipt.Index) error {
			if q := ix.Quant; q != nil && (q.Journal != receipt.FileJournal || q.StudyID <= 0) {
				return fmt.Errorf("%s: quant journal %q with study id %d: want %q with the notebook's study id", receipt.FileIndex, q.Journal, q.StudyID, receipt.FileJournal)
			}
			if q := ix.Quant; q != nil && (q.Rules < 0 || q.Rules > quant.RulesCurrent) {
				return fmt.Errorf("%s: quant rules %d: this sparkbench knows rules 1 to %d (a newer version wrote the bundle?)", receipt.FileIndex, q.Rules, quant.RulesCurrent)
			}
			return nil
		},
		Excerpt: func(_ receipt.Files, ix *receipt.Index) (int64, bool) {
			if ix.Quant == nil { // a ladder bundle written before ladder receipts carried one
				return 0, false
			}
			return ix.Quant.StudyID, true
		},
		Assemble: assembleQuantBundle,
		Charts:   quantCharts})
}

// checkQuantPlan decodes a ladder plan file (paths made absolute from its folder) and
// validates it against the build (its llama-quantize types) and the files it names (hashed
// when hash is given; the reference's GGUF header read).
func checkQuantPlan(ctx context.Context, file string, data []byte, hash study.HashFunc, llamaDir string) (*quant.Plan, []study.Problem, error) {
	p, err := quant.Decode(file, data)
	if err != nil {
		return nil, nil, err
	}
	// The registered plan names its files by absolute path: a run from another folder finds them.
	dir := filepath.Dir(file)
	refs := []*quant.FileRef{&p.Reference, &p.Quality.Corpus}
	if p.Imatrix != nil {
		refs = append(refs, &p.Imatrix.Calibration)
	}
	for _, f := range refs {
		if f.Path != "" {
			if abs, err := filepath.Abs(study.ResolvePath(dir, f.Path)); err == nil {
				f.Path = abs
			}
		}
	}
	p.Defaults()
	opts := quant.ValidateOptions{Hash: hash}
	var extra []study.Problem
	if h, err := gguf.ReadFile(p.Reference.Path); err == nil {
		opts.ReferenceRead, opts.ReferenceFileType = true, h.FileTypeName
	}
	if llamaDir == "" {
		llamaDir = p.Build.Dir
	}
	loc, err := llamacpp.Locate(llamaDir)
	if err == nil {
		var tool string
		if tool, err = runner.QuantizeToolPath(loc); err == nil {
			var types interface{ Names() []string }
			if types, err = runner.QuantizeTypes(ctx, tool, p.Build.EnvList()); err == nil {
				opts.Types = types.Names()
			}
		}
	}
	if err != nil {
		extra = append(extra, study.Problem{Path: "quants", Severity: study.SevWarning, Msg: fmt.Sprintf("not checked against a llama-quantize (%v)", err)})
	} else if opts.ReferenceRead {
		n, err := corpusTokens(ctx, loc, p.Reference.Path, p.Quality.Corpus.Path, p.Build.EnvList())
		if err != nil {
			extra = append(extra, study.Problem{Path: "quality.corpus", Severity: study.SevWarning, Msg: fmt.Sprintf("its tokens were not counted (%v); the run counts them before quantizing anything", err)})
		}
		opts.CorpusTokens = n
	}
	if p.MemoryCtx > 0 && err == nil {
		if _, ferr := llamacpp.FitParamsTool(loc); ferr != nil {
			extra = append(extra, study.Problem{Path: "memory_ctx", Severity: study.SevError, Msg: ferr.Error() + "; or leave memory_ctx out (no projection)"})
		}
	}
	if p.Imatrix != nil && err == nil {
		if _, ierr := runner.ImatrixToolPath(loc); ierr != nil {
			extra = append(extra, study.Problem{Path: "imatrix", Severity: study.SevError, Msg: ierr.Error() + "; or remove imatrix (every candidate is then quantized without one)"})
		} else if opts.ReferenceRead {
			n, cerr := corpusTokens(ctx, loc, p.Reference.Path, p.Imatrix.Calibration.Path, p.Build.EnvList())
			if cerr != nil {
				extra = append(extra, study.Problem{Path: "imatrix.calibration", Severity: study.SevWarning, Msg: fmt.Sprintf("its tokens were not counted (%v)", cerr)})
			}
			opts.CalibrationTokens = n
		}
	}
	return p, append(quant.Validate(p, opts), extra...), nil
}

// tokenCounts caches corpusTokens by tool, model and corpus (path, size, modification time):
// the window checks its form on every change.
var tokenCounts sync.Map

// corpusTokens is how many tokens the reference's tokenizer makes of the corpus (0 and no
// error when the corpus cannot be read: its own problem says so).
func corpusTokens(ctx context.Context, loc llamacpp.Location, model, corpus string, env []string) (int, error) {
	cs, err := os.Stat(corpus)
	if err != nil || !cs.Mode().IsRegular() {
		return 0, nil
	}
	ms, err := os.Stat(model)
	if err != nil {
		return 0, nil
	}
	tool, err := llamacpp.TokenizeToolPath(loc)
	if err != nil {
		return 0, err
	}
	key := fmt.Sprint(tool, model, ms.Size(), ms.ModTime().UnixNano(), corpus, cs.Size(), cs.ModTime().UnixNano(), env)
	if n, ok := tokenCounts.Load(key); ok {
		return n.(int), nil
	}
	n, err := llamacpp.CountTokens(ctx, tool, model, corpus, env)
	if err == nil {
		tokenCounts.Store(key, n)
	}
	return n, err
}

func validateQuantKind(ctx context.Context, req PlanCheck) (*Validated, error) {
	p, probs, err := checkQuantPlan(ctx, req.File, req.Data, req.Hash, req.LlamaDir)
	if err != nil {
		return nil, err
	}
	valid := len(study.Errors(probs)) == 0
	out := &Validated{Problems: probs, Valid: valid, Report: map[string]any{"file": req.File, "valid": valid, "problems": probs}}
	if valid {
		out.Lines = []string{fmt.Sprintf("%s: valid quantization ladder %q: %s of %s, speed at depths %v, KLD on %d chunks of %d tokens, rule: maximise %s",
			req.File, p.Name, strings.Join(p.Quants, ", "), filepath.Base(p.Reference.Path), p.Speed.Depths, p.Quality.Chunks, p.Quality.Ctx, p.Rule.Maximize)}
	}
	return out, nil
}

func registerQuantKind(ctx context.Context, nb *store.Notebook, file string, data []byte, hash study.HashFunc) (*Registered, error) {
	p, probs, err := checkQuantPlan(ctx, file, data, hash, "")
	if err != nil {
		return nil, err
	}
	if len(study.Errors(probs)) > 0 {
		return nil, &study.RefusedError{Problems: probs}
	}
	sum, canonical, err := p.SHA256()
	if err != nil {
		return nil, err
	}
	// Registered before (the same plan SHA-256, a study imported from a bundle aside): that
	// study, as the other kinds say it; a name another study has gets the plan's short hash
	// appended, as the other kinds do. Looked up inside the registration's transaction, so
	// two registrations at once make one study.
	id, existing, err := nb.RegisterStudy(ctx, store.Registration{Kind: kinds.Quant, Name: strings.TrimSpace(p.Name),
		PlanJSON: canonical, PlanSHA256: sum, NoSourceNote: true, SkipImported: true})
	if err != nil {
		return nil, err
	}
	st, err := nb.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	if existing {
		return &Registered{StudyID: st.ID, Name: st.Name, PlanSHA256: sum,
			Lines: []string{fmt.Sprintf("study %d %q: already registered with this plan (sha256 %s)", st.ID, st.Name, sum)}}, nil
	}
	return &Registered{StudyID: st.ID, Name: st.Name, PlanSHA256: sum,
		Lines: []string{fmt.Sprintf("study %d %q registered: quantization ladder of %d types, plan sha256 %s", st.ID, st.Name, len(p.Quants), sum)}}, nil
}

// QuantRunOptions are the ladder kind's own run options (RunRequest.Options).
type QuantRunOptions struct {
	// Telemetry says where a telemetry block's samplers read (nil: this machine's; tests give
	// fake trees and a fake NVML).
	Telemetry *live.Config
}

func runQuantKind(ctx context.Context, nb *store.Notebook, s store.Study, req RunRequest) (*RunDone, error) {
	data, err := DataDirOr("")
	if err != nil {
		return nil, badInput(err)
	}
	opt, _ := req.Options.(*QuantRunOptions)
	// One run per study at a time: the lease is taken before the last run's records are read,
	// so they are not another run's past.
	release, err := nb.LeaseStudy(ctx, s.ID, study.ErrBusy)
	if err != nil {
		return nil, err
	}
	defer release()
	// The last run's records: this run resumes them (measures only what they miss).
	prev, err := quantJournalRecords(ctx, nb, s)
	if err != nil {
		return nil, err
	}
	hash, err := RunHash(ctx, nb, s.ID, req.Hash, req.TrustCache)
	if err != nil {
		return nil, err
	}
	sum, err := quantrun.Run(ctx, nb, s, quantrun.Options{LlamaDir: req.LlamaDir, DataDir: data, Hash: hash, Event: req.Event, Previous: prev,
		Record: func(r quant.Record) {
			if req.JSON != nil {
				req.JSON(r)
			}
		},
		Telemetry: func(tp *energy.Plan) (energy.LegHook, func() error) {
			var cfg *live.Config
			if opt != nil {
				cfg = opt.Telemetry
			}
			return samplerHook(ctx, nb, tp, cfg)
		}})
	if sum == nil {
		var le *llamacpp.LocateError
		if errors.As(err, &le) {
			return nil, badInput(err)
		}
		return nil, err
	}
	phases := fmt.Sprintf("quantize %s, kld %s, bench %s, memory %s", sum.Phases["quantize"].Round(10*time.Millisecond),
		sum.Phases["kld"].Round(10*time.Millisecond), sum.Phases["bench"].Round(10*time.Millisecond), sum.Phases["memory"].Round(10*time.Millisecond))
	if err != nil {
		return &RunDone{Status: sum.Status, Notes: []string{fmt.Sprintf("sparkbench study run: study %d halted after %d legs: %v", s.ID, sum.Legs, err),
			fmt.Sprintf("fix the cause, then `sparkbench study run %d` runs the ladder again (derived models already made are reused)", s.ID)}}, nil
	}
	sel := sum.Result.Selection
	done := &RunDone{Status: sum.Status, Complete: sum.Complete, Lines: []string{
		fmt.Sprintf("study %d %s: %d legs, %d derived model(s) reused, in %s (%s)", s.ID, sum.Status, sum.Legs, sum.Reused, sum.Elapsed.Round(10*time.Millisecond), phases)}}
	switch {
	case sel.Incomplete:
		done.Lines = append(done.Lines, fmt.Sprintf("incomplete, no selection: %d of %d candidates pending (%s)", len(sel.Pending), len(sum.Result.Candidates), sel.Missing()))
		done.Notes = append(done.Notes, fmt.Sprintf("fix the cause, then `sparkbench study run %d` measures what is missing (derived models already made are reused); the rule selects once every candidate is measured", s.ID))
	case sel.Selected != "":
		done.Lines = append(done.Lines, fmt.Sprintf("selected %s (runner-up %s): %s", sel.Selected, orDash(sel.RunnerUp), sel.Why))
	default:
		done.Lines = append(done.Lines, "no candidate selected: "+sel.Why)
	}
	done.Lines = append(done.Lines, fmt.Sprintf("see `sparkbench study show %d`", s.ID))
	return done, nil
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// quantJournalRecords are the candidates' records of a ladder study's last run, from its
// journal.
func quantJournalRecords(ctx context.Context, nb *store.Notebook, s store.Study) ([]quant.Record, error) {
	entries, err := nb.Journal(ctx, s.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	qe := make([]quantEntry, len(entries))
	for i, e := range entries {
		qe[i] = quantEntry{Seq: e.Seq, Kind: e.Kind, Payload: e.Payload}
	}
	parts, err := quantJournalParts(qe)
	return parts.records, err
}

// quantResult is a ladder study's plan and result, assembled from its journaled records.
func quantResult(ctx context.Context, nb *store.Notebook, s store.Study) (*store.Plan, []quant.Record, *quant.Result, error) {
	pl, err := nb.Plan(ctx, s.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := quant.Decode(fmt.Sprintf("study %d plan", s.ID), pl.JSON)
	if err != nil {
		return nil, nil, nil, err
	}
	entries, err := nb.Journal(ctx, s.ID, 0, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	qe := make([]quantEntry, len(entries))
	for i, e := range entries {
		qe[i] = quantEntry{Seq: e.Seq, Kind: e.Kind, Payload: e.Payload}
	}
	parts, err := quantJournalParts(qe)
	if err != nil {
		return nil, nil, nil, err
	}
	res, err := quant.Assemble(p, pl.SHA256, parts.records)
	if err == nil {
		res.HandOffs, res.Provenance = parts.handOffs, parts.provenance
	}
	return &pl, parts.records, res, err
}

func showQuantKind(ctx context.Context, nb *store.Notebook, s store.Study) (*Shown, error) {
	_, _, res, err := quantResult(ctx, nb, s)
	if err != nil {
		return nil, err
	}
	md := quant.Markdown(res)
	return &Shown{Report: res, Print: func(w io.Writer) {
		fmt.Fprintf(w, "study %d %q (%s, %s)\n\n", s.ID, s.Name, s.Kind, s.Status)
		if sel := res.Selection; sel.Incomplete && s.Status != store.StatusImported {
			fmt.Fprintf(w, "Incomplete, no selection: %d candidate(s) pending (%s); `sparkbench study run %d` measures them.\n\n", len(sel.Pending), sel.Missing(), s.ID)
		}
		_, _ = w.Write(md)
	}}, nil
}

// quantStudyFiles is a ladder's bundle: bundle.json, the registered plan, the candidates' raw
// records, the hand-offs and provenance (paths under the home folder written as ~ when
// redacting) and the study's journal excerpt (quant_journal.go); study.json and receipt.md
// are assembled from them. A ladder imported from a bundle (`sparkbench import`) gives the
// excerpt its bundle held, with the origin's study id, and its raw files as that bundle held
// them, so its receipt is that bundle again.
func quantStudyFiles(ctx context.Context, nb *store.Notebook, s store.Study, opt bundle.Options) (receipt.Files, error) {
	pl, recs, res, err := quantResult(ctx, nb, s)
	if err != nil {
		return nil, err
	}
	journal, studyID, imported, err := keptOrOwnExcerpt(ctx, nb, s)
	if err != nil {
		return nil, err
	}
	ix, err := canon.Marshal(receipt.Index{Schema: receipt.SchemaBundle, Kind: kinds.Quant, Sparkbench: opt.Version,
		Quant: &receipt.QuantIndex{Journal: receipt.FileJournal, StudyID: studyID, Rules: quant.RulesCurrent}})
	if err != nil {
		return nil, err
	}
	home := ""
	if opt.Redact && !imported { // an imported ladder's notes hold its bundle's files as written there
		home = opt.Home
	}
	files, err := quantRawFiles(quantParts{records: recs, handOffs: res.HandOffs, provenance: res.Provenance}, home)
	if err != nil {
		return nil, err
	}
	files[receipt.FileIndex], files["plan.json"] = ix, pl.JSON
	if files[receipt.FileJournal], err = receipt.MarshalJournal(journal); err != nil {
		return nil, err
	}
	return files, receipt.Finish(files)
}

// assembleQuantBundle re-makes study.json and receipt.md from plan.json and records.json (and
// handoffs.json and provenance.json where present) alone; a bundle with a journal excerpt has
// it held to them, and its receipt gains the section on it.
func assembleQuantBundle(files receipt.Files, ix *receipt.Index) ([]byte, []byte, error) {
	x, _, err := ReadQuantExcerpt(files, ix)
	if err != nil {
		return nil, nil, err
	}
	p, err := quant.Decode("plan.json", files["plan.json"])
	if err != nil {
		return nil, nil, err
	}
	var recs []quant.Record
	if err := json.Unmarshal(files[fileRecords], &recs); err != nil {
		return nil, nil, fmt.Errorf("records.json: %w", err)
	}
	// The selection rules the bundle was written with (absent: those before they were
	// recorded, under which an incomplete ladder still selected).
	rules := quant.RulesSelectOverIncomplete
	if ix.Quant != nil && ix.Quant.Rules > 0 {
		rules = ix.Quant.Rules
	}
	res, err := quant.AssembleRules(p, canon.SHA256Hex(files["plan.json"]), recs, rules)
	if err != nil {
		return nil, nil, fmt.Errorf("records.json: %w", err)
	}
	if hj, ok := files[fileHandOffs]; ok {
		if err := json.Unmarshal(hj, &res.HandOffs); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", fileHandOffs, err)
		}
	}
	if pj, ok := files[fileProvenance]; ok {
		if err := json.Unmarshal(pj, &res.Provenance); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", fileProvenance, err)
		}
	}
	js, err := canon.Marshal(res)
	if err != nil {
		return nil, nil, err
	}
	md := quant.Markdown(res)
	if x != nil {
		md = append(md, x.journalMarkdown()...)
	}
	return js, md, nil
}

// QuantHandOffRequest asks for the capacity plan of a finished ladder, written to Out (a new
// file; the built-in prompt plan is written beside it).
type QuantHandOffRequest struct {
	ID  int64
	Out string
	quant.HandOff
}

// QuantHandOff writes the capacity plan a finished ladder hands off (quant.CapacityPlan),
// checks it as `capacity validate` would, and journals the link on the ladder study. It
// returns the plan's SHA-256.
func QuantHandOff(ctx context.Context, nb *store.Notebook, req QuantHandOffRequest) (string, error) {
	s, err := nb.Study(ctx, req.ID)
	if err != nil {
		return "", badInput(err)
	}
	if s.Kind != kinds.Quant {
		return "", badInput(fmt.Errorf("study %d (%s) is a %s study, not a quantization ladder", s.ID, s.Name, s.Kind))
	}
	pl, _, res, err := quantResult(ctx, nb, s)
	if err != nil {
		return "", err
	}
	p, err := quant.Decode("plan", pl.JSON)
	if err != nil {
		return "", err
	}
	if sel := res.Selection; sel.Incomplete {
		return "", badInput(fmt.Errorf("study %d (%s) is incomplete, no selection: %d candidate(s) pending (%s); `sparkbench study run %d` measures them, then hand off",
			s.ID, s.Name, len(sel.Pending), sel.Missing(), s.ID))
	}
	req.HandOff.StudyID = s.ID
	cp, err := quant.CapacityPlan(res, p, req.HandOff)
	if err != nil {
		return "", badInput(err)
	}
	if probs := study.Errors(capacity.Validate(cp, capacity.ValidateOptions{})); len(probs) > 0 {
		return "", badInput(fmt.Errorf("the capacity plan would be refused: %s: %s (check --slots, --clients and the limits)", probs[0].Path, probs[0].Msg))
	}
	if _, err := os.Stat(req.Out); err == nil {
		return "", badInput(fmt.Errorf("%s exists; give a new file (nothing is overwritten)", req.Out))
	}
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return "", err
	}
	if _, err := capacity.WriteDefaultPromptPlan(filepath.Dir(req.Out)); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(req.Out, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	sum, _, err := cp.SHA256()
	if err != nil {
		return "", err
	}
	_, err = nb.AppendJournal(ctx, EntryHandOff, map[string]any{"study": s.ID, "capacity_plan": req.Out, "capacity_plan_sha256": sum,
		"candidates": []string{res.Selection.Selected, res.Selection.RunnerUp}}, store.ForStudy(s.ID))
	return sum, err
}

// fileHandOffs is a ladder bundle's raw list of the capacity plans it handed off.
const fileHandOffs = "handoffs.json"

// fileProvenance is a ladder bundle's raw build and machine (quant.Provenance).
const fileProvenance = "provenance.json"

// EntryHandOff journals a capacity plan a ladder handed off.
const EntryHandOff = "quant.handoff"

// quantCharts are a ladder bundle's plots (quant.Charts) of its study.json.
func quantCharts(studyJSON []byte) ([]receipt.NamedChart, error) {
	var res quant.Result
	if err := json.Unmarshal(studyJSON, &res); err != nil {
		return nil, fmt.Errorf("study.json: %w", err)
	}
	meta := plots.Meta{Model: filepath.Base(res.Reference.Path)}
	if pv := res.Provenance; pv != nil {
		meta.Build = charts.BuildLabel(pv.Commit, int64(pv.BuildNumber), strings.Join(pv.Backends, ","))
		meta.Machine = pv.Machine
	}
	names, cs := quant.Charts(&res, meta)
	out := make([]receipt.NamedChart, len(names))
	for i := range names {
		out[i] = receipt.NamedChart{Name: "plots/" + names[i], Chart: cs[i]}
	}
	return out, nil
}
