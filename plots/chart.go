package plots

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

	"sparkbench/runner/jsonlex"
)

// Meta says where the data comes from; every chart puts it under its title.
type Meta struct {
	Model   string `json:"model,omitempty"`   // e.g. "Qwen3-30B-A3B-Instruct-2507 Q4_K_M"
	Build   string `json:"build,omitempty"`   // e.g. "llama.cpp 067de937 Vulkan"
	Machine string `json:"machine,omitempty"` // e.g. "Radeon 8060S (RADV GFX1151), 128 GB"
}

func (m Meta) subtitle() string {
	var parts []string
	for _, s := range []string{m.Model, m.Build, m.Machine} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "  ·  ")
}

// metaNotes says which of model, build and machine the title lacks.
func (m Meta) notes(h *header) {
	var missing []string
	if strings.TrimSpace(m.Model) == "" {
		missing = append(missing, "model")
	}
	if strings.TrimSpace(m.Build) == "" {
		missing = append(missing, "build")
	}
	if strings.TrimSpace(m.Machine) == "" {
		missing = append(missing, "machine")
	}
	if len(missing) > 0 {
		h.note("title lacks the %s", joinAnd(missing))
	}
}

// Kind names a chart kind, as the CLI's --kind takes it.
type Kind string

const (
	KindDepth         Kind = "depth"
	KindSlots         Kind = "slots"
	KindLatency       Kind = "latency"
	KindEnvelope      Kind = "envelope"
	KindUbatch        Kind = "ubatch"
	KindRepeatability Kind = "repeatability"
)

// Kinds lists every chart kind in the order the CLI documents them.
func Kinds() []Kind {
	return []Kind{KindDepth, KindSlots, KindLatency, KindEnvelope, KindUbatch, KindRepeatability, KindNGL, KindPareto, KindKLDBits, KindEnergy, KindTimeline, KindServingLatency, KindServingGoodput, KindServingSearch}
}

// Chart is the input of one chart kind: plain data that builds a *plot.Plot. Values are
// treated as immutable snapshots: build one, hand it over, do not change it afterwards.
type Chart interface {
	Kind() Kind
	// Plot builds the figure. It returns an error only for invalid options; missing or odd
	// data is drawn as far as possible and described by Notes.
	Plot() (*plot.Plot, error)
	// LimitPoints returns a copy that downsamples (LTTB) every series longer than n points
	// when it is plotted; n <= 0 keeps every point. Charts whose series are short by nature
	// (envelope cells) return themselves.
	LimitPoints(n int) Chart
}

// New returns an empty chart input of the given kind, ready for json.Unmarshal.
func New(kind Kind) (Chart, error) {
	switch kind {
	case KindDepth:
		return &DepthChart{}, nil
	case KindSlots:
		return &SlotsChart{}, nil
	case KindLatency:
		return &LatencyChart{}, nil
	case KindEnvelope:
		return &EnvelopeChart{}, nil
	case KindUbatch:
		return &UbatchChart{}, nil
	case KindRepeatability:
		return &RepeatChart{}, nil
	case KindNGL:
		return &NGLChart{}, nil
	case KindPareto:
		return &ParetoChart{}, nil
	case KindKLDBits:
		return &KLDBitsChart{}, nil
	case KindEnergy:
		return &EnergyChart{}, nil
	case KindTimeline:
		return &TimelineChart{}, nil
	case KindServingLatency:
		return &ServingLatencyChart{}, nil
	case KindServingGoodput:
		return &ServingGoodputChart{}, nil
	case KindServingSearch:
		return &ServingSearchChart{}, nil
	}
	names := make([]string, 0, len(Kinds()))
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return nil, fmt.Errorf("unknown chart kind %q: use one of %s", string(kind), strings.Join(names, ", "))
}

// Decode reads the JSON input of a chart of the given kind (the format docs/plots.md
// describes). Unknown fields are an error, so a misspelt option is not silently ignored.
func Decode(kind Kind, r io.Reader) (Chart, error) {
	c, err := New(kind)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	switch e := jsonlex.DecodeStrict(data, c); {
	case e == nil:
	case e.Kind == jsonlex.StrictTrailing:
		return nil, fmt.Errorf("decode %s chart: more than one JSON value", kind)
	default:
		return nil, fmt.Errorf("decode %s chart: %w", kind, e.Err)
	}
	// Hand back the value, not the pointer, so the Chart is a snapshot.
	switch v := c.(type) {
	case *DepthChart:
		return *v, nil
	case *SlotsChart:
		return *v, nil
	case *LatencyChart:
		return *v, nil
	case *EnvelopeChart:
		return *v, nil
	case *UbatchChart:
		return *v, nil
	case *RepeatChart:
		return *v, nil
	case *ParetoChart:
		return *v, nil
	case *EnergyChart:
		return *v, nil
	case *TimelineChart:
		return *v, nil
	}
	return c, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fmtNum formats a measured value with up to 4 significant digits and no exponent.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case !finite(v):
		return "n/a"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// fmtTokens formats a token count the way llama.cpp users say it: 8192 is "8K", 1536 "1.5K".
func fmtTokens(d float64) string {
	if d == 0 {
		return "0"
	}
	if k := d / 1024; d >= 1024 && k == math.Round(k*2)/2 {
		return strconv.FormatFloat(k, 'f', -1, 64) + "K"
	}
	return strconv.FormatFloat(d, 'f', 0, 64)
}

// fmtThousands formats an interpolated depth in thousands of tokens: 7067.8 is "7.07K"
// (the unit the bench log uses for crossings).
func fmtThousands(d float64) string {
	if math.Abs(d) < 1000 {
		return strconv.FormatFloat(d, 'f', 0, 64)
	}
	return strconv.FormatFloat(d/1000, 'f', 2, 64) + "K"
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	case 2:
		return items[0] + " and " + items[1]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// listInts formats at most 6 values, e.g. "16K, 32K" or "1, 2, 4, … (9 in all)".
func listInts(vals []int, f func(int) string) string {
	vals = append([]int(nil), vals...)
	sort.Ints(vals)
	var parts []string
	for i, v := range vals {
		if i == 5 && len(vals) > 6 {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(vals)))
			break
		}
		parts = append(parts, f(v))
	}
	return strings.Join(parts, ", ")
}

func seriesLabel(label string, i int) string {
	if s := strings.TrimSpace(label); s != "" {
		return s
	}
	return fmt.Sprintf("series %d", i+1)
}

// markerStride returns k so that drawing every k-th marker shows at most about 40 markers
// on a series: a dense line keeps its identifying shape without a smear of glyphs.
func markerStride(n int) int { return max(1, (n+39)/40) }
