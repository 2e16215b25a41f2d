package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"sparkbench/runner/capout"
	"sparkbench/runner/llamacpp"
)

// Fingerprint is what a leg ran on: the llama.cpp build (version line, build number, commit,
// the binary's SHA-256, devices and backends from --list-devices), the machine, and hwmon
// temperatures before and after the leg. What could not be read is listed in Errors; no
// temperature sensor is recorded as an empty list, not as an error.
type Fingerprint struct {
	VersionLine string          `json:"version_line"`
	Version     string          `json:"version"`
	BuildNumber int             `json:"build_number"`
	Commit      string          `json:"commit"`
	Binary      llamacpp.Binary `json:"binary"`
	// Libraries are the llama.cpp libraries the tool ran with (libllama, libggml*, the loaded
	// backends), hashed: the tool's own few KiB do not identify a build.
	Libraries   []llamacpp.Binary `json:"libraries,omitempty"`
	Devices     []llamacpp.Device `json:"devices"`
	Backends    []string          `json:"backends"`
	Machine     Machine           `json:"machine"`
	TempsBefore []Temp            `json:"temps_before"`
	TempsAfter  []Temp            `json:"temps_after"`
	Errors      []string          `json:"errors,omitempty"`
	TakenAt     time.Time         `json:"taken_at"`
}

// Temp is one hwmon temperature sensor.
type Temp struct {
	Chip    string  `json:"chip"`            // hwmon name, e.g. k10temp, coretemp, amdgpu
	Sensor  string  `json:"sensor"`          // temp1
	Label   string  `json:"label,omitempty"` // e.g. Tctl, Package id 0
	Celsius float64 `json:"celsius"`
}

// Fingerprinter takes fingerprints and caches the build part per binary (path, size, mtime),
// so a queue runs --version and --list-devices once per build, not once per leg.
type Fingerprinter struct {
	mu    sync.Mutex
	cache map[string]Fingerprint
	// HwmonRoot is where hwmon lives (default /sys/class/hwmon); tests point it elsewhere.
	HwmonRoot string
	// ProcRoot is where /proc lives (default /proc).
	ProcRoot string
}

// Take fingerprints the llama-bench binary at bench and the machine, with TempsBefore read now.
// It runs the binary twice through the pty driver, with the leg's environment extras (device
// visibility variables change --list-devices), each bounded by llamacpp.MetaTimeout, unless
// cached.
func (f *Fingerprinter) Take(ctx context.Context, bench string, env []string) *Fingerprint {
	fp := &Fingerprint{TakenAt: time.Now()}
	key := binKey(bench)
	if key != "" {
		key += "|" + strings.Join(env, "\x00")
	}
	f.mu.Lock()
	cached, ok := f.cache[key]
	f.mu.Unlock()
	if ok && key != "" {
		*fp = cached
		fp.Errors = append([]string(nil), cached.Errors...)
		fp.TakenAt = time.Now()
	} else {
		f.build(ctx, bench, env, fp)
		if key != "" && len(fp.Errors) == 0 {
			f.mu.Lock()
			if f.cache == nil {
				f.cache = map[string]Fingerprint{}
			}
			f.cache[key] = *fp
			f.mu.Unlock()
		}
	}
	fp.Machine = f.machine(fp)
	fp.TempsBefore = f.Temps()
	return fp
}

// After records the temperatures after the leg.
func (f *Fingerprinter) After(fp *Fingerprint) {
	if fp != nil {
		fp.TempsAfter = f.Temps()
	}
}

func binKey(p string) string {
	st, err := os.Stat(p)
	if err != nil {
		return ""
	}
	return p + "|" + strconv.FormatInt(st.Size(), 10) + "|" + strconv.FormatInt(st.ModTime().UnixNano(), 10)
}

// metaTranscriptCap bounds the verbatim transcript the pty driver keeps of a metadata
// command (nobody reads it; the lines are captured by runMeta, within llamacpp.MetaCap).
const metaTranscriptCap = 64 << 10

// runMeta runs a short metadata command of bench through the pty driver and returns its
// normalised output, at most llamacpp.MetaCap bytes of it (its head and tail, with a marker
// line where the rest was left out: a build that floods its output must not make sparkbench
// grow with it), and how many bytes were left out.
func runMeta(ctx context.Context, bench string, env []string, arg string) (string, int64, error) {
	lim := Limits{Start: llamacpp.MetaTimeout, Idle: llamacpp.MetaTimeout, Total: llamacpp.MetaTimeout, Grace: time.Second}
	p := StartProc(ctx, ProcSpec{Argv: []string{bench, arg}, Env: env, Limits: lim, TranscriptCap: metaTranscriptCap})
	b := capout.New(llamacpp.MetaCap)
	for ev := range p.Events() {
		if ev.Type == EventLine {
			b.WriteString(ev.Line.Text)
			b.WriteString("\n")
		}
	}
	out, omitted := b.String(), b.Omitted()
	if x := p.ExitStatus(); x.Class != ClassOK {
		return out, omitted, fmt.Errorf("%s: %s", x.Class, x.Reason)
	}
	return out, omitted, nil
}

