package main

import (
	"context"
	"fmt"

	"sparkbench/app/workbench"
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
		rows = append(rows, ui.JournalRow{Seq: e.Seq, At: e.At, Kind: e.Kind, StudyID: e.StudyID, Summary: sum,
			Sentence: workbench.JournalSentence(e.Kind, e.Payload), Tone: workbench.JournalTone(e.Kind), Payload: string(e.Payload)})
	}
	return rows, nil
}

func (s notebookService) Verify(ctx context.Context) (ui.ChainStatus, error) {
	c, err := workbench.VerifyNotebook(ctx, s.nb, workbench.NotebookVerifyRequest{ChainOnly: true})
	if err != nil {
		return ui.ChainStatus{}, err
	}
	rep := c.Report
	st := ui.ChainStatus{OK: rep.OK(), Entries: rep.Entries, Head: rep.Head}
	if rep.Broken != nil {
		st.Broken = rep.Broken.String()
	}
	return st, nil
}

func (s notebookService) Import(ctx context.Context, paths []string) ([]string, error) {
	files, err := workbench.ReadImportFiles(paths) // regular files only, bounded: a FIFO cannot block the window
	if err != nil {
		return nil, err
	}
	res, err := workbench.Import(ctx, s.nb, store.ImportRequest{Files: files})
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, r := range res {
		if r.Duplicate {
			lines = append(lines, fmt.Sprintf("%s: already imported (leg %d)", r.File, r.LegID))
			continue
		}
		rows := fmt.Sprintf("%d rows", r.Rows)
		if bench := r.Rows - r.Batched; bench > 0 && r.Batched > 0 { // a report with both kinds of tables
			rows = fmt.Sprintf("%d llama-bench and %d llama-batched-bench rows", bench, r.Batched)
		}
		lines = append(lines, fmt.Sprintf("%s: %s (%s) into study %d, leg %d", r.File, rows, r.Format, r.StudyID, r.LegID))
	}
	return lines, nil
}

// VerifyBundle checks a bundle through the call `sparkbench verify` makes; the window shows
// the lines the command prints.
func (s notebookService) VerifyBundle(ctx context.Context, path string) (bool, []string, error) {
	v, err := workbench.VerifyBundle(ctx, workbench.VerifyRequest{Path: path})
	if err != nil {
		return false, nil, fmt.Errorf("sparkbench verify: %w", err)
	}
	return v.OK(), workbench.VerifyText(v), nil
}
