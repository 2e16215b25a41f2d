package study

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sparkbench/runner/vocab"
)

// BuildDevices is what a build tells about its devices, for the checks that need the build
// (CheckDevices): the devices its llama-bench lists (--list-devices, run with the plan's
// env and rpc endpoints) and the backend libraries it loaded.
type BuildDevices struct {
	Devices  []vocab.Device
	Backends []string // e.g. "CPU (libggml-cpu-zen4.so)", "Vulkan (libggml-vulkan.so)"
	// Listed is false when the build could not be asked (then nothing is checked).
	Listed bool
}

// HasBackend reports whether a backend of that name (Vulkan, CUDA, RPC …) was loaded.
func (b BuildDevices) HasBackend(name string) bool {
	for _, x := range b.Backends {
		if strings.HasPrefix(x, name+" ") || x == name {
			return true
		}
	}
	return false
}

// Names lists the devices' names (Vulkan0, RPC0 …).
func (b BuildDevices) Names() []string {
	out := make([]string, len(b.Devices))
	for i, d := range b.Devices {
		out[i] = d.Name
	}
	return out
}

var (
	deviceNameRE  = regexp.MustCompile(`^[A-Za-z_]+[0-9]+$`)
	tensorSplitRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(/[0-9]+(\.[0-9]+)?)*$`)
	envNameOK     = map[string]bool{}
)

// SplitModes and LoadModes are the values axes.split_mode and axes.load_mode take (llama-bench's
// -sm and -lm), in the order the New study form offers them.
var (
	SplitModes = []string{"none", "layer", "row", "tensor"}
	LoadModes  = []string{"auto", "none", "mmap", "mlock", "mmap+mlock", "dio"}
)

func init() {
	for _, n := range DeviceEnvNames {
		envNameOK[n] = true
	}
}

// checkDevices checks the device axes and the build's env by their form (no build asked).
func (v *validator) checkDevices() {
	p, a := v.p, v.p.Axes
	for k, val := range p.Build.Env {
		if !envNameOK[k] {
			v.errf("build.env."+k, "not a device visibility variable; a plan may set %s", strings.Join(DeviceEnvNames, ", "))
		}
		if strings.ContainsAny(val, "\x00\n") {
			v.errf("build.env."+k, "the value holds a NUL or a line break")
		}
	}
	seen := map[string]bool{}
	for i, d := range a.Devices {
		at := fmt.Sprintf("axes.devices[%d]", i)
		if seen[d] {
			v.errf(at, "%q is listed twice: duplicate legs", d)
		}
		seen[d] = true
		if d == "none" || d == "auto" {
			continue
		}
		for _, name := range strings.Split(d, "/") {
			if !deviceNameRE.MatchString(name) {
				v.errf(at, "%q: want none, auto, or device names joined by / as llama-bench --list-devices prints them (Vulkan0, CUDA0/CUDA1, RPC0)", d)
				break
			}
		}
	}
	checkWords := func(name string, xs, allowed []string) {
		seen := map[string]bool{}
		for i, x := range xs {
			at := fmt.Sprintf("axes.%s[%d]", name, i)
			if !slices.Contains(allowed, x) {
				v.errf(at, "%q: want one of %s", x, strings.Join(allowed, ", "))
			}
			if seen[x] {
				v.errf(at, "%q is listed twice: duplicate legs", x)
			}
			seen[x] = true
		}
	}
	checkWords("split_mode", a.SplitMode, SplitModes)
	checkWords("load_mode", a.LoadMode, LoadModes)
	for i, ts := range a.TensorSplit {
		at := fmt.Sprintf("axes.tensor_split[%d]", i)
		if !tensorSplitRE.MatchString(ts) {
			v.errf(at, "%q: want one proportion per device joined by /, e.g. 3/1", ts)
			continue
		}
		n := strings.Count(ts, "/") + 1
		for _, d := range a.Devices {
			if d == "none" || d == "auto" {
				continue
			}
			if nd := strings.Count(d, "/") + 1; nd != n {
				v.errf(at, "%q has %d entries, and devices %q names %d devices: give one entry per device", ts, n, d, nd)
			}
		}
	}
	for i, n := range a.NCPUMoE {
		if n < 0 {
			v.errf(fmt.Sprintf("axes.n_cpu_moe[%d]", i), "%d is below the minimum 0", n)
		}
	}
	for i, ot := range a.OverrideTensors {
		at := fmt.Sprintf("axes.override_tensors[%d]", i)
		if _, preset := OverridePresets[ot]; preset {
			continue
		}
		for _, part := range strings.Split(ot, ";") {
			pat, buft, ok := strings.Cut(part, "=")
			if !ok || pat == "" || buft == "" {
				v.errf(at, "%q: want PATTERN=BUFFER_TYPE (several joined by ;), e.g. \\.ffn_.*_exps=CPU, or a preset (%s)", ot, presetNames())
				break
			}
			if _, err := regexp.Compile(pat); err != nil {
				v.errf(at, "%q: the pattern %q is not a regular expression: %v", ot, pat, err)
			}
		}
	}
	if len(a.NoKVOffload) == 2 && a.NoKVOffload[0] == a.NoKVOffload[1] || len(a.NoKVOffload) > 2 {
		v.errf("axes.no_kv_offload", "give false, true or both, each once")
	}
	for i, ep := range a.RPC {
		if _, err := ParseEndpoint(ep); err != nil {
			v.errf(fmt.Sprintf("axes.rpc[%d]", i), "%v", err)
		}
	}
	v.checkRPCServers()
}

func presetNames() string {
	var out []string
	for k := range OverridePresets {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// ParseEndpoint checks an RPC endpoint's form: host:port with a port in 1–65535.
func ParseEndpoint(ep string) (string, error) {
	host, port, err := net.SplitHostPort(ep)
	if err != nil || host == "" {
		return "", fmt.Errorf("%q: want HOST:PORT of a ggml-rpc-server, e.g. 127.0.0.1:50052", ep)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: the port must be 1 to 65535", ep)
	}
	return net.JoinHostPort(host, port), nil
}

// CheckDevices checks the plan's device axes against the build (b: its devices as listed
// with the plan's env and endpoints): every named device must exist; offload asked of a build
// that lists no device is a warning. A build that could not be asked checks nothing.
func CheckDevices(p *Plan, b BuildDevices) []Problem {
	if !b.Listed {
		return nil
	}
	var out []Problem
	errf := func(path, f string, a ...any) {
		out = append(out, Problem{Path: path, Severity: SevError, Msg: fmt.Sprintf(f, a...)})
	}
	names := b.Names()
	listed := strings.Join(names, ", ")
	if listed == "" {
		listed = "none"
	}
	for i, d := range p.Axes.Devices {
		if d == "none" || d == "auto" {
			continue
		}
		for _, name := range strings.Split(d, "/") {
			if slices.Contains(names, name) || rpcServerDevice(p, name) {
				continue
			}
			at := fmt.Sprintf("axes.devices[%d]", i)
			switch {
			case strings.HasPrefix(name, "Vulkan") && len(names) == 0 || strings.HasPrefix(name, "Vulkan") && !hasPrefixed(names, "Vulkan"):
				why := "the build has no Vulkan backend (libggml-vulkan.so): install one that has (scripts/install-llama.sh puts it in the default prefix when the host has libvulkan1)"
				if b.HasBackend("Vulkan") {
					why = "the Vulkan backend loaded but found no device: install the driver (apt-get install mesa-vulkan-drivers, or the GPU vendor's), and for a device of CPU type such as Mesa's llvmpipe set build.env GGML_VK_VISIBLE_DEVICES (e.g. \"0\"), which ggml needs to use one"
				}
				errf(at, "%s: no such device (the build lists %s); %s", name, listed, why)
			case strings.HasPrefix(name, "RPC") && len(p.Axes.RPC) == 0:
				errf(at, "%s: RPC devices come from axes.rpc endpoints, and the plan lists none (the build lists %s)", name, listed)
			default:
				errf(at, "%s: no such device; the build lists %s (llama-bench --list-devices with the plan's env)", name, listed)
			}
		}
	}
	if len(names) == 0 && len(p.RPCServers) == 0 { // a plan's servers give devices once they run
		for i, n := range p.Axes.NGL {
			if n != 0 && n != -1 {
				out = append(out, Problem{Path: fmt.Sprintf("axes.ngl[%d]", i), Severity: SevWarning,
					Msg: fmt.Sprintf("-ngl %d on a build that lists no device: every layer runs on the CPU, so this axis measures nothing new", n)})
			}
		}
	}
	return out
}

func hasPrefixed(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
