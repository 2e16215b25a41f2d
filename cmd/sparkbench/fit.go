package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamacpp"
)

const fitUsage = "fit MODEL [--margin MIB] [--ctx N] [--env KEY=VALUE]… [--llama-dir D] [--json]"

// fitReport is `fit --json`.
type fitReport struct {
	Model     string   `json:"model"`
	MarginMiB int      `json:"margin_mib"`
	Env       []string `json:"env"`
	llamacpp.Fit
	Layers int   `json:"layers"` // the model's block count (0: unknown)
	Sweep  []int `json:"sweep"`  // an ngl sweep up to the largest fitting value
}

// cmdFit: the largest -ngl that fits the devices (llama-fit-params), and an ngl sweep up to it
// for a plan's axes.ngl.
func cmdFit(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("fit", stderr)
	margin := fs.Int("margin", 1024, "MiB to leave free on every device")
	ctxSize := fs.Int("ctx", 0, "context size the fit must hold (0: the tool's default, 4096)")
	llamaDir := fs.String("llama-dir", "", "llama.cpp binaries folder")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	var env []string
	fs.Func("env", "a device visibility variable, e.g. GGML_VK_VISIBLE_DEVICES=0 (repeatable)", func(v string) error {
		k, _, ok := strings.Cut(v, "=")
		if !ok || !slices.Contains(study.DeviceEnvNames, k) {
			return fmt.Errorf("%q: want KEY=VALUE with KEY one of %s", v, strings.Join(study.DeviceEnvNames, ", "))
		}
		env = append(env, v)
		return nil
	})
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench fit: want exactly one GGUF model, got %d arguments (usage: sparkbench %s)\n", len(pos), fitUsage)
		return 2
	}
	if *margin < 0 || *ctxSize < 0 {
		fprintf(stderr, "sparkbench fit: --margin and --ctx must be 0 or more\n")
		return 2
	}
	if _, err := gguf.ReadFile(pos[0]); err != nil {
		fprintf(stderr, "sparkbench fit: %v\n", err)
		return 2
	}
	loc, err := llamacpp.Locate(*llamaDir)
	if err != nil {
		fprintf(stderr, "sparkbench fit: %v\n", err)
		return 2
	}
	tool, err := llamacpp.FitParamsTool(loc)
	if err != nil {
		fprintf(stderr, "sparkbench fit: %v\n", err)
		return 2
	}
	layers := modelLayers(pos[0])
	f, err := llamacpp.FitParams(context.Background(), tool, pos[0], env, *margin, *ctxSize)
	if err != nil {
		fprintf(stderr, "sparkbench fit: %s: %v\n", pos[0], err)
		return 1
	}
	rep := fitReport{Model: pos[0], MarginMiB: *margin, Env: env, Fit: f, Layers: layers, Sweep: fitSweep(f.NGL, layers)}
	if rep.Env == nil {
		rep.Env = []string{}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return 1
		}
		return 0
	}
	what := fmt.Sprintf("-ngl %d", f.NGL)
	if f.NGL < 0 {
		what = "every layer (-ngl -1)"
	}
	fprintf(stdout, "%s: %s fits at -c %d with %d MiB left free on every device (%s)\n", pos[0], what, f.Ctx, *margin, strings.Join(f.Args, " "))
	fprintf(stdout, "ngl sweep up to it, for a plan's axes.ngl: %s\n", joinIntsComma(rep.Sweep))
	return 0
}

func joinIntsComma(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// modelLayers is the model's block count from its GGUF header (0 when it cannot be read).
func modelLayers(path string) int {
	f, err := gguf.ReadFile(path)
	if err != nil {
		return 0
	}
	return int(f.BlockCount)
}

// fitSweep is an ngl sweep from 0 to the largest fitting value (every layer when the tool says
// -1 and the model's layer count is known): five points at most, evenly spread, the fitting
// value last.
func fitSweep(fit, layers int) []int {
	top := fit
	if top < 0 {
		if layers <= 0 {
			return []int{0, -1}
		}
		top = layers
	}
	if top <= 4 {
		out := make([]int, top+1)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := []int{}
	for i := 0; i <= 4; i++ {
		v := top * i / 4
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}
