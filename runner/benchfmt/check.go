package benchfmt

import (
	"fmt"
	"math"
	"strings"
)

// RequiredFields are what makes a row a llama-bench result: the test's shape (n_prompt,
// n_gen) and its measured rate (avg_ts).
var RequiredFields = []Field{FNPrompt, FNGen, FAvgTs}

// Check refuses a row that is not a llama-bench result: one that lacks a field that
// identifies it (RequiredFields), whose rates are not finite and > 0 (avg_ts, each of
// samples_ts; stddev_ts >= 0), or whose token counts or times are negative (n_prompt, n_gen,
// n_depth; avg_ns, stddev_ns, samples_ns). llama-bench never writes such a row; both a live
// leg (runner) and an import (store) refuse them with this message.
func (r *Result) Check() error {
	var missing []string
	for _, f := range RequiredFields {
		if !r.Known.Has(f) {
			missing = append(missing, f.Name())
		}
	}
	if missing != nil {
		return fmt.Errorf("not a llama-bench result: no %s", strings.Join(missing, ", "))
	}
	for _, c := range []struct {
		f Field
		v int64
	}{{FNPrompt, r.NPrompt}, {FNGen, r.NGen}, {FNDepth, r.NDepth}} {
		if r.Known.Has(c.f) && c.v < 0 {
			return fmt.Errorf("%s is %d: a token count cannot be negative", c.f.Name(), c.v)
		}
	}
	if r.NPrompt == 0 && r.NGen == 0 {
		return fmt.Errorf("n_prompt and n_gen are both 0: not a test llama-bench runs")
	}
	if !(r.AvgTs > 0) || math.IsInf(r.AvgTs, 0) {
		return fmt.Errorf("avg_ts is %v: a rate must be a number > 0 tokens/s", r.AvgTs)
	}
	if r.Known.Has(FStddevTs) && (!(r.StddevTs >= 0) || math.IsInf(r.StddevTs, 0)) {
		return fmt.Errorf("stddev_ts is %v: a standard deviation must be a number >= 0", r.StddevTs)
	}
	for i, v := range r.SamplesTs {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("samples_ts[%d] is %v: a rate must be a number > 0 tokens/s", i, v)
		}
	}
	for _, c := range []struct {
		f Field
		v int64
	}{{FAvgNs, r.AvgNs}, {FStddevNs, r.StddevNs}} {
		if r.Known.Has(c.f) && c.v < 0 {
			return fmt.Errorf("%s is %d: a time cannot be negative", c.f.Name(), c.v)
		}
	}
	for i, v := range r.SamplesNs {
		if v < 0 {
			return fmt.Errorf("samples_ns[%d] is %d: a time cannot be negative", i, v)
		}
	}
	return nil
}
