package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"sparkbench/app/capacity"
)

// Assemble re-makes study.json and receipt.md from a bundle's raw files (bundle.json names the
// kind). It reads nothing but files: the same raw files give the same bytes anywhere.
func Assemble(files Files) (studyJSON, receiptMD []byte, err error) {
	ix, err := ReadIndex(files)
	if err != nil {
		return nil, nil, err
	}
	return bundleKinds[ix.Kind].Assemble(files, ix)
}

// Finish adds the derived files to a bundle's raw files: study.json, receipt.md, the plots
// and SHA256SUMS. Derived files already present are replaced.
func Finish(files Files) error {
	for name := range files {
		if IsDerived(name) {
			delete(files, name)
		}
	}
	ix, err := ReadIndex(files)
	if err != nil {
		return err
	}
	js, md, err := Assemble(files)
	if err != nil {
		return err
	}
	pl, err := RenderPlots(ix.Kind, js)
	if err != nil {
		return err
	}
	files[FileStudy], files[FileReceipt] = js, md
	for k, v := range pl {
		files[k] = v
	}
	files[FileSums] = Sums(files)
	return nil
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// HashPlots checks the plots against SHA256SUMS only instead of re-rendering them (the
	// plots are derived from study.json: rendering is the slow part of a verify).
	HashPlots bool
}

