package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"sparkbench/app/textsafe"
	"sparkbench/app/workbench"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/fsread"
	"sparkbench/store"
)

// cmdNotebook: sparkbench notebook verify|path|stats [--notebook P].
func cmdNotebook(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: sparkbench notebook verify [--expect-head HASH] | path | stats | backup DEST [--notebook PATH]"
	if len(args) == 0 {
		fprintf(stderr, "sparkbench notebook: missing sub-command\n%s\n", usage)
		return 2
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "verify", "path", "stats", "backup":
	case "-h", "--help", "help":
		fprintf(stdout, "%s\n  verify  walk the journal's hash chain and re-hash every leg's samples; check that the journal still reaches\n          the last head seen (its anchor, NOTEBOOK.anchor) and, with --expect-head, a head written down elsewhere\n          (exit 0 only when intact)\n  path    print where the notebook is\n  stats   count what the notebook holds\n  backup  copy the notebook to DEST (a new file) with SQLite's online backup, even while it is in use, and verify the copy\n", usage)
		return 0
	default:
		fprintf(stderr, "sparkbench notebook: unknown sub-command %q\n%s\n", sub, usage)
		return 2
	}
	flags := newFlagSet("notebook "+sub, stderr)
	nbFlag := flags.String("notebook", "", nbFlagHelp)
	expectHead := new(string)
	if sub == "verify" {
		expectHead = flags.String("expect-head", "", "a journal head hash written down elsewhere (a receipt, a log): it must be in the chain")
	}
	pos, err := parseInterspersed(flags, rest)
	if err != nil {
		return usageError(err)
	}
	if sub == "backup" {
		if len(pos) != 1 {
			fprintf(stderr, "sparkbench notebook backup: give the backup's file name (a new file), e.g. sparkbench notebook backup notebook-2026-12-07.db\n")
			return 2
		}
		return notebookBackup(*nbFlag, pos[0], stdout, stderr)
	}
	if len(pos) > 0 {
		takes := "--notebook PATH"
		if sub == "verify" {
			takes = "--expect-head HASH and --notebook PATH"
		}
		fprintf(stderr, "sparkbench notebook %s: unexpected argument %q; it takes only %s\n", sub, pos[0], takes)
		return 2
	}
	want := strings.ToLower(strings.TrimSpace(*expectHead))
	if *expectHead != "" && !store.IsJournalHash(want) {
		fprintf(stderr, "sparkbench notebook verify: --expect-head %q is not a journal head: want the 64 hex digits `notebook verify` printed (\"head entry N HASH\")\n", *expectHead)
		return 2
	}
	path, err := notebookPath(*nbFlag)
	if err != nil {
		fprintf(stderr, "sparkbench notebook %s: %v\n", sub, err)
		return 2
	}
	if sub == "path" {
		fi, err := os.Stat(path)
		switch {
		case err == nil:
			fprintf(stdout, "%s (%s)\n", path, humanBytes(fi.Size()))
		case errors.Is(err, os.ErrNotExist):
			fprintf(stdout, "%s (not created yet: the first study or import creates it)\n", path)
		default:
			fprintf(stdout, "%s (%v)\n", path, err)
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	nb, code := openNotebook("notebook "+sub, path, true, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	if sub == "stats" {
		st, err := nb.Stats(ctx)
		if err != nil {
			fprintf(stderr, "sparkbench notebook stats: %v\n", err)
			return 1
		}
		fprintf(stdout, "notebook %s: %s, schema version %d, SQLite %s\n", st.Path, humanBytes(st.FileBytes), st.SchemaVersion, st.SQLite)
		names := make([]string, 0, len(st.Tables))
		for t := range st.Tables {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			fprintf(stdout, "  %-18s %d\n", t, st.Tables[t])
		}
		fprintf(stdout, "journal head: entry %d, %s\n", st.JournalSeq, st.JournalHead)
		return 0
	}
	c, err := workbench.VerifyNotebook(ctx, nb, workbench.NotebookVerifyRequest{ExpectHead: want})
	if errors.Is(err, store.ErrDamaged) {
		fprintf(stderr, "sparkbench notebook verify: %v\n", err)
		return 1
	}
	if err != nil {
		fprintf(stderr, "sparkbench notebook verify: reading %s failed: %v\n", path, err)
		return 1
	}
	rep, anchor := c.Report, c.Anchor
	switch {
	case !rep.OK() && rep.Broken.Kind == "integrity_check":
		fprintf(stdout, "notebook %s: DAMAGED: %s; %s\n", path, rep.Broken.Reason, recoverAdvice)
		return 1
	case !rep.OK() && rep.Broken.Table == "":
		fprintf(stdout, "notebook %s: BROKEN at journal entry %d (%s): %s; entries before it verify, it and everything after are unproven: keep this file as evidence and restore from a backup, or start a new notebook with --notebook\n",
			path, rep.Broken.Seq, rep.Broken.Kind, rep.Broken.Reason)
		return 1
	case c.AnchorErr != nil:
		fprintf(stdout, "notebook %s: the anchor %s cannot be read: %v; it holds the last journal head seen, to detect deleted entries: restore it, or move it away to start a new one from this head\n",
			path, store.AnchorPath(path), c.AnchorErr)
		return 1
	case anchor != nil && anchor.Problem != "":
		fprintf(stdout, "notebook %s: %s\n", path, anchorProblem(anchor, rep))
		return 1
	case want != "" && !c.ExpectFound:
		fprintf(stdout, "notebook %s: journal truncated or rewritten: the expected head %s is not in the journal, which ends at entry %d (head %s); entries after it were deleted, or this is another notebook: keep this file as evidence and restore from a backup\n",
			path, want, rep.HeadSeq, rep.Head)
		return 1
	case !rep.OK() && rep.Broken.Table != "":
		at := "no journal entry records it"
		if rep.Broken.Seq != 0 {
			at = fmt.Sprintf("journal entry %d (%s) recorded it", rep.Broken.Seq, rep.Broken.Kind)
		}
		fprintf(stdout, "notebook %s: DAMAGED: %s (%s); the journal's chain holds, but this row no longer says what was recorded: %s\n",
			path, rep.Broken.Reason, at, recoverAdvice)
		return 1
	}
	fprintf(stdout, "notebook %s: intact: %d journal entries, %d legs' samples re-hashed (%d rows), %d records held to their entries, SQLite integrity check ok; head entry %d %s\n",
		path, rep.Entries, rep.LegsChecked, rep.SamplesChecked, rep.RecordsChecked, rep.HeadSeq, rep.Head)
	for _, o := range rep.OlderRule {
		noun := "leg"
		if o.Noun != "" {
			noun = o.Noun
		}
		fprintf(stdout, "%d %s recorded before the journal held %s: those columns are not held to an entry (the older rule)\n",
			o.Rows, plural(int(o.Rows), noun+" was", noun+"s were"), o.Column)
	}
	if want != "" {
		fprintf(stdout, "expected head %s is entry %d of the chain%s\n", want, c.ExpectSeq, laterEntries(rep.HeadSeq-c.ExpectSeq))
	}
	if anchor != nil {
		fprintf(stdout, "the anchor %s (written %s) saw entry %d: the chain still holds it%s\n",
			filepath.Base(anchor.Path), anchorTime(anchor.Anchor), anchor.Anchor.Seq, laterEntries(rep.HeadSeq-anchor.Anchor.Seq))
	}
	if c.AnchorWriteErr != nil {
		fprintf(stderr, "sparkbench notebook verify: note: could not write the anchor %s: %v (the chain is intact; a later verify cannot tell deleted entries from this head on)\n", store.AnchorPath(path), c.AnchorWriteErr)
	}
	return 0
}

// notebookBackup: sparkbench notebook backup DEST — SQLite's online backup into a new file
// (never over an existing one), then the copy verified and its rows counted against the
// notebook's.
func notebookBackup(nbFlag, dest string, stdout, stderr io.Writer) int {
	path, err := notebookPath(nbFlag)
	if err != nil {
		fprintf(stderr, "sparkbench notebook backup: %v\n", err)
		return 2
	}
	if _, err := os.Lstat(dest); err == nil {
		fprintf(stderr, "sparkbench notebook backup: %s exists already: a backup never overwrites a file; give a new file name\n", dest)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	nb, code := openNotebook("notebook backup", path, true, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	size, err := nb.Backup(ctx, dest)
	if err != nil {
		fprintf(stderr, "sparkbench notebook backup: %v; nothing was written at %s\n", err, dest)
		return 1
	}
	src, err := nb.Stats(ctx)
	if err != nil {
		fprintf(stderr, "sparkbench notebook backup: %v\n", err)
		return 1
	}
	cp, err := store.OpenWith(dest, store.Options{ReadOnly: true})
	if err != nil {
		fprintf(stderr, "sparkbench notebook backup: the copy %s does not open: %v\n", dest, err)
		return 1
	}
	defer cp.Close()
	rep, err := cp.Verify(ctx)
	if err != nil || !rep.OK() {
		why := fmt.Sprint(err)
		if err == nil {
			why = rep.Broken.Reason
		}
		fprintf(stderr, "sparkbench notebook backup: the copy %s does not verify: %s; run `sparkbench notebook verify --notebook %s` on the notebook itself\n", dest, why, path)
		return 1
	}
	got, err := cp.Stats(ctx)
	if err != nil {
		fprintf(stderr, "sparkbench notebook backup: %v\n", err)
		return 1
	}
	same := "the same rows in every table as the notebook"
	for t, k := range src.Tables {
		if got.Tables[t] != k {
			same = fmt.Sprintf("the notebook changed while it was copied (table %s: %d rows in the copy, %d now): the copy is the notebook as it was then", t, got.Tables[t], k)
			break
		}
	}
	fprintf(stdout, "notebook %s backed up to %s (%s): the copy verifies intact (%d journal entries, head entry %d %s), %s\n",
		path, dest, humanBytes(size), rep.Entries, rep.HeadSeq, rep.Head, same)
	return 0
}

// recoverAdvice is what to do with a damaged notebook.
const recoverAdvice = "keep this file as evidence; recover from a copy made by `sparkbench notebook backup`, " +
	"or import the studies' last receipt bundles (`sparkbench import BUNDLE`) into a new notebook (--notebook NEW)"

// anchorProblem says how the journal contradicts its anchor, and what to do.
func anchorProblem(c *store.AnchorCheck, rep store.VerifyReport) string {
	a := c.Anchor
	saw := fmt.Sprintf("the anchor (%s, written %s) saw entry %d with head %s", filepath.Base(c.Path), anchorTime(a), a.Seq, a.Head)
	const todo = "keep this file and its anchor as evidence and restore from a backup (if you restored an older copy on purpose, move the anchor away)"
	if c.Problem == store.AnchorTruncated {
		return fmt.Sprintf("journal truncated: %s, but the journal ends at entry %d (head %s); entries were deleted: %s", saw, rep.HeadSeq, rep.Head, todo)
	}
	return fmt.Sprintf("journal rewritten: %s, but the journal's entry %d has hash %s; entries were deleted and others written in their place, or this is another notebook: %s",
		saw, a.Seq, c.HashAt, todo)
}

// anchorTime is when an anchor was written, to the second.
func anchorTime(a store.Anchor) string {
	if t, err := time.Parse(time.RFC3339Nano, a.WrittenAt); err == nil {
		return t.UTC().Format("2006-01-02 15:04:05Z")
	}
	return a.WrittenAt
}

// laterEntries is "; N entries were journaled after it" (nothing for none).
func laterEntries(n int64) string {
	if n <= 0 {
		return " (it is the head)"
	}
	return fmt.Sprintf(" (%d %s journaled after it)", n, plural(int(n), "entry was", "entries were"))
}

// openNotebook opens the notebook, reporting refusals (not a notebook, too new, missing, empty,
// not writable by this user) as bad input (exit 2) and other failures as exit 1.
func openNotebook(cmd, path string, readOnly bool, stderr io.Writer) (*store.Notebook, int) {
	nb, err := store.OpenWith(path, store.Options{ReadOnly: readOnly})
	if err == nil {
		return nb, 0
	}
	fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
	if errors.Is(err, store.ErrNotNotebook) || errors.Is(err, store.ErrTooNew) || errors.Is(err, store.ErrNotWritable) ||
		errors.Is(err, store.ErrEmpty) || readOnly && errors.Is(err, os.ErrNotExist) {
		return nil, 2
	}
	if _, statErr := os.Stat(path); readOnly && errors.Is(statErr, os.ErrNotExist) {
		return nil, 2
	}
	return nil, 1
}

// openNotebookFlag opens the notebook a --notebook flag names (its default when empty) for
// verb cmd, saying on stderr what went wrong; the exit code is 2 for a bad path or file, 1
// otherwise (nil notebook).
func openNotebookFlag(cmd, flag string, readOnly bool, stderr io.Writer) (*store.Notebook, int) {
	path, err := notebookPath(flag)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return nil, 2
	}
	return openNotebook(cmd, path, readOnly, stderr)
}

// cmdImport: sparkbench import [--study NAME] [--notebook P] FILE...
func cmdImport(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("import", stderr)
	nbFlag := flags.String("notebook", "", nbFlagHelp)
	study := flags.String("study", store.DefaultImportStudy, "throughput study to import into (created if missing)")
	flags.Usage = func() {
		fprintf(stderr, "usage: sparkbench import [--study NAME] [--notebook PATH] FILE...\n"+
			"Imports llama-bench output (-o jsonl, json, csv, sql or md, including hand-made and pasted md tables with\n"+
			"\"pp512 @ d8192\" tests and \"mean ± sd\" cells, see docs/notebook.md) as imported legs. Nothing is imported if\n"+
			"any file is refused.\n")
		flags.PrintDefaults()
	}
	files, err := parseInterspersed(flags, args)
	if err != nil {
		return usageError(err)
	}
	if len(files) == 0 {
		fprintf(stderr, "sparkbench import: no files given; pass one or more files of llama-bench output (e.g. sparkbench import bench.jsonl)\n")
		return 2
	}
	for _, f := range files {
		if isBundleArg(f) { // a receipt bundle: verified, then imported as a study (importbundle.go)
			return cmdImportBundles(*nbFlag, files, stdout, stderr)
		}
	}
	var in []store.ImportFile
	for _, f := range files {
		file, err := store.ReadImportFile(f)
		var nr *fsread.NotRegularError
		if errors.As(err, &nr) && nr.IsDir() {
			err = syscall.EISDIR // as before: "cannot read F: is a directory"
		} else if nr != nil || errors.As(err, new(*fsread.TooLargeError)) {
			// a named pipe, socket or device (never opened for a blocking read), or too long
			fprintf(stderr, "sparkbench import: %v; nothing was imported\n", err)
			return 2
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			fprintf(stderr, "sparkbench import: cannot read %s: %v; nothing was imported: check the file name\n", f, err)
			return 2
		}
		in = append(in, file)
	}
	// Refuse bad input before the notebook is created or touched.
	for _, f := range in {
		if _, _, err := store.ParseImportFile(f.Name, f.Data); err != nil {
			fprintf(stderr, "sparkbench import: %v; nothing was imported: fix that file or leave it out, and run again\n", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...) // before the notebook's open, which may wait for its lock
	defer stop()
	nb, code := openNotebookFlag("import", *nbFlag, false, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	res, err := workbench.Import(ctx, nb, store.ImportRequest{Study: *study, Files: in})
	if err != nil {
		var pe *benchfmt.ParseError
		if errors.As(err, &pe) {
			fprintf(stderr, "sparkbench import: %v; nothing was imported: fix that file or leave it out, and run again\n", err)
			return 2
		}
		fprintf(stderr, "sparkbench import: %v; nothing was imported\n", err)
		if strings.Contains(err.Error(), "throughput study") || errors.As(err, new(*store.NumericNameError)) {
			return 2
		}
		return 1
	}
	for _, r := range res {
		if r.Duplicate {
			fprintf(stdout, "skipped %s: the same bytes (sha256 %s) are already leg %d of study %q\n", r.File, r.SHA256[:16], r.LegID, *study)
			continue
		}
		if bench := r.Rows - r.Batched; bench > 0 && r.Batched > 0 { // a report with both kinds of tables
			fprintf(stdout, "imported %s: %s, %d llama-bench %s (%s) and %d llama-batched-bench %s (%s) as leg %d of study %q, sha256 %s\n",
				r.File, r.Format, bench, plural(bench, "row", "rows"), strings.Join(r.Tests[:len(r.Tests)-len(r.BatchedTests)], ", "),
				r.Batched, plural(r.Batched, "row", "rows"), strings.Join(r.BatchedTests, ", "), r.LegID, *study, r.SHA256)
		} else {
			fprintf(stdout, "imported %s: %s, %d %s (%s) as leg %d of study %q, sha256 %s\n",
				r.File, r.Format, r.Rows, plural(r.Rows, "row", "rows"), strings.Join(r.Tests, ", "), r.LegID, *study, r.SHA256)
		}
		if r.Partial > 0 {
			fprintf(stdout, "  note: %d of its rows lack fields that -o jsonl carries (%s output); those fields are recorded as unknown\n", r.Partial, r.Format)
		}
	}
	return 0
}

// cmdExport: sparkbench export STUDY [--format csv|json] [--rows bench|requests] [--out FILE] [--notebook P]
func cmdExport(args []string, stdout, stderr io.Writer) int {
	flags := newFlagSet("export", stderr)
	nbFlag := flags.String("notebook", "", nbFlagHelp)
	format := flags.String("format", "csv", "csv or json")
	rows := flags.String("rows", "bench", "bench (llama-bench rows) or requests (llama-server request records)")
	out := flags.String("out", "", "write to this file instead of standard output")
	flags.Usage = func() {
		fprintf(stderr, "usage: sparkbench export STUDY [--format csv|json] [--rows bench|requests] [--out FILE] [--notebook PATH]\n"+
			"Writes a study's rows; the columns are documented in docs/notebook.md.\n")
		flags.PrintDefaults()
	}
	pos, err := parseInterspersed(flags, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench export: give exactly one study (name or id), e.g. sparkbench export imported --format json\n")
		return 2
	}
	if *format != store.ExportCSV && *format != store.ExportJSON {
		fprintf(stderr, "sparkbench export: --format %q: use csv or json\n", *format)
		return 2
	}
	if *rows != store.ExportBench && *rows != store.ExportRequests {
		fprintf(stderr, "sparkbench export: --rows %q: use bench or requests\n", *rows)
		return 2
	}
	nb, code := openNotebookFlag("export", *nbFlag, true, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	st, err := nb.FindStudy(ctx, pos[0])
	if err != nil {
		var names []string
		if all, lerr := nb.Studies(ctx); lerr == nil {
			for i, s := range all {
				if i == 8 {
					names = append(names, "…")
					break
				}
				names = append(names, fmt.Sprintf("%q", s.Name))
			}
		}
		hint := "the notebook has no studies yet"
		if len(names) > 0 {
			hint = "studies: " + strings.Join(names, ", ")
		}
		fprintf(stderr, "sparkbench export: %v (%s)\n", err, hint)
		return 2
	}
	w := stdout
	var file *os.File
	if *out != "" {
		if file, err = os.Create(*out); err != nil {
			fprintf(stderr, "sparkbench export: %v\n", err)
			return 2
		}
		w = file
	}
	n, err := nb.ExportStudy(ctx, w, st.ID, store.ExportOptions{Format: *format, Rows: *rows})
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*out)
		}
	}
	if err != nil {
		fprintf(stderr, "sparkbench export: %v\n", err)
		return 1
	}
	if file != nil {
		fprintf(stderr, "exported %d %s rows of study %q to %s (%s)\n", n, *rows, st.Name, filepath.Clean(*out), *format)
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func humanBytes(n int64) string { return textsafe.ByteSize(n) }
