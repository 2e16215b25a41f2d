package overview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"sparkbench/app/study"
	"sparkbench/store"
)

// counting counts the studies whose rows were read.
type counting struct {
	Source
	rows atomic.Int64
}

func (c *counting) Rows(ctx context.Context, id int64) ([]study.StoredRow, error) {
	c.rows.Add(1)
	return c.Source.Rows(ctx, id)
}

// TestServiceRereadsOnlyChangedStudies: a Service reads every study once, then only a study
// that gained a leg; what it returns is what a new Service computes; an empty notebook is
// ErrNoResults.
func TestServiceRereadsOnlyChangedStudies(t *testing.T) {
	nb, err := store.Open(filepath.Join(t.TempDir(), "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ctx := context.Background()
	if _, err := New(Notebook(nb)).Open(ctx, Options{}); !errors.Is(err, ErrNoResults) {
		t.Fatalf("empty notebook: %v", err)
	}
	addBenchStudies(t, nb, 3)
	src := &counting{Source: Notebook(nb)}
	svc := &Service{Src: src, ReadHeader: benchHeader, Readers: 2}
	opts := Options{Line: 85, Test: "tg128"}
	open := func(s *Service) []byte {
		t.Helper()
		ov, err := s.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ov)
		return b
	}
	first := open(svc)
	if src.rows.Load() != 3 {
		t.Fatalf("first open read %d studies, want 3", src.rows.Load())
	}
	if again := open(svc); src.rows.Load() != 3 || !bytes.Equal(again, first) {
		t.Fatalf("second open read %d studies in all (want 3), same result %v", src.rows.Load(), bytes.Equal(again, first))
	}
	// Study 2 gains a (canary) leg: only it is read again.
	rec := store.StudyRecorder{N: nb}
	leg, _, err := rec.StartLeg(ctx, study.LegStart{StudyID: 2, Label: "canary after m1/d0", Kind: "canary", Role: "canary", Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.FinishLeg(ctx, leg, study.LegEnd{Class: "ok", RowStatus: []string{}}); err != nil {
		t.Fatal(err)
	}
	warm := open(svc)
	if src.rows.Load() != 4 {
		t.Errorf("after study 2 changed: %d studies read in all, want 4", src.rows.Load())
	}
	if cold := open(&Service{Src: Notebook(nb), ReadHeader: benchHeader}); !bytes.Equal(warm, cold) {
		t.Errorf("warm and cold overviews differ:\n%s\n%s", warm, cold)
	}
	var ov Overview
	_ = json.Unmarshal(warm, &ov)
	// benchRow: study 0's tg is 100, 90, 80, 70 t/s at 0, 2048, 4096, 8192; line 85: earned at
	// d0, not at 8192, and 85 is crossed halfway between 2048 and 4096.
	if len(ov.Badges.Rows) != 15 || ov.Badges.Rows[0].D0.TS != 100 || !ov.Badges.Rows[0].D0Only.Earned || ov.Badges.Rows[0].BothDepths.Earned ||
		ov.Badges.Rows[0].Deep.Depth != 8192 || ov.Badges.Rows[0].Death.Depth == nil || *ov.Badges.Rows[0].Death.Depth != 3072 {
		t.Errorf("badges: %d rows, first %+v", len(ov.Badges.Rows), ov.Badges.Rows[0])
	}
}
