package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"sparkbench/store"
	"sparkbench/ui"
)

// notebookService is ui.NotebookService over the notebook.
type notebookService struct{ nb *store.Notebook }

var _ ui.NotebookService = notebookService{}

// maxTimeline bounds the entries the timeline loads (newest kept).
const maxTimeline = 20000

func (s notebookService) Journal(ctx context.Context) ([]ui.JournalRow, error) {
	entries, err := s.nb.Journal(ctx, 0, 0, 0)
	if err != nil {
		return nil, err
	}
	if len(entries) > maxTimeline {
		entries = entries[len(entries)-maxTimeline:]
	}
	rows := make([]ui.JournalRow, 0, len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		sum := string(e.Payload)
		if len(sum) > 300 {
			sum = sum[:300] + "…"
		}
		rows = append(rows, ui.JournalRow{Seq: e.Seq, At: e.At, Kind: e.Kind, StudyID: e.StudyID, Summary: sum})
	}
	return rows, nil
}

func (s notebookService) Verify(ctx context.Context) (ui.ChainStatus, error) {
	rep, err := s.nb.Verify(ctx)
	if err != nil {
		return ui.ChainStatus{}, err
	}
	st := ui.ChainStatus{OK: rep.OK(), Entries: rep.Entries, Head: rep.Head}
	if rep.Broken != nil {
		st.Broken = rep.Broken.String()
	}
	return st, nil
}

func (s notebookService) Import(ctx context.Context, paths []string) ([]string, error) {
	var files []store.ImportFile
	for _, p := range paths {
		f, err := store.ReadImportFile(p) // a regular file only, bounded: a FIFO cannot block the window
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	res, err := s.nb.ImportBenchOutput(ctx, store.ImportRequest{Files: files})
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, r := range res {
		if r.Duplicate {
			lines = append(lines, fmt.Sprintf("%s: already imported (leg %d)", r.File, r.LegID))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %d rows (%s) into study %d, leg %d", r.File, r.Rows, r.Format, r.StudyID, r.LegID))
	}
	return lines, nil
}

// VerifyBundle runs `sparkbench verify` on the bundle: the window shows exactly what the
// command prints.
func (s notebookService) VerifyBundle(ctx context.Context, path string) (bool, []string, error) {
	var out, errOut bytes.Buffer
	code := cmdVerifyCtx(ctx, []string{path}, &out, &errOut)
	lines := strings.Split(strings.TrimSpace(out.String()+errOut.String()), "\n")
	if code == 2 {
		return false, nil, errors.New(strings.Join(lines, "\n"))
	}
	return code == 0, lines, nil
}