// Problem is one file that does not hold.
type Problem struct {
	File string `json:"file"`
	// Line is the first line that differs (1-based; 0 when lines do not apply).
	Line int    `json:"line,omitempty"`
	What string `json:"what"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s: line %d: %s", p.File, p.Line, p.What)
	}
	return fmt.Sprintf("%s: %s", p.File, p.What)
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Kind     string       `json:"kind"`
	Files    int          `json:"files"`
	Bytes    int64        `json:"bytes"`
	Checked  []string     `json:"checked"` // what was checked, in words
	Chain    ChainSummary `json:"chain"`
	Problems []Problem    `json:"problems"`
	// Limits say what this bundle's layout let verify check no further (an old derived bundle
	// that carries no rows is checked for self-consistency only); verify prints each.
	Limits []string `json:"limits,omitempty"`
	// SelfConsistencyOnly: no figure was re-derived from raw rows (a derived bundle whose
	// layout carries none); verify's OK says so.
	SelfConsistencyOnly bool   `json:"self_consistency_only,omitempty"`
	StudySHA            string `json:"study_sha256,omitempty"`
	ReceiptSH           string `json:"receipt_sha256,omitempty"`
}

// OK says whether everything held.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Verify checks a bundle: every file against SHA256SUMS (and no file missing from it); the
// journal excerpt's hash chain (throughput, and capacity written from the notebook); study.json and receipt.md re-assembled from the
// raw files and compared byte for byte; the plots re-rendered from the re-assembled study.json
// and compared (or, with HashPlots, checked against SHA256SUMS only). Every problem names its
// file and, for text, the first line that differs.
func Verify(files Files, opt VerifyOptions) *VerifyReport {
	rep := &VerifyReport{Files: len(files), Bytes: files.Bytes(), Checked: []string{}, Problems: []Problem{}}
	add := func(file string, line int, format string, a ...any) {
		rep.Problems = append(rep.Problems, Problem{File: file, Line: line, What: fmt.Sprintf(format, a...)})
	}
	// 1. SHA256SUMS.
	if sb, ok := files[FileSums]; !ok {
		add(FileSums, 0, "missing: the bundle lists no checksums")
	} else if sums, err := ParseSums(sb); err != nil {
		add(FileSums, 0, "%v", strings.TrimPrefix(err.Error(), FileSums+": "))
	} else {
		listed := map[string]bool{}
		for _, s := range sums {
			listed[s.Name] = true
			b, ok := files[s.Name]
			if !ok {
				add(FileSums, s.Line, "lists %s, which the bundle does not hold", s.Name)
				continue
			}
			h := sha256.Sum256(b)
			if got := hex.EncodeToString(h[:]); got != s.SHA256 {
				add(s.Name, 0, "its SHA-256 is %s, %s line %d says %s", got, FileSums, s.Line, s.SHA256)
			}
		}
		for _, name := range files.Names() {
			if name != FileSums && !listed[name] {
				add(name, 0, "not listed in %s", FileSums)
			}
		}
		rep.Checked = append(rep.Checked, fmt.Sprintf("%d files against %s", len(sums), FileSums))
	}
	ix, err := ReadIndex(files)
	if err != nil {
		add(FileIndex, 0, "%v", strings.TrimPrefix(err.Error(), FileIndex+": "))
		return rep
	}
	rep.Kind = ix.Kind
	// 2. The journal's chain: throughput bundles carry an excerpt, capacity bundles when they
	// were written from the notebook, quant bundles since ladder receipts carry one.
	studyID, has := excerptStudy(files, ix)
	jb, ok := files[FileJournal]
	switch {
	case !has && ix.Kind == KindCapacity:
		rep.Checked = append(rep.Checked, "no journal excerpt: a capacity bundle written from a run folder, without the notebook")
	case !has:
		rep.Checked = append(rep.Checked, fmt.Sprintf("no journal excerpt: a %s bundle written before its kind's receipts carried one", ix.Kind))
	case !ok:
		add(FileJournal, 0, "missing")
	default:
		if entries, err := ParseJournal(jb); err != nil {
			add(FileJournal, lineOf(err), "%v", trimFile(err, FileJournal))
		} else if rep.Chain, err = WalkChain(entries, studyID); err != nil {
			add(FileJournal, lineOf(err), "%v", trimFile(err, FileJournal))
		} else {
			rep.Checked = append(rep.Checked, fmt.Sprintf("journal chain: %d entries, seq %d to %d, re-walked from prev_hash %s…", rep.Chain.Entries, rep.Chain.FirstSeq, rep.Chain.LastSeq, rep.Chain.FirstPrevHash[:12]))
		}
	}
	// 2b. The kind's own checks of the raw files (a capacity bundle's prompt plan).
	if k := bundleKinds[ix.Kind]; k.Check != nil {
		k.Check(rep, files, ix, add)
	}
	// 3. The derived files, re-assembled.
	js, md, err := Assemble(files)
	if err != nil {
		add(fileOf(err), 0, "cannot re-assemble the receipt: %v", err)
		return rep
	}
	rep.StudySHA, rep.ReceiptSH = hex.EncodeToString(sum(js)), hex.EncodeToString(sum(md))
	compare(rep, FileStudy, files, js)
	compare(rep, FileReceipt, files, md)
	rep.Checked = append(rep.Checked, fmt.Sprintf("%s and %s re-assembled from the raw files", FileStudy, FileReceipt))
	// 4. The plots.
	if !opt.HashPlots {
		pl, err := RenderPlots(ix.Kind, js)
		if err != nil {
			add(DirPlots, 0, "cannot re-render: %v", err)
			return rep
		}
		for _, name := range sortedKeys(pl) {
			compare(rep, name, files, pl[name])
		}
		for _, name := range files.Names() {
			if strings.HasPrefix(name, DirPlots) && pl[name] == nil {
				add(name, 0, "not a plot of this study.json (re-rendering makes none of that name)")
			}
		}
		rep.Checked = append(rep.Checked, fmt.Sprintf("%d plots re-rendered", len(pl)))
	}
	return rep
}

// checkPromptPlan compares a capacity bundle's prompt plan with the SHA-256 its plan names. A
// bundle without one (written from a run folder that had none) is noted, not failed.
func checkPromptPlan(rep *VerifyReport, files Files, ci *CapacityIndex, add func(string, int, string, ...any)) {
	pb, ok := files[ci.Plan]
	if !ok {
		return // the re-assembly names the missing plan
	}
	p, err := capacity.Decode(ci.Plan, pb)
	if err != nil {
		return // and the undecodable one
	}
	if ci.PromptPlan == "" {
		rep.Checked = append(rep.Checked, fmt.Sprintf("no prompt plan file: the plan's prompt_plan.sha256 %s… is not checked", hash12(p.PromptPlan.SHA256)))
		return
	}
	b, ok := files[ci.PromptPlan]
	if !ok {
		add(ci.PromptPlan, 0, "missing: %s names it as the prompt plan", FileIndex)
		return
	}
	if got := sha(b); got != p.PromptPlan.SHA256 {
		add(ci.PromptPlan, 0, "its SHA-256 is %s, %s's prompt_plan.sha256 is %s: not the prompt plan the study ran with", got, ci.Plan, p.PromptPlan.SHA256)
		return
	}
	rep.Checked = append(rep.Checked, fmt.Sprintf("prompt plan %s against %s's prompt_plan.sha256 %s…", ci.PromptPlan, ci.Plan, hash12(p.PromptPlan.SHA256)))
}

func hash12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// excerptStudy says whether a bundle carries a journal excerpt and whose study it is (its
// kind says: a throughput bundle always, a capacity bundle when written from the notebook).
func excerptStudy(files Files, ix *Index) (int64, bool) {
	return bundleKinds[ix.Kind].Excerpt(files, ix)
}

func sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

func sortedKeys(f Files) []string { return f.Names() }

// compare adds a problem when the bundle's file differs from the re-made bytes, naming the
// first differing line for text.
func compare(rep *VerifyReport, name string, files Files, want []byte) {
	got, ok := files[name]
	if !ok {
		rep.Problems = append(rep.Problems, Problem{File: name, What: "missing: re-assembly makes it"})
		return
	}
	if bytes.Equal(got, want) {
		return
	}
	if strings.HasSuffix(name, ".png") {
		rep.Problems = append(rep.Problems, Problem{File: name, What: fmt.Sprintf("differs from the re-rendered plot (first differing byte %d)", firstDiff(got, want))})
		return
	}
	if strings.HasSuffix(name, ".json") {
		// Canonical JSON is one line: name the figures that differ instead.
		if diffs, err := JSONDiffs(json.RawMessage(got), json.RawMessage(want), 4); err == nil && len(diffs) > 0 {
			parts := make([]string, len(diffs))
			for i, d := range diffs {
				parts[i] = fmt.Sprintf("%s is %s, re-assembly gives %s", d.Path, d.Has, d.Give)
			}
			rep.Problems = append(rep.Problems, Problem{File: name, What: "differs from the re-assembled file: " + strings.Join(parts, "; ")})
			return
		}
	}
	line, have, made := firstLine(got, want)
	rep.Problems = append(rep.Problems, Problem{File: name, Line: line, What: fmt.Sprintf("differs from the re-assembled file: has %q, re-assembly gives %q", clip(have), clip(made))})
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func firstLine(got, want []byte) (int, string, string) {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		} else {
			g = "(end of file)"
		}
		if i < len(wl) {
			w = wl[i]
		} else {
			w = "(end of file)"
		}
		if g != w {
			return i + 1, g, w
		}
	}
	return len(gl), "", ""
}

// clip keeps a differing line readable: long lines are cut around nothing in particular.
func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// fileOf finds which bundle file an assembly error names (its first word before ':').
func fileOf(err error) string {
	msg := err.Error()
	first, _, _ := strings.Cut(msg, ":")
	first = strings.TrimSpace(first)
	if CheckName(first) == nil && (strings.Contains(first, ".") || strings.HasPrefix(first, DirLegs)) {
		return first
	}
	for _, f := range []string{"--requests", "--rss", "--server-log", "--quality", "--plan"} {
		if strings.HasPrefix(msg, f) {
			return FileIndex + " (" + f + ")"
		}
	}
	return "(bundle)"
}

// trimFile drops "FILE: " and "line N: " from an error, which the Problem carries already.
func trimFile(err error, name string) string {
	s := strings.TrimPrefix(err.Error(), name+": ")
	if n := lineOf(err); n > 0 {
		s = strings.TrimPrefix(s, fmt.Sprintf("line %d: ", n))
	}
	return s
}

// lineOf reads "FILE: line N" back out of an error.
func lineOf(err error) int {
	msg := err.Error()
	i := strings.Index(msg, ": line ")
	if i < 0 {
		return 0
	}
	var n int
	fmt.Sscanf(msg[i+len(": line "):], "%d", &n)
	return n
}

// Summary is a one-line description of a bundle's files, for the CLI.
func Summary(files Files) string {
	raw, derived := 0, 0
	for name := range files {
		if IsDerived(name) {
			derived++
		} else {
			raw++
		}
	}
	return fmt.Sprintf("%d files (%d raw, %d derived), %d bytes", len(files), raw, derived, files.Bytes())
}
