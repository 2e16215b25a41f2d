package capacity

import (
	"fmt"
	"slices"
	"strings"
)

// SLOPreset is a named set of serving limits from a public source, with the percentile that
// source judges them at. A plan naming a preset (serving.slo.preset) writes its figures too,
// so the plan's SHA-256 covers the numbers, and validation holds the two to each other.
type SLOPreset struct {
	Name       string  `json:"name"`
	Source     string  `json:"source"` // the publication, in words
	URL        string  `json:"url"`
	TTFTMs     float64 `json:"ttft_ms"`
	TPOTMs     float64 `json:"tpot_ms"`
	E2EMs      float64 `json:"e2e_ms,omitempty"` // 0: the source sets no end-to-end limit
	Percentile int     `json:"percentile"`
}

const (
	mlperfLLMURL   = "https://mlcommons.org/2025/04/llm-inference-v5/"
	guidellmSLOURL = "https://github.com/vllm-project/guidellm/blob/main/docs/guides/service_level_objectives.md"
)

// sloPresets: MLPerf Inference's Llama 2 70B latency constraints (Server and Interactive
// scenarios, judged at the 99th percentile), and GuideLLM's example SLOs for the use cases
// that state both a TTFT and an inter-token limit (99% of requests; GuideLLM's ITL excludes
// the first token, as sparkbench's TPOT does; its examples with an end-to-end limit alone have
// no preset here, since a serving SLO needs TTFT and TPOT).
var sloPresets = []SLOPreset{
	{Name: "mlperf-llama2-70b-server", Source: "MLPerf Inference, Llama 2 70B, Server scenario", URL: mlperfLLMURL, TTFTMs: 2000, TPOTMs: 200, Percentile: 99},
	{Name: "mlperf-llama2-70b-interactive", Source: "MLPerf Inference, Llama 2 70B, Interactive scenario", URL: mlperfLLMURL, TTFTMs: 450, TPOTMs: 40, Percentile: 99},
	{Name: "guidellm-chat", Source: "GuideLLM's SLO examples: chat applications", URL: guidellmSLOURL, TTFTMs: 200, TPOTMs: 50, Percentile: 99},
	{Name: "guidellm-rag", Source: "GuideLLM's SLO examples: retrieval-augmented generation", URL: guidellmSLOURL, TTFTMs: 300, TPOTMs: 100, E2EMs: 3000, Percentile: 99},
	{Name: "guidellm-content-generation", Source: "GuideLLM's SLO examples: content generation", URL: guidellmSLOURL, TTFTMs: 600, TPOTMs: 200, Percentile: 99},
	{Name: "guidellm-code-generation", Source: "GuideLLM's SLO examples: code generation", URL: guidellmSLOURL, TTFTMs: 500, TPOTMs: 150, Percentile: 99},
}

// SLOPresets lists the named SLO presets.
func SLOPresets() []SLOPreset { return slices.Clone(sloPresets) }

// SLOPresetNames are the presets' names.
func SLOPresetNames() []string {
	out := make([]string, len(sloPresets))
	for i, p := range sloPresets {
		out[i] = p.Name
	}
	return out
}

// FindSLOPreset is the preset of that name.
func FindSLOPreset(name string) (SLOPreset, bool) {
	for _, p := range sloPresets {
		if p.Name == name {
			return p, true
		}
	}
	return SLOPreset{}, false
}

// Limits are the preset's figures in words: "TTFT ≤ 200 ms, TPOT ≤ 50 ms at p99".
func (p SLOPreset) Limits() string {
	s := fmt.Sprintf("TTFT ≤ %g ms, TPOT ≤ %g ms", p.TTFTMs, p.TPOTMs)
	if p.E2EMs > 0 {
		s += fmt.Sprintf(", E2E ≤ %g ms", p.E2EMs)
	}
	return s + fmt.Sprintf(" at p%d", p.Percentile)
}

// Apply writes the preset's figures into slo (its completion rate is left as it is).
func (p SLOPreset) Apply(slo *SLO) {
	slo.Preset, slo.TTFTMs, slo.TPOTMs, slo.E2EMs, slo.Percentile = p.Name, p.TTFTMs, p.TPOTMs, p.E2EMs, p.Percentile
}

// presetProblem says what is wrong with the SLO's preset: unknown, or figures that are not
// the preset's ("" when it holds).
func (slo SLO) presetProblem() string {
	p, ok := FindSLOPreset(slo.Preset)
	if !ok {
		return fmt.Sprintf("%q: not a known preset (%s); drop it to state your own figures", slo.Preset, strings.Join(SLOPresetNames(), ", "))
	}
	if slo.TTFTMs != p.TTFTMs || slo.TPOTMs != p.TPOTMs || slo.E2EMs != p.E2EMs || slo.Percentile != p.Percentile {
		got := SLOPreset{TTFTMs: slo.TTFTMs, TPOTMs: slo.TPOTMs, E2EMs: slo.E2EMs, Percentile: slo.Percentile}
		return fmt.Sprintf("%q is %s (%s), but the plan's figures are %s: write the preset's figures, or drop the preset to state your own",
			p.Name, p.Limits(), p.Source, got.Limits())
	}
	return ""
}
