package overview

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"sparkbench/app/study"
	"sparkbench/store"
)

// Notebook is the Source over a notebook: its throughput studies (store.Notebook.Studies)
// and each study through store.StudyRecorder, the readers `study show` uses.
func Notebook(nb *store.Notebook) Source { return notebookSource{nb} }

type notebookSource struct{ nb *store.Notebook }

func (s notebookSource) Study(ctx context.Context, id int64) (study.StoredStudy, error) {
	return store.StudyRecorder{N: s.nb}.Study(ctx, id)
}

func (s notebookSource) Legs(ctx context.Context, id int64) ([]study.StoredLeg, error) {
	return store.StudyRecorder{N: s.nb}.Legs(ctx, id)
}

func (s notebookSource) Rows(ctx context.Context, id int64) ([]study.StoredRow, error) {
	return store.StudyRecorder{N: s.nb}.Rows(ctx, id)
}

// ThroughputStudies lists the notebook's throughput studies; an imported one says which
// bundle it came from.
func (s notebookSource) ThroughputStudies(ctx context.Context) ([]StudyRef, error) {
	all, err := s.nb.Studies(ctx)
	if err != nil {
		return nil, err
	}
	var out []StudyRef
	for _, st := range all {
		if st.Kind != store.StudyThroughput {
			continue
		}
		ref, err := s.ref(ctx, st)
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return out, nil
}

// ref is a throughput study as the overview lists it. Its Version is the study's status,
// legs, plan and last activity: any of them changes whenever the study may have gained or
// lost rows (a new leg, a flag, a note are journaled); a running study has none.
func (s notebookSource) ref(ctx context.Context, st store.StudySummary) (StudyRef, error) {
	ref := StudyRef{ID: st.ID, Name: st.Name, Status: st.Status, HasPlan: st.PlanSHA256 != ""}
	if st.RunningLegs == 0 && st.Status != study.StatusRunning {
		ref.Version = fmt.Sprintf("%s/%d/%s/%s", st.Status, st.Legs, st.PlanSHA256, st.LastActivity.UTC().Format(time.RFC3339Nano))
	}
	if st.Status == store.StatusImported {
		o, found, err := s.nb.ImportedOriginOf(ctx, st.ID)
		if err != nil {
			return StudyRef{}, err
		}
		if found {
			ref.Imported = true
			ref.ImportedFrom = fmt.Sprintf("bundle sha256 %s…, origin study %d %q (%s there)", short(o.BundleSHA256), o.OriginStudyID, o.OriginName, o.OriginStatus)
		}
	}
	return ref, nil
}

// Summaries reads the notebook's stored overview summaries (SummaryStore).
func (s notebookSource) Summaries(ctx context.Context) (map[int64][]store.Summary, error) {
	return s.nb.StudySummaries(ctx, SummaryKind)
}

// PutSummaries keeps overview summaries in one transaction (SummaryStore).
func (s notebookSource) PutSummaries(ctx context.Context, batch map[int64]store.Summary) error {
	return s.nb.PutStudySummaries(ctx, SummaryKind, batch)
}

// Writable: a notebook opened read-only (the CLI) reads summaries but writes none.
func (s notebookSource) Writable() bool { return !s.nb.ReadOnly() }

// Summarize reads study id from its rows, as the overview does, and keeps its series as the
// study's stored summary at its current version, so the next cold overview reads that one blob
// instead of every row. A run calls it when the study ends. A study that is not a throughput
// study, or has a running leg (no version), is left alone; a read-only notebook is refused
// (store.ErrReadOnly).
func Summarize(ctx context.Context, nb *store.Notebook, id int64) error {
	if nb.ReadOnly() {
		return store.ErrReadOnly
	}
	st, err := nb.StudySummaryOf(ctx, id)
	if err != nil || st.Kind != store.StudyThroughput {
		return err
	}
	src := notebookSource{nb}
	ref, err := src.ref(ctx, st)
	if err != nil || ref.Version == "" {
		return err
	}
	c := cached{}
	if c.series, c.skipped, err = studySeries(ctx, src, ref); err != nil {
		return err
	}
	return nb.PutStudySummary(ctx, id, SummaryKind, ref.Version, encodeSummary(c))
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// SummaryMismatch is a stored summary that a reader would use (its version is its study's
// current one) and that differs from what the study's rows give.
type SummaryMismatch struct {
	StudyID int64
	Version string
	Reason  string
}

// CheckSummaries recomputes, from the rows, every stored overview summary a reader would use
// instead of them (its study's current version; the others are never read) and compares the
// bytes: the summaries are a cache outside the journal, so this is how `notebook verify` holds
// them. nil: every summary in use says what the rows say. Checked counts those compared.
func CheckSummaries(ctx context.Context, nb *store.Notebook) (mismatch *SummaryMismatch, checked int, err error) {
	stored, err := nb.StudySummaries(ctx, SummaryKind)
	if err != nil || len(stored) == 0 {
		return nil, 0, err
	}
	src := notebookSource{nb}
	refs, err := src.ThroughputStudies(ctx)
	if err != nil {
		return nil, 0, err
	}
	for _, ref := range refs {
		if ref.Version == "" {
			continue
		}
		for _, sum := range stored[ref.ID] {
			if sum.Version != ref.Version {
				continue
			}
			c := cached{}
			if c.series, c.skipped, err = studySeries(ctx, src, ref); err != nil {
				return nil, checked, err
			}
			checked++
			if want := encodeSummary(c); !bytes.Equal(want, sum.Payload) {
				return &SummaryMismatch{StudyID: ref.ID, Version: sum.Version,
					Reason: fmt.Sprintf("study %d's stored overview summary (version %s, %d bytes) is not what its rows give (%d bytes): the overview would show series the rows do not hold",
						ref.ID, sum.Version, len(sum.Payload), len(want))}, checked, nil
			}
			break // the one a reader uses (newest first)
		}
	}
	return nil, checked, nil
}
