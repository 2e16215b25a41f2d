package llamacpp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// FitTool is llama.cpp's fitting tool (llama.cpp-tools-extra): it loads nothing but the
// model's metadata and prints the arguments (-c N -ngl N) that fit the devices' free memory
// less a margin.
const FitTool = "llama-fit-params"

// FitParamsTool returns the path of llama-fit-params beside the folder's tools, or a
// *LocateError naming the installer.
func FitParamsTool(loc Location) (string, error) { return ToolIn(loc, FitTool) }

// ToolIn is the executable name in the located folder, or a *LocateError naming the
// installer (every tool beside llama-bench is found this way).
func ToolIn(loc Location, name string) (string, error) {
	p := filepath.Join(loc.Dir, name)
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", &LocateError{Dir: loc.Dir, Source: loc.Source, Reason: "has no executable " + name,
			Fix: "install a prefix that includes it with: " + InstallCommand + ", or pass --llama-dir with a llama.cpp build's binaries folder that has it"}
	}
	return p, nil
}

// Fit is what llama-fit-params found: the largest -ngl whose layers, KV cache and compute
// buffers fit the devices at a context size (NGL -1: every layer fits).
type Fit struct {
	NGL  int      `json:"ngl"`
	Ctx  int      `json:"ctx"`
	Args []string `json:"args"` // the fitted arguments as the tool printed them
}

var fitArgRE = regexp.MustCompile(`(?m)^(-c \d+.*-ngl -?\d+.*)$`)

// FitParams runs llama-fit-params on a model with env (device visibility variables), a
// margin of marginMiB left free on every device and context size ctxSize (0: the tool's
// default), bounded by MetaTimeout, and reads the fitted -ngl.
func FitParams(ctx context.Context, tool, model string, env []string, marginMiB, ctxSize int) (Fit, error) {
	args := []string{"-m", model, "-fitt", strconv.Itoa(marginMiB)}
	if ctxSize > 0 {
		args = append(args, "-c", strconv.Itoa(ctxSize))
	}
	out, err := RunMetaEnv(ctx, MetaTimeout, env, tool, args...)
	if err != nil {
		return Fit{}, fmt.Errorf("%s: %w", FitTool, err)
	}
	m := fitArgRE.FindAllString(out, -1)
	if len(m) == 0 {
		return Fit{}, fmt.Errorf("%s printed no fitted arguments (want a line such as \"-c 4096 -ngl 12\"): %s", FitTool, lastLines(out, 3))
	}
	f := Fit{Args: strings.Fields(m[len(m)-1])}
	for i := 0; i+1 < len(f.Args); i++ {
		n, err := strconv.Atoi(f.Args[i+1])
		switch {
		case err != nil:
		case f.Args[i] == "-ngl":
			f.NGL = n
		case f.Args[i] == "-c":
			f.Ctx = n
		}
	}
	return f, nil
}

// Projection is the memory llama-fit-params projects a model to use at a context size: MiB
// of device memory (Of "device": the layers it put on a GPU or other device) or of host
// memory (Of "host": a CPU-only build), as its log line says (Line, kept verbatim).
type Projection struct {
	MiB  int    `json:"mib"`
	Of   string `json:"of"`
	Line string `json:"line"`
}

var projectedRE = regexp.MustCompile(`projected to use (\d+) MiB of (device|host) memory`)

// ProjectMemory runs llama-fit-params -v on a model at context size ctxSize with env (device
// visibility variables) and extra arguments (e.g. -ctk q8_0 -ctv q8_0), bounded by
// MetaTimeout, and reads its memory projection. It loads the model's metadata only.
func ProjectMemory(ctx context.Context, tool, model string, env []string, ctxSize int, extra ...string) (Projection, error) {
	out, err := RunMetaEnv(ctx, MetaTimeout, env, tool, append([]string{"-m", model, "-c", strconv.Itoa(ctxSize), "-v"}, extra...)...)
	if err != nil {
		return Projection{}, fmt.Errorf("%s: %w", FitTool, err)
	}
	for _, ln := range strings.Split(out, "\n") {
		if m := projectedRE.FindStringSubmatch(ln); m != nil {
			n, _ := strconv.Atoi(m[1])
			return Projection{MiB: n, Of: m[2], Line: strings.TrimSpace(ln)}, nil
		}
	}
	return Projection{}, fmt.Errorf("%s printed no memory projection (want a line \"projected to use N MiB of device memory\"): %s", FitTool, lastLines(out, 3))
}
