package workbench

import (
	"context"
	"strconv"

	"sparkbench/app/overview"
	"sparkbench/store"
)

// NotebookVerifyRequest asks for a notebook check: the hash chain and every leg's samples;
// unless ChainOnly, also the anchor (the last head seen), the head ExpectHead (64 hex digits,
// "": none) written down elsewhere, and, when the chain still holds all that, a new anchor.
type NotebookVerifyRequest struct {
	ExpectHead string
	ChainOnly  bool
}

// NotebookCheck is a notebook check. Intact reports whether every part holds; the first part
// that does not is the last one set: Report broken (!Report.OK()), the anchor unreadable
// (AnchorErr), contradicted (Anchor.Problem), or ExpectHead not in the chain (!ExpectFound).
type NotebookCheck struct {
	Report store.VerifyReport
	// Anchor is the anchor's check (nil: no anchor yet, or ChainOnly).
	Anchor    *store.AnchorCheck
	AnchorErr error
	// ExpectSeq is the entry whose hash is ExpectHead (when ExpectFound).
	ExpectSeq   int64
	ExpectFound bool
	// AnchorWriteErr: the chain is intact but the new anchor could not be written.
	AnchorWriteErr error
}

// Intact is whether the notebook holds: the chain, its anchor and the expected head.
func (c *NotebookCheck) Intact(req NotebookVerifyRequest) bool {
	switch {
	case !c.Report.OK():
		return false // the chain, a record or the file
	case req.ChainOnly:
		return true
	case c.AnchorErr != nil, c.Anchor != nil && c.Anchor.Problem != "":
		return false
	}
	return req.ExpectHead == "" || c.ExpectFound
}

// VerifyNotebook checks the notebook as req asks. An error: the notebook could not be read.
func VerifyNotebook(ctx context.Context, nb *store.Notebook, req NotebookVerifyRequest) (*NotebookCheck, error) {
	rep, err := nb.Verify(ctx)
	if err != nil {
		return nil, err
	}
	c := &NotebookCheck{Report: rep}
	if rep.OK() {
		// The overview's stored summaries are a cache outside the journal: each one a reader
		// would use is recomputed from the rows, which the chain holds.
		m, checked, err := overview.CheckSummaries(ctx, nb)
		if err != nil {
			return nil, err
		}
		c.Report.RecordsChecked += int64(checked)
		if m != nil {
			c.Report.Broken = &store.BrokenEntry{Table: "study_summaries", RowID: m.StudyID, Column: "payload",
				Reason: "study_summaries row of study " + strconv.FormatInt(m.StudyID, 10) + ", column payload: " + m.Reason}
		}
		rep = c.Report
	}
	// A damaged row (Broken.Table set) leaves the chain walked to its head: the anchor is still
	// read, since a truncated journal is what orphans rows, and it says so more plainly.
	if !rep.OK() && rep.Broken.Table == "" || req.ChainOnly {
		return c, nil
	}
	if c.Anchor, c.AnchorErr = nb.CheckAnchor(ctx, rep); c.AnchorErr != nil || c.Anchor != nil && c.Anchor.Problem != "" {
		return c, nil
	}
	if req.ExpectHead != "" {
		seq, found, err := nb.SeqOfHash(ctx, req.ExpectHead)
		if err != nil {
			return nil, err
		}
		if !found || seq > rep.HeadSeq {
			return c, nil
		}
		c.ExpectSeq, c.ExpectFound = seq, true
	}
	if !rep.OK() {
		return c, nil // a damaged row: no new anchor
	}
	if c.Anchor == nil || c.Anchor.Anchor.Seq < rep.HeadSeq {
		c.AnchorWriteErr = nb.WriteAnchor(rep)
	}
	return c, nil
}

// Import records files of llama-bench output as imported legs of a throughput study
// (req.Study, "": the default one), all or nothing; the same bytes again are a Duplicate.
func Import(ctx context.Context, nb *store.Notebook, req store.ImportRequest) ([]store.ImportResult, error) {
	return nb.ImportBenchOutput(ctx, req)
}

// ReadImportFiles reads files for Import: regular files only, bounded (a FIFO cannot block).
func ReadImportFiles(paths []string) ([]store.ImportFile, error) {
	var files []store.ImportFile
	for _, p := range paths {
		f, err := store.ReadImportFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}
