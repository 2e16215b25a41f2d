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
	// Device is the leg's devices value (-dev) when the plan sweeps devices; "" otherwise.
	Device string `json:"device,omitempty"`
	// Env are the plan's device visibility variables (KEY=VALUE), given to llama-bench.
	Env []string `json:"env,omitempty"`
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
	devs := p.Axes.Devices
	if len(devs) == 0 {
		devs = []string{""}
	}
	var base []LegPlan
	for _, kv := range kvs {
		for _, dev := range devs {
			suffix := ""
			if len(kvs) > 1 {
				suffix = "/kv-" + kv.K + "-" + kv.V
			}
			if len(devs) > 1 {
				suffix += "/dev-" + DeviceLegName(dev)
			}
			add := func(id string, models []string, depths []int) {
				base = append(base, p.leg(id, models, depths, kv, dev))
			}
			switch p.Split {
			case SplitCombinedModel:
				var ids []string
				for _, m := range p.Models {
					ids = append(ids, m.ID)
				}
				add("all"+suffix, ids, p.Axes.Depths)
			case SplitPerDepth:
				for _, m := range p.Models {
					for _, d := range p.Axes.Depths {
						add(fmt.Sprintf("%s/d%d%s", m.ID, d, suffix), []string{m.ID}, []int{d})
					}
				}
			default: // SplitCombined
				for _, m := range p.Models {
					add(m.ID+suffix, []string{m.ID}, p.Axes.Depths)
				}
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

func (p *Plan) leg(id string, models []string, depths []int, kv KVType, dev string) LegPlan {
	a := p.Axes
	reps := a.Reps
	if p.Adaptive != nil {
		reps = p.Adaptive.MinReps // the first chunk; the engine sets each chunk's -r
	}
	args := []string{
		"-p", joinInts(a.NPrompt), "-n", joinInts(a.NGen), "-d", joinInts(depths),
		"-r", strconv.Itoa(reps), "-b", joinInts(a.Batch), "-ub", joinInts(a.Ubatch),
		"-fa", strings.Join(a.FlashAttn, ","), "-ctk", kv.K, "-ctv", kv.V, "-ngl", joinInts(a.NGL),
	}
	if len(a.Threads) > 0 {
		args = append(args, "-t", joinInts(a.Threads))
	}
	combos := len(a.Batch) * len(a.Ubatch) * len(a.FlashAttn) * len(a.NGL) * max(1, len(a.Threads))
	a.RPC = p.RPCEndpoints()
	args, combos = a.deviceArgs(args, combos, dev)
	if len(p.RPCServers) > 0 {
		args = append(args, "-v") // the log then names each RPC device, its layers and buffers
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
	return LegPlan{ID: id, Models: models, Depths: append([]int(nil), depths...), KV: kv, Device: dev,
		Env: p.Build.EnvList(), Args: args, ExpectedRows: len(models) * len(depths) * tests * combos}
}

// deviceArgs appends the device axes' flags (only those the plan sets) and multiplies combos by
// the configurations they add; dev is the leg's devices value ("" when the plan has none).
func (a Axes) deviceArgs(args []string, combos int, dev string) ([]string, int) {
	if len(a.RPC) > 0 {
		args = append(args, "--rpc", strings.Join(a.RPC, ","))
	}
	if dev != "" {
		args = append(args, "-dev", dev)
	}
	if len(a.SplitMode) > 0 {
		args = append(args, "-sm", strings.Join(a.SplitMode, ","))
		combos *= len(a.SplitMode)
	}
	if len(a.TensorSplit) > 0 {
		args = append(args, "-ts", strings.Join(a.TensorSplit, ","))
		combos *= len(a.TensorSplit)
	}
	if len(a.NCPUMoE) > 0 {
		args = append(args, "-ncmoe", joinInts(a.NCPUMoE))
		combos *= len(a.NCPUMoE)
	}
	// one -ot per value: a pattern may hold commas, which llama-bench would split on
	for _, ot := range a.OverrideTensors {
		args = append(args, "-ot", OverrideArg(ot))
	}
	combos *= max(1, len(a.OverrideTensors))
	if len(a.NoKVOffload) > 0 {
		v := make([]string, len(a.NoKVOffload))
		for i, b := range a.NoKVOffload {
			v[i] = map[bool]string{false: "0", true: "1"}[b]
		}
		args = append(args, "-nkvo", strings.Join(v, ","))
		combos *= len(a.NoKVOffload)
	}
	if len(a.LoadMode) > 0 {
		args = append(args, "-lm", strings.Join(a.LoadMode, ","))
		combos *= len(a.LoadMode)
	}
	return args, combos
}

// DeviceLegName is a devices value as it appears in a leg ID: "Vulkan0/Vulkan1" → "Vulkan0+Vulkan1".
func DeviceLegName(dev string) string {
	r := strings.NewReplacer("/", "+", "[", "", "]", "", ":", "-")
	return r.Replace(dev)
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
