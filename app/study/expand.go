package study

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// LegPlan is one llama-bench invocation the study will run.
type LegPlan struct {
	ID     string   `json:"id"`     // stable, e.g. "tiny/d128" or "tiny#end"
	Models []string `json:"models"` // model IDs
	Depths []int    `json:"depths"`
	KV     KVType   `json:"kv"`
	// Args are llama-bench's arguments (without the binary): -m …, the axes, -o jsonl.
	Args []string `json:"args"`
	// ExpectedRows is how many result rows a complete run prints.
	ExpectedRows int `json:"expected_rows"`
	// Repeat is "start", "middle" or "end" for a repeatability copy of Of; "" otherwise.
	Repeat string `json:"repeat,omitempty"`
	Of     string `json:"of,omitempty"`
	// Conditions declared for this leg.
	Conditions []string `json:"conditions,omitempty"`
}

// Expand turns a validated plan into its legs, in run order. planDir resolves relative model
// paths. Repeatability copies of a leg are placed at the start, the middle and/or the end.
func Expand(p *Plan, planDir string) ([]LegPlan, error) {
	byID := map[string]Model{}
	for _, m := range p.Models {
		byID[m.ID] = m
	}
	kvs := p.Axes.KV
	var base []LegPlan
	for _, kv := range kvs {
		suffix := ""
		if len(kvs) > 1 {
			suffix = "/kv-" + kv.K + "-" + kv.V
		}
		switch p.Split {
		case SplitCombinedModel:
			var ids []string
			for _, m := range p.Models {
				ids = append(ids, m.ID)
			}
			base = append(base, p.leg("all"+suffix, ids, p.Axes.Depths, kv))
		case SplitPerDepth:
			for _, m := range p.Models {
				for _, d := range p.Axes.Depths {
					base = append(base, p.leg(fmt.Sprintf("%s/d%d%s", m.ID, d, suffix), []string{m.ID}, []int{d}, kv))
				}
			}
		default: // SplitCombined
			for _, m := range p.Models {
				base = append(base, p.leg(m.ID+suffix, []string{m.ID}, p.Axes.Depths, kv))
			}
		}
	}
	for i := range base {
		l := &base[i]
		var args []string
		for _, id := range l.Models {
			args = append(args, "-m", ResolvePath(planDir, byID[id].Path))
		}
		l.Args = append(args, l.Args...)
	}
	legs := base
	if r := p.Repeatability; r != nil {
		var src *LegPlan
		for i := range base {
			if base[i].ID == r.Leg {
				src = &base[i]
			}
		}
		if src == nil {
			return nil, fmt.Errorf("repeatability.leg %q is not a leg of this plan (legs: %s)", r.Leg, legIDs(base))
		}
		copyAt := func(at string) LegPlan {
			c := *src
			c.ID, c.Repeat, c.Of = src.ID+"#"+at, at, src.ID
			c.Args = append([]string(nil), src.Args...)
			return c
		}
		var out []LegPlan
		if has(r.At, "start") {
			out = append(out, copyAt("start"))
		}
		mid := len(base) / 2
		for i, l := range base {
			if i == mid && has(r.At, "middle") {
				out = append(out, copyAt("middle"))
			}
			out = append(out, l)
		}
		if has(r.At, "middle") && len(base) == 0 {
			out = append(out, copyAt("middle"))
		}
		if has(r.At, "end") {
			out = append(out, copyAt("end"))
		}
		legs = out
	}
	for i := range legs {
		for _, c := range p.Conditions {
			if len(c.Legs) == 0 || has(c.Legs, legs[i].ID) || (legs[i].Of != "" && has(c.Legs, legs[i].Of)) {
				legs[i].Conditions = append(legs[i].Conditions, c.Text)
			}
		}
	}
	return legs, nil
}

func (p *Plan) leg(id string, models []string, depths []int, kv KVType) LegPlan {
	a := p.Axes
	args := []string{
		"-p", joinInts(a.NPrompt), "-n", joinInts(a.NGen), "-d", joinInts(depths),
		"-r", strconv.Itoa(a.Reps), "-b", joinInts(a.Batch), "-ub", joinInts(a.Ubatch),
		"-fa", strings.Join(a.FlashAttn, ","), "-ctk", kv.K, "-ctv", kv.V, "-ngl", joinInts(a.NGL),
	}
	if len(a.Threads) > 0 {
		args = append(args, "-t", joinInts(a.Threads))
	}
	args = append(args, a.ExtraArgs...)
	args = append(args, "-o", "jsonl")
	tests := 0
	for _, n := range a.NPrompt {
		if n > 0 {
			tests++
		}
	}
	for _, n := range a.NGen {
		if n > 0 {
			tests++
		}
	}
	combos := len(a.Batch) * len(a.Ubatch) * len(a.FlashAttn) * len(a.NGL) * max(1, len(a.Threads))
	return LegPlan{ID: id, Models: models, Depths: append([]int(nil), depths...), KV: kv, Args: args,
		ExpectedRows: len(models) * len(depths) * tests * combos}
}

// ResolvePath makes a model path absolute against the plan's folder.
func ResolvePath(planDir, path string) string {
	if filepath.IsAbs(path) || planDir == "" {
		return path
	}
	return filepath.Join(planDir, path)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func has(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func legIDs(ls []LegPlan) string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ID
	}
	return strings.Join(ids, ", ")
}
