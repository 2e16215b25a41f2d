package capacity

import "fmt"

// Headline is a capacity study's figure in one line: its first candidate's selected point and
// generation rate, e.g. "medium: P4/C2 at 45.3 tok/s", or that nothing was selected. "" before
// an assembled result.
func Headline(r *Report) string {
	if r == nil || len(r.Selected) == 0 {
		return ""
	}
	p := r.Selected[0]
	if p.Slots == nil || p.Clients == nil {
		return p.Candidate + ": no point passed every gate"
	}
	s := fmt.Sprintf("%s: P%d/C%d", p.Candidate, *p.Slots, *p.Clients)
	if p.GenerationRate != nil {
		s += fmt.Sprintf(" at %.1f tok/s", *p.GenerationRate)
	}
	return s
}
