package capacity

import (
	"math"
	"slices"
	"sort"

	"sparkbench/app/analysis"
)

// CellMetrics computes one cell's figures in one pass from its measured requests (warmups
// must already be left out). Records are ordered by seq first, so sums and means are
// computed in the same order whatever the file order: the result is bit-for-bit stable.
//
//   - generation rate = generated tokens of all measured requests (the server's
//     tokens_predicted, failed requests included) / (last measured end - first measured send);
//   - per-stream rate = mean over completed requests of 1000 / ITL, ITL = (end - first token)
//     / (tokens - 1);
//   - TTFT and E2E percentiles (numpy linear) over completed requests;
//   - completion rate = completed / attempted (completed: HTTP 200, no error, tokens == n_predict).
func CellMetrics(pass string, measured []RequestRecord, nPredict int) PassMetrics {
	recs := append([]RequestRecord(nil), measured...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	m := PassMetrics{Pass: pass, Attempted: len(recs)}
	if len(recs) == 0 {
		return m
	}
	first, last := math.Inf(1), math.Inf(-1)
	var ttft, e2e, perStream, server, overhead []float64
	for _, r := range recs {
		m.GeneratedTokens += r.Tokens
		first = min(first, r.SendMs)
		last = max(last, r.EndMs)
		if !r.Completed(nPredict) {
			continue
		}
		m.Completed++
		if t, ok := r.TTFTMs(); ok {
			ttft = append(ttft, t)
		}
		e2e = append(e2e, r.E2EMs())
		if itl, ok := r.ITLMs(); ok && itl > 0 {
			perStream = append(perStream, 1000/itl)
		}
		if t := r.Timings; t != nil {
			if t.PredictedN > 0 && t.PredictedMs > 0 {
				server = append(server, float64(t.PredictedN)/t.PredictedMs*1000)
			}
			overhead = append(overhead, r.E2EMs()-(t.PromptMs+t.PredictedMs))
		}
	}
	m.CompletionRate = float64(m.Completed) / float64(m.Attempted)
	m.WindowMs = last - first
	if m.WindowMs > 0 {
		m.GenerationRate = fptr(float64(m.GeneratedTokens) / m.WindowMs * 1000)
	}
	m.PerStreamRate = mean(perStream)
	m.TTFTMsP50, m.TTFTMsP95 = pct(ttft, 50), pct(ttft, 95)
	m.E2EMsP50, m.E2EMsP95 = pct(e2e, 50), pct(e2e, 95)
	m.ServerPerStreamRate = mean(server)
	m.OverheadMsP50 = pct(overhead, 50)
	return m
}

func fptr(v float64) *float64 { return &v }

func mean(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return fptr(s / float64(len(xs)))
}

func pct(xs []float64, p float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	v := percentile(xs, p)
	return &v
}

// percentile is analysis.Percentile (numpy's linear interpolation, FMA-proof) for a
// non-empty slice.
func percentile(xs []float64, p float64) float64 {
	v, _ := analysis.Percentile(xs, p)
	return v
}

// medianOf is the median of the known values (nil when none is known).
func medianOf(xs []*float64) *float64 {
	var vs []float64
	for _, x := range xs {
		if x != nil {
			vs = append(vs, *x)
		}
	}
	return pct(vs, 50)
}

// spreadOf is (max - min) / median over passes; nil when a pass lacks the value or the
// median is not positive (the spread gate then fails: stability was not shown).
func spreadOf(xs []*float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	vs := make([]float64, 0, len(xs))
	for _, x := range xs {
		if x == nil {
			return nil
		}
		vs = append(vs, *x)
	}
	med := percentile(vs, 50)
	if !(med > 0) {
		return nil
	}
	return fptr((slices.Max(vs) - slices.Min(vs)) / med)
}
