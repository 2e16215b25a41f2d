package capacity

import (
	"strings"
	"testing"

	"sparkbench/app/study"
)

// TestSLOPresets: a plan naming a preset with the preset's figures is valid and its SHA-256
// covers the figures; a preset whose figures the plan changed, or an unknown preset, is refused
// at serving.slo.preset saying what the preset is and what to do.
func TestSLOPresets(t *testing.T) {
	for _, pr := range SLOPresets() {
		if pr.Source == "" || !strings.HasPrefix(pr.URL, "https://") || !(pr.TTFTMs > 0 && pr.TPOTMs > 0) || pr.Percentile != 99 {
			t.Errorf("preset %+v: want a source, its URL, TTFT and TPOT limits and the percentile", pr)
		}
		p := servingPlan()
		pr.Apply(&p.Serving.SLO)
		if errs := study.Errors(Validate(p, ValidateOptions{})); len(errs) > 0 {
			t.Errorf("%s: refused: %v", pr.Name, errs)
		}
	}
	chat, ok := FindSLOPreset("guidellm-chat")
	if !ok || chat.TTFTMs != 200 || chat.TPOTMs != 50 || chat.E2EMs != 0 {
		t.Fatalf("guidellm-chat %+v", chat)
	}
	a, b := servingPlan(), servingPlan()
	chat.Apply(&a.Serving.SLO)
	rag, _ := FindSLOPreset("guidellm-rag")
	rag.Apply(&b.Serving.SLO)
	ha, _, _ := a.SHA256()
	hb, _, _ := b.SHA256()
	if ha == hb {
		t.Errorf("two presets give the same plan SHA-256")
	}
	for _, c := range []struct {
		edit func(*SLO)
		want string
	}{
		{func(s *SLO) { s.TTFTMs = 250 }, `"guidellm-chat" is TTFT ≤ 200 ms, TPOT ≤ 50 ms at p99 (GuideLLM's SLO examples: chat applications), but the plan's figures are TTFT ≤ 250 ms, TPOT ≤ 50 ms at p99: write the preset's figures, or drop the preset`},
		{func(s *SLO) { s.Percentile = 95 }, "but the plan's figures are TTFT ≤ 200 ms, TPOT ≤ 50 ms at p95"},
		{func(s *SLO) { s.Preset = "fast" }, `"fast": not a known preset (mlperf-llama2-70b-server, mlperf-llama2-70b-interactive, guidellm-chat, guidellm-rag, guidellm-content-generation, guidellm-code-generation); drop it`},
	} {
		p := servingPlan()
		chat.Apply(&p.Serving.SLO)
		c.edit(&p.Serving.SLO)
		var msgs []string
		for _, pr := range Validate(p, ValidateOptions{}) {
			if pr.Path == "serving.slo.preset" {
				msgs = append(msgs, pr.Msg)
			}
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], c.want) {
			t.Errorf("problems at serving.slo.preset %q, want one containing %q", msgs, c.want)
		}
	}
}
