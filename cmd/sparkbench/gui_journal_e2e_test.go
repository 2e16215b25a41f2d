package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
)

// TestWindowJournalReadsTheDemoRun runs the demo on the real llama-bench and reads the
// window's journal: every entry of the run has a sentence of its own kind (none falls back to
// "see its payload"), its tone and its whole payload; the legs read as "leg tiny/d128 finished
// ok: 2 rows in 0.52 s".
func TestWindowJournalReadsTheDemoRun(t *testing.T) {
	loc := llamatest.Binaries(t)
	nb, tmp, _ := tempNotebook(t)
	svc := studyService{nb: nb, llamaDir: loc.Dir, dataDir: filepath.Join(tmp, "data")}
	ctx := context.Background()
	id, err := svc.EnsureDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Run(ctx, id, func(study.Event) {}); err != nil {
		t.Fatal(err)
	}
	rows, err := notebookService{nb}.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	legLine := regexp.MustCompile(`^leg (tiny|moe)/d(0|128|256) finished ok: 2 rows in \d+\.\d\d s$`)
	legs := 0
	for _, r := range rows {
		kinds[r.Kind] = true
		if strings.HasSuffix(r.Sentence, "(see its payload)") || r.Tone == "other" || r.Payload == "" {
			t.Errorf("#%d %s reads %q (tone %q)", r.Seq, r.Kind, r.Sentence, r.Tone)
		}
		if r.Sentence != workbench.JournalSentence(r.Kind, []byte(r.Payload)) {
			t.Errorf("#%d: the row's sentence is not the renderer's", r.Seq)
		}
		if r.Kind == "leg.finished" && r.StudyID == id && !strings.HasPrefix(r.Sentence, "leg canary") {
			legs++
			if !legLine.MatchString(r.Sentence) {
				t.Errorf("leg sentence %q", r.Sentence)
			}
		}
	}
	for _, k := range []string{"study.created", "plan.registered", "study.plan_source", "prediction.registered", "study.run",
		"leg.started", "leg.rows_marked", "leg.finished", "verdict"} {
		if !kinds[k] {
			t.Errorf("the demo run journaled no %s entry (kinds %v)", k, kinds)
		}
	}
	if legs != 6 {
		t.Errorf("%d leg sentences, want the demo's 6", legs)
	}
}
