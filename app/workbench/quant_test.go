package workbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/kinds"
	"sparkbench/store"
)

// TestShowThroughputNamesALadder: the window's study view (ShowThroughput) says a ladder is
// shown by the CLI rather than failing on its plan, and the ladder's own Show answers.
func TestShowThroughputNamesALadder(t *testing.T) {
	nb, err := store.Open(filepath.Join(t.TempDir(), "nb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ctx := context.Background()
	st, err := nb.CreateStudy(ctx, store.Study{Name: "ladder", Kind: kinds.Quant, Status: store.StatusRegistered})
	if err != nil {
		t.Fatal(err)
	}
	plan := map[string]any{"schema": "sparkbench.quant/v1", "name": "ladder", "quants": []string{"Q4_0"},
		"reference": map[string]string{"path": "/nonexistent/ref.gguf", "sha256": strings.Repeat("a", 64)},
		"speed":     map[string]any{"depths": []int{0}}, "rule": map[string]string{"maximize": "tg@0"}}
	if _, err := nb.RegisterPlan(ctx, st.ID, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := ShowThroughput(ctx, nb, st.ID); err == nil || !strings.Contains(err.Error(), "is a quantization ladder") || !strings.Contains(err.Error(), "sparkbench study show 1") {
		t.Fatalf("ShowThroughput of a ladder: %v", err)
	}
	// Never run: incomplete, no selection (nothing is measured yet), and what runs it.
	shown, err := KindOf(kinds.Quant).Show(ctx, nb, st)
	if err != nil || !strings.Contains(shownText(shown), "**Incomplete, no selection**") ||
		!strings.Contains(shownText(shown), "1 candidate(s) pending (not measured: Q4_0 (not run)); `sparkbench study run 1` measures them") {
		t.Fatalf("the ladder's Show: %v\n%s", err, shownText(shown))
	}
}

func shownText(s *Shown) string {
	var b strings.Builder
	s.Print(&b)
	return b.String()
}
