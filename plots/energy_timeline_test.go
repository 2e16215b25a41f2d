package plots

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// A timeline without readings still spans every leg's start and says what is missing; one
// with readings drops the non-finite ones and says so.
func TestTimelineEdges(t *testing.T) {
	p, err := Timeline(TimelineChart{Metric: "power", Unit: "W", Legs: []TimelineMark{{T: 0, Label: "a"}, {T: 2.5, Label: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Max < 2.5 || !slices.Contains(Notes(p), "no power readings") {
		t.Fatalf("x max %v, notes %q", p.X.Max, Notes(p))
	}
	p, err = Timeline(TimelineChart{Metric: "power", Unit: "W", Series: []TimelineSeries{{Label: "GPU0",
		Points: []TimePoint{{T: 0, Value: 90}, {T: 1, Value: math.NaN()}, {T: 2, Value: 110}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(Notes(p), "GPU0: 1 reading(s) not finite; not drawn") || p.Y.Max < 110 || p.Y.Label.Text != "power (W)" {
		t.Fatalf("notes %q, y max %v, label %q", Notes(p), p.Y.Max, p.Y.Label.Text)
	}
	if _, err := Render(p, MinWidthPx, MinHeightPx, 96); err != nil {
		t.Fatal(err)
	}
}

// Energy per token: a cell without a positive J per token is noted and left out; the title
// and axis name the token the metric counts.
func TestEnergyEdges(t *testing.T) {
	p, err := Energy(EnergyChart{Metric: "pp64", Series: []EnergySeries{{Label: "tiny",
		Points: []EnergyPoint{{Depth: 0, JPerToken: 0.01}, {Depth: 128, JPerToken: 0}, {Depth: 256, JPerToken: 0.02}}}}})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(Notes(p), "\n")
	if !strings.Contains(notes, "tiny: no positive J per token at d128; not drawn") || p.Y.Label.Text != "J per prompt token" ||
		p.Title.Text != "pp64: energy per prompt token vs KV depth" {
		t.Fatalf("notes %q, y %q, title %q", notes, p.Y.Label.Text, p.Title.Text)
	}
}
