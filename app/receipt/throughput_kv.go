package receipt

import (
	"fmt"
	"strings"
)

// tmKVQuality writes each cheaper KV cache type's speed gain beside its KL divergence from an
// f16 cache (only when the study has the check).
func tmKVQuality(w *mdWriter, d *ThroughputStudy) {
	if len(d.KVQuality) == 0 {
		return
	}
	w.heading(2, "KV cache types: speed against quality")
	w.line("Each cache type other than f16, on the same model: its tg over f16's tg at each depth, beside the KL divergence of the model's output with that cache from the output with an f16 cache (llama-perplexity `-ctk/-ctv --kl-divergence` against f16 base logits, 8 chunks of 128 tokens of the project corpus).")
	w.blank()
	gated := d.KVQuality[0].Max != nil
	var rows [][]string
	for _, q := range d.KVQuality {
		speed := q.SpeedWords()
		if len(speed) == 0 {
			speed = []string{"not measured"}
		}
		var lines []string
		for _, l := range q.Lines {
			lines = append(lines, fmt.Sprint(l))
		}
		row := []string{cell(q.Model), cell(q.KV), strings.Join(speed, "; "), fmt.Sprintf("%.6f", q.MeanKLD),
			fmt.Sprintf("%.6f", q.P99KLD), fmt.Sprintf("%.2f%%", q.SameTopP*100), cell(fmt.Sprintf("%s (lines %s)", q.Leg, strings.Join(lines, ", ")))}
		if gated {
			row = append(row, cell(q.Gate))
		}
		rows = append(rows, row)
	}
	head := []string{"model", "KV (K/V)", "speed against f16", "mean KLD", "99% KLD", "same top p", "leg"}
	if gated {
		head = append(head, fmt.Sprintf("gate (mean KLD ≤ %g)", *d.KVQuality[0].Max))
	}
	w.table(head, "lllrrrll", rows)
}
