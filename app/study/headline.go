package study

import (
	"fmt"
	"strings"
)

// Headline is a throughput study's figure in one line, as a notification or a list shows it:
// the first model's generation rate at its smallest depth (else its first result), e.g.
// "tiny tg32 at d0: 20460 t/s". "" when the study has no result yet.
func Headline(r *Report) string {
	if r == nil || len(r.Results) == 0 {
		return ""
	}
	best := -1
	for i, c := range r.Results {
		if c.Model != r.Results[0].Model || !strings.HasPrefix(c.Test, "tg") {
			continue
		}
		if best < 0 || c.Depth < r.Results[best].Depth {
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	c := r.Results[best] // its configuration is left out: the headline is a figure, not an argv
	return fmt.Sprintf("%s %s at d%d: %s t/s", c.Model, c.Test, c.Depth, headlineNumber(c.Mean))
}

func headlineNumber(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}
