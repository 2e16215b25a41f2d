package receipt

import (
	"fmt"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// capKVQuality writes each KV arm's speed change against the f16 candidate on its model beside
// the KL divergence of its cache type from an f16 cache, as the journal excerpt holds it (only
// for a plan with KV arms and a bundle written from the notebook).
func capKVQuality(w *mdWriter, cb *capacityBundle, r *capacity.Result) {
	if cb.journal == nil || len(capacity.KVArms(r.Plan)) == 0 {
		return
	}
	qs, pending := capacity.KVQualityOf(r.Plan, r, cb.journal.kv)
	w.heading(2, "KV cache types: speed against quality")
	method := "llama-perplexity `-ctk/-ctv --kl-divergence` against f16 base logits on the project corpus"
	if len(qs) > 0 {
		method = fmt.Sprintf("llama-perplexity `-ctk/-ctv --kl-divergence` against f16 base logits, %d chunks of %d tokens of the project corpus", qs[0].Chunks, qs[0].Ctx)
	}
	w.line("Each candidate whose KV cache type is not f16, against the f16 candidate on the same model: the change of its selected point's generation rate and of its per-stream rate at the base point, beside the KL divergence of the model's output with that cache from the output with an f16 cache (%s), as journaled after the cells.", method)
	w.blank()
	gated := r.Plan.KVQuality != nil
	var rows [][]string
	for _, q := range qs {
		var lines []string
		for _, l := range q.Lines {
			lines = append(lines, fmt.Sprint(l))
		}
		base := cell(q.Base)
		if q.FlagsDiffer {
			base += " (other flags differ)"
		}
		row := []string{cell(q.Candidate), cell(q.KV), base, cell(q.SpeedWords()), fmt.Sprintf("%.6f", q.MeanKLD), fmt.Sprintf("%.6f", q.P99KLD),
			fmt.Sprintf("%.2f%%", q.SameTopP*100), cell(fmt.Sprintf("%s (lines %s)", q.Leg, strings.Join(lines, ", "))),
			code(fmt.Sprintf("entry %d", cb.journal.kvSeq[q.Model+"\x00"+q.KV]))}
		if gated {
			row = append(row, cell(q.Gate))
		}
		rows = append(rows, row)
	}
	head := []string{"Candidate", "KV (K/V)", "f16 candidate", "Speed against f16", "Mean KLD", "99% KLD", "Same top p", "Leg", "Journal"}
	align := "llllrrrll"
	if gated {
		head, align = append(head, fmt.Sprintf("Gate (mean KLD ≤ %g)", r.Plan.KVQuality.KLDMeanMax)), align+"l"
	}
	if len(rows) > 0 {
		w.table(head, align, rows)
	}
	for _, a := range pending {
		w.line("%s (%s KV): its KL divergence was not checked (no %s entry in the journal excerpt).", code(a.Candidate), code(a.KVName()), code(study.EntryKVKLD))
		w.blank()
	}
}
