package benchfmt

import (
	"encoding/json"
	"strconv"
	"strings"
)

// A llama-bench fork (ggml-org/llama.cpp PR #12874, build 5099, never merged) replaced avg_ns,
// stddev_ns, avg_ts and stddev_ts by a prompt and a generation set: avg_prompt_ns,
// stddev_prompt_ns, avg_prompt_ts, stddev_prompt_ts and the same with _gen_. A pp test's rate
// is its prompt set, a tg test's its generation set (the other set holds noise: a few ns, 0
// t/s). foldSplitRates fills the standard fields from the set that measured the test; the fork's
// columns stay in Extra as they were. A pp+tg test has no single rate in that schema and is
// left without avg_ts (refused by Check).

var splitRateSets = map[Kind][4]string{
	KindPP: {"avg_prompt_ns", "stddev_prompt_ns", "avg_prompt_ts", "stddev_prompt_ts"},
	KindTG: {"avg_gen_ns", "stddev_gen_ns", "avg_gen_ts", "stddev_gen_ts"},
}

func foldSplitRates(r *Result) {
	if r.Known.Has(FAvgTs) || r.Known.Has(FAvgNs) || r.Extra == nil {
		return
	}
	set, ok := splitRateSets[r.Kind()]
	if !ok {
		return
	}
	ts, ok := extraNumber(r.Extra, set[2])
	if !ok {
		return
	}
	r.setFloat(FAvgTs, ts)
	if v, ok := extraNumber(r.Extra, set[3]); ok {
		r.setFloat(FStddevTs, v)
	}
	if v, ok := extraNumber(r.Extra, set[0]); ok && v == float64(int64(v)) {
		r.setInt(FAvgNs, int64(v))
	}
	if v, ok := extraNumber(r.Extra, set[1]); ok && v == float64(int64(v)) {
		r.setInt(FStddevNs, int64(v))
	}
}

// extraNumber reads an Extra value that is a JSON number or a string holding one (csv, sql).
func extraNumber(extra map[string]json.RawMessage, k string) (float64, bool) {
	raw, ok := extra[k]
	if !ok {
		return 0, false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		s = string(raw)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v, err == nil
}
