package energy

import (
	"time"

	"sparkbench/runner/benchfmt"
)

// RowsFrom turns a leg's llama-bench rows (in their order, seq 0 first) and the row marks into
// the rows the split reads. A row without a mark, or without repetitions, is left out.
func RowsFrom(results []benchfmt.Result, marks map[int]time.Duration) []Row {
	var out []Row
	for i := range results {
		r := &results[i]
		at, ok := marks[i]
		if !ok || len(r.SamplesNs) == 0 {
			continue
		}
		var ns int64
		for _, x := range r.SamplesNs {
			ns += x
		}
		out = append(out, Row{Seq: i, Test: r.TestName(), Kind: string(r.Kind()), Tokens: int(r.NPrompt + r.NGen),
			Reps: len(r.SamplesNs), TestNs: ns, At: at})
	}
	return out
}
