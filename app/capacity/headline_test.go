package capacity

import "testing"

func TestHeadline(t *testing.T) {
	p, c, rate := 4, 2, 45.25
	if got := Headline(&Report{Selected: []SelectedPoint{{Candidate: "medium", Slots: &p, Clients: &c, GenerationRate: &rate}}}); got != "medium: P4/C2 at 45.2 tok/s" {
		t.Errorf("headline %q", got)
	}
	if got := Headline(&Report{Selected: []SelectedPoint{{Candidate: "q4"}}}); got != "q4: no point passed every gate" {
		t.Errorf("nothing selected: %q", got)
	}
	if Headline(&Report{}) != "" {
		t.Errorf("no assembled result: want no headline")
	}
}
