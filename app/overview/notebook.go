package overview

import (
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
		ref := StudyRef{ID: st.ID, Name: st.Name, Status: st.Status, HasPlan: st.PlanSHA256 != ""}
		if st.RunningLegs == 0 && st.Status != study.StatusRunning {
			ref.Version = fmt.Sprintf("%s/%d/%s/%s", st.Status, st.Legs, st.PlanSHA256, st.LastActivity.UTC().Format(time.RFC3339Nano))
		}
		if st.Status == store.StatusImported {
			o, found, err := s.nb.ImportedOriginOf(ctx, st.ID)
			if err != nil {
				return nil, err
			}
			if found {
				ref.Imported = true
				ref.ImportedFrom = fmt.Sprintf("bundle sha256 %s…, origin study %d %q (%s there)", short(o.BundleSHA256), o.OriginStudyID, o.OriginName, o.OriginStatus)
			}
		}
		out = append(out, ref)
	}
	return out, nil
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}
