package study

import (
	"fmt"
	"slices"
	"strings"
)

// KVQuality is the quality check of one non-f16 KV cache type of a model: the KL divergence of
// the model's output with that cache type (llama-perplexity -ctk/-ctv) from the same model with
// an f16 cache, on the project's corpus, beside the speed it bought (tg of that cache type over
// tg of f16 at each depth both were measured at).
type KVQuality struct {
	Model    string        `json:"model"`
	KV       string        `json:"kv"` // K/V, e.g. q8_0/q8_0
	Leg      string        `json:"leg"`
	MeanKLD  float64       `json:"mean_kld"`
	P99KLD   float64       `json:"p99_kld"`
	SameTopP float64       `json:"same_top_p"` // a fraction
	Lines    []int         `json:"lines"`      // transcript lines of mean, p99, same top p
	Speed    []KVSpeedDiff `json:"speed"`
	// Gate is the plan's KV quality gate when it has one: "pass", or the failure code
	// kv:kld_mean_above_maximum; Max its limit.
	Gate string   `json:"gate,omitempty"`
	Max  *float64 `json:"kld_mean_max,omitempty"`
}

// GateKLDAboveMax is the failure code of a KV cache type above the plan's mean KLD limit.
const GateKLDAboveMax = "kv:kld_mean_above_maximum"

// KVGateOutcome is the KV quality gate's outcome for a mean KLD: "pass" at or below the
// limit, GateKLDAboveMax above it.
func KVGateOutcome(meanKLD float64, gate *KVQualityGate) string {
	if meanKLD > gate.KLDMeanMax {
		return GateKLDAboveMax
	}
	return "pass"
}

// KVLegPrefix starts the label of every leg of the KV cache quality check
// ("kv-quality/MODEL/f16 base", "kv-quality/MODEL/q8_0-q8_0").
const KVLegPrefix = "kv-quality/"

// KVSpeedDiff is a KV type's tg against f16's at one depth (Ratio: the KV type's over f16's).
type KVSpeedDiff struct {
	Test  string  `json:"test"`
	Depth int64   `json:"depth"`
	Ratio float64 `json:"ratio"`
}

// AttachKVQuality puts the KV cache checks in the report, each with the speed its cache type
// bought (for every tg cell of the model with that cache type, the ratio to the cell of the
// same model, test and depth whose configuration differs only by an f16 cache) and, when the
// plan has a KV quality gate, whether it passes.
func AttachKVQuality(rep *Report, checks []KVQuality, gate *KVQualityGate) {
	for _, q := range checks {
		if gate != nil {
			q.Gate, q.Max = KVGateOutcome(q.MeanKLD, gate), &gate.KLDMeanMax
		}
		word, f16 := "kv-"+q.KV, "kv-f16/f16"
		q.Speed = []KVSpeedDiff{}
		for _, c := range rep.Results {
			if c.Model != q.Model || !strings.HasPrefix(c.Test, "tg") || !slices.Contains(strings.Fields(c.Config), word) {
				continue
			}
			base := strings.Join(replaceWord(strings.Fields(c.Config), word, f16), " ")
			for _, b := range rep.Results {
				if b.Model == c.Model && b.Test == c.Test && b.Depth == c.Depth && b.Config == base && b.Mean > 0 {
					q.Speed = append(q.Speed, KVSpeedDiff{Test: c.Test, Depth: c.Depth, Ratio: c.Mean / b.Mean})
				}
			}
		}
		rep.KVQuality = append(rep.KVQuality, q)
	}
}

func replaceWord(words []string, from, to string) []string {
	out := slices.Clone(words)
	for i, w := range out {
		if w == from {
			out[i] = to
		}
	}
	return out
}

// EntryKVKLD is the journal entry of one KV cache quality check (KVCheck).
const EntryKVKLD = "kv.kld"

// KVCheck is one KV cache quality check as journaled: the model and cache type, the leg that
// measured it, the figures with their transcript lines, and the settings (ctx tokens per chunk,
// chunks of the project corpus).
type KVCheck struct {
	Study    int64   `json:"study"`
	Model    string  `json:"model"`
	KV       string  `json:"kv"`
	Leg      string  `json:"leg"`
	MeanKLD  float64 `json:"mean_kld"`
	P99KLD   float64 `json:"p99_kld"`
	SameTopP float64 `json:"same_top_p"`
	Lines    []int   `json:"lines"`
	Ctx      int     `json:"ctx"`
	Chunks   int     `json:"chunks"`
}

// LatestKVChecks keeps the last check of each model and cache type, in the order they came.
func LatestKVChecks(checks []KVCheck) []KVCheck {
	var out []KVCheck
	for _, c := range checks {
		out = slices.DeleteFunc(out, func(x KVCheck) bool { return x.Model == c.Model && x.KV == c.KV })
		out = append(out, c)
	}
	return out
}

// KVQualityOf are the checks as the report shows them (AttachKVQuality adds the speed).
func KVQualityOf(checks []KVCheck) []KVQuality {
	var out []KVQuality
	for _, e := range checks {
		out = append(out, KVQuality{Model: e.Model, KV: e.KV, Leg: e.Leg, MeanKLD: e.MeanKLD, P99KLD: e.P99KLD, SameTopP: e.SameTopP, Lines: e.Lines})
	}
	return out
}

// SpeedWords says the speed the cache type bought at each depth: "faster by 2.3% at d0"
// (none: nothing measured).
func (q KVQuality) SpeedWords() []string {
	var out []string
	for _, d := range q.Speed {
		out = append(out, fmt.Sprintf("%s at d%d", SpeedChange(d.Ratio), d.Depth))
	}
	return out
}

// SpeedChange says a speed ratio (new over old) in words: "faster by 2.3%", "slower by 4.0%".
func SpeedChange(ratio float64) string {
	word, pct := "faster", (ratio-1)*100
	if pct < 0 {
		word, pct = "slower", -pct
	}
	return fmt.Sprintf("%s by %.1f%%", word, pct)
}