// capNote records that a metadata command's output was cut to llamacpp.MetaCap.
func capNote(fp *Fingerprint, arg string, omitted int64) {
	if omitted > 0 {
		fp.Errors = append(fp.Errors, fmt.Sprintf("%s: printed more than the %d bytes kept; %d bytes of its output were left out", arg, llamacpp.MetaCap, omitted))
	}
}

func (f *Fingerprinter) build(ctx context.Context, bench string, env []string, fp *Fingerprint) {
	out, omitted, err := runMeta(ctx, bench, env, "--version")
	capNote(fp, "--version", omitted)
	if err != nil {
		fp.Errors = append(fp.Errors, "--version: "+err.Error())
	} else if line, v, n, c, err := llamacpp.ParseVersion(out); err != nil {
		fp.Errors = append(fp.Errors, "--version: "+err.Error())
	} else {
		fp.VersionLine, fp.Version, fp.BuildNumber, fp.Commit = line, v, n, c
	}
	devOut, omitted, err := runMeta(ctx, bench, env, "--list-devices")
	capNote(fp, "--list-devices", omitted)
	if err != nil {
		fp.Errors = append(fp.Errors, "--list-devices: "+err.Error())
	} else {
		fp.Devices = llamacpp.ParseDevices(devOut)
		fp.Backends = llamacpp.ParseBackends(devOut)
	}
	if fp.Devices == nil {
		fp.Devices = []llamacpp.Device{}
	}
	bin, err := llamacpp.HashBinary(bench)
	if err != nil {
		fp.Errors = append(fp.Errors, err.Error())
	}
	fp.Binary = bin
	libs, missing, err := llamacpp.Libraries(bench, fp.Backends)
	if err != nil {
		fp.Errors = append(fp.Errors, "libraries: "+err.Error())
	}
	for _, m := range missing {
		fp.Errors = append(fp.Errors, "libraries: "+m+" was not found beside the tool or on its RUNPATH; not hashed")
	}
	fp.Libraries = libs
}

func (f *Fingerprinter) proc() string {
	if f.ProcRoot != "" {
		return f.ProcRoot
	}
	return "/proc"
}

func (f *Fingerprinter) machine(fp *Fingerprint) Machine {
	m := Machine{LogicalCPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile(filepath.Join(f.proc(), "cpuinfo")); err == nil {
		m.CPUModel, m.LogicalCPUs, m.Cores = parseCPUInfo(string(b), m.LogicalCPUs)
	} else {
		fp.Errors = append(fp.Errors, "cpuinfo: "+err.Error())
	}
	if b, err := os.ReadFile(filepath.Join(f.proc(), "meminfo")); err == nil {
		m.MemBytes = parseMemTotal(string(b))
	} else {
		fp.Errors = append(fp.Errors, "meminfo: "+err.Error())
	}
	uname(&m)
	return m
}

// parseCPUInfo reads the model name, the number of processors and of physical cores.
func parseCPUInfo(s string, fallback int) (model string, logical, cores int) {
	type core struct{ phys, id string }
	seen := map[core]bool{}
	var phys, id string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			logical++
		case "model name", "Model", "cpu model", "Hardware":
			if model == "" {
				model = v
			}
		case "physical id":
			phys = v
		case "core id":
			id = v
			seen[core{phys, id}] = true
		}
	}
	if logical == 0 {
		logical = fallback
	}
	cores = len(seen)
	return model, logical, cores
}

func parseMemTotal(s string) int64 {
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				if len(f) >= 2 && strings.EqualFold(f[1], "kB") {
					n *= 1024
				}
				return n
			}
		}
	}
	return 0
}

// Temps reads every named hwmon temperature (temp*_input, millidegrees). None is an empty
// list.
func (f *Fingerprinter) Temps() []Temp {
	root := f.HwmonRoot
	if root == "" {
		root = "/sys/class/hwmon"
	}
	temps := []Temp{}
	chips, _ := filepath.Glob(filepath.Join(root, "hwmon*"))
	sort.Strings(chips)
	for _, dir := range chips {
		name := readTrim(filepath.Join(dir, "name"))
		inputs, _ := filepath.Glob(filepath.Join(dir, "temp*_input"))
		sort.Strings(inputs)
		for _, in := range inputs {
			raw := readTrim(in)
			v, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				continue
			}
			sensor := strings.TrimSuffix(filepath.Base(in), "_input")
			temps = append(temps, Temp{Chip: name, Sensor: sensor,
				Label: readTrim(filepath.Join(dir, sensor+"_label")), Celsius: v / 1000})
		}
	}
	return temps
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Machine describes the host from /proc and uname alone (no binary is run).
func (f *Fingerprinter) Machine() Machine {
	var fp Fingerprint
	return f.machine(&fp)
}
