package overview

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/runner/gguf"
)

// Ladder is the constants ladder: each model's tg at depth 0 as a share of its bandwidth
// ceiling (tensor-exact convention), grouped by architecture, quant (GGUF file type) and the
// backend the row ran on.
type Ladder struct {
	Test       string       `json:"test"`
	Convention string       `json:"convention"`
	Constants  []Constant   `json:"constants"`
	Unresolved []Unresolved `json:"unresolved"`
}

// Constant is one group's efficiency: over its members (one per model, test and configuration,
// from the same study and row as the badge table), n, the mean, the median and the spread.
type Constant struct {
	Architecture string   `json:"architecture"`
	Quant        string   `json:"quant"`
	Backend      string   `json:"backend"`
	N            int      `json:"n"`
	Models       int      `json:"models"`  // distinct model files (SHA-256)
	Studies      int      `json:"studies"` // distinct studies
	Mean         float64  `json:"mean"`
	Median       float64  `json:"median"`
	Min          float64  `json:"min"`
	Max          float64  `json:"max"`
	Members      []Member `json:"members"`
}

// Member is one model's efficiency with where each number came from.
type Member struct {
	Model        string  `json:"model"`
	File         string  `json:"file"`
	SHA256       string  `json:"sha256"`
	Test         string  `json:"test"`
	Config       string  `json:"config"`
	Study        int64   `json:"study"`
	Imported     bool    `json:"imported"`
	D0           Cell    `json:"d0"`
	BandwidthGBs float64 `json:"bandwidth_gbs"`
	ActiveBytes  float64 `json:"active_bytes_per_token"` // tensor-exact
	Ceiling      float64 `json:"ceiling_ts"`
	Efficiency   float64 `json:"efficiency"`
	// HouseEfficiency is the same tg over the house convention's ceiling (0: not computable).
	HouseEfficiency float64 `json:"house_efficiency"`
}

// BuildLadder computes the ladder of the series of test, with each model's header by SHA-256.
func BuildLadder(all []Series, test string, headers map[string]header) Ladder {
	chosen, _, unresolved := pick(all)
	l := Ladder{Test: test, Convention: Convention, Constants: []Constant{}, Unresolved: unresolved}
	if l.Unresolved == nil {
		l.Unresolved = []Unresolved{}
	}
	type gkey struct{ arch, quant, backend string }
	groups := map[gkey]*Constant{}
	for _, sr := range chosen {
		m, h, why := member(sr, headers[sr.SHA256])
		if why != "" {
			l.Unresolved = append(l.Unresolved, Unresolved{Model: sr.Model, File: sr.File, SHA256: sr.SHA256, Test: sr.Test, Study: sr.ID, Reason: why})
			continue
		}
		k := gkey{h.Architecture, quantOf(h), sr.Backend}
		if k.arch == "" {
			k.arch = "unknown"
		}
		c := groups[k]
		if c == nil {
			c = &Constant{Architecture: k.arch, Quant: k.quant, Backend: k.backend}
			groups[k] = c
		}
		c.Members = append(c.Members, m)
	}
	for _, c := range groups {
		summarize(c)
		l.Constants = append(l.Constants, *c)
	}
	sort.Slice(l.Constants, func(i, j int) bool {
		a, b := l.Constants[i], l.Constants[j]
		return Group{a.Architecture, a.Quant, a.Backend}.Compare(Group{b.Architecture, b.Quant, b.Backend}) < 0
	})
	return l
}

// Group is a constant's group: its architecture, quant and backend.
type Group struct{ Architecture, Quant, Backend string }

// Compare orders groups by architecture, then quant, then backend (the ladder's row order).
func (g Group) Compare(o Group) int {
	return cmp.Or(strings.Compare(g.Architecture, o.Architecture), strings.Compare(g.Quant, o.Quant), strings.Compare(g.Backend, o.Backend))
}

// member is a series' efficiency at depth 0, or why it has none.
func member(sr Series, h header) (Member, *gguf.File, string) {
	if h.file == nil {
		if h.err == "" {
			h.err = "its file was not read"
		}
		return Member{}, nil, "no ceiling: " + h.err
	}
	if !(sr.BandwidthGBs > 0) {
		return Member{}, nil, fmt.Sprintf("no ceiling: study %d has no memory bandwidth (enter bandwidth.gbs in its plan, or let the probe measure it with bandwidth.measure)", sr.ID)
	}
	d0 := sr.Points[0]
	bytes := float64(h.file.ActiveBytesPerToken())
	c, err := analysis.CeilingTPS(sr.BandwidthGBs, bytes)
	if err != nil {
		return Member{}, nil, "no ceiling: " + err.Error()
	}
	m := Member{Model: sr.Model, File: sr.File, SHA256: sr.SHA256, Test: sr.Test, Config: sr.Config, Study: sr.ID, Imported: sr.Imported,
		D0: d0, BandwidthGBs: sr.BandwidthGBs, ActiveBytes: bytes, Ceiling: c, Efficiency: d0.TS / c}
	if hc, err := analysis.CeilingTPS(sr.BandwidthGBs, h.file.HouseActiveBytesPerToken()); err == nil {
		m.HouseEfficiency = d0.TS / hc
	}
	return m, h.file, ""
}

// quantOf names a model's quant by its GGUF file type ("ALL_F32", "MOSTLY_Q4_K_M").
func quantOf(f *gguf.File) string {
	switch {
	case f.FileTypeName != "":
		return f.FileTypeName
	case f.FileType >= 0:
		return fmt.Sprintf("file type %d", f.FileType)
	}
	return "unknown"
}

func summarize(c *Constant) {
	sort.Slice(c.Members, func(i, j int) bool {
		a, b := c.Members[i], c.Members[j]
		if a.Efficiency != b.Efficiency {
			return a.Efficiency < b.Efficiency
		}
		if a.SHA256 != b.SHA256 {
			return a.SHA256 < b.SHA256
		}
		return a.Config < b.Config
	})
	shas, studies := map[string]bool{}, map[int64]bool{}
	xs := make([]float64, len(c.Members))
	sum := 0.0
	for i, m := range c.Members {
		xs[i] = m.Efficiency
		sum += m.Efficiency
		shas[m.SHA256], studies[m.Study] = true, true
	}
	c.N, c.Models, c.Studies = len(xs), len(shas), len(studies)
	c.Mean = sum / float64(len(xs))
	c.Min, c.Max = xs[0], xs[len(xs)-1]
	if n := len(xs); n%2 == 1 {
		c.Median = xs[n/2]
	} else {
		c.Median = (xs[n/2-1] + xs[n/2]) / 2
	}
}
