package live

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"sparkbench/runner/telemetry"
)

// DefaultCommandTimeout bounds one sampler command (amd-smi starts Python: about half a second).
const DefaultCommandTimeout = 5 * time.Second

// Config says where the samplers read. Zero fields take the real machine's.
type Config struct {
	Root     string        // filesystem root of /sys and /proc; "" is "/"
	Interval time.Duration // nvidia-smi's -lms; 0: telemetry.DefaultInterval
	// NvidiaSMI, AMDSMI and ROCmSMI are the tools' paths; "" looks them up on PATH, "-" skips.
	NvidiaSMI, AMDSMI, ROCmSMI string
	NVML                       telemetry.NVML // nil: libnvidia-ml through go-nvml
	CommandTimeout             time.Duration  // 0: DefaultCommandTimeout
	// Stream starts nvidia-smi -lms (nil: StartStream); tests replay recorded output.
	Stream func(argv []string) (telemetry.Stream, error)
}

// Set is what discovery found: the sources to sample and every sampler's status.
type Set struct {
	Sources []telemetry.Source
	Status  []telemetry.Status
}

// Close closes every source (stops nvidia-smi, shuts NVML down).
func (s *Set) Close() error {
	var errs []error
	for _, src := range s.Sources {
		errs = append(errs, src.Close())
	}
	s.Sources = nil
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Root == "" {
		c.Root = "/"
	}
	if c.Interval <= 0 {
		c.Interval = telemetry.DefaultInterval
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	if c.NVML == nil {
		c.NVML = NVML("")
	}
	if c.Stream == nil {
		c.Stream = StartStream
	}
	return c
}

// tool finds a sampler command: the configured path, or PATH.
func tool(path, name string) (string, string) {
	switch path {
	case "-":
		return "", name + ": not asked for"
	case "":
		p, err := exec.LookPath(name)
		if err != nil {
			return "", name + ": not found on PATH"
		}
		return p, ""
	}
	return path, ""
}

// Discover finds every sampler this machine has, in a fixed order: NVML (else nvidia-smi),
// amd-smi (else rocm-smi), the amdgpu hwmon files, RAPL, hwmon temperatures, cpufreq, the host's
// pressure, load and memory; powermetrics is listed as out of reach. Each is tried once, every
// command bounded; what is not available says why.
func Discover(ctx context.Context, cfg Config) *Set {
	cfg = cfg.withDefaults()
	set := &Set{}
	add := func(src telemetry.Source, st telemetry.Status) {
		set.Status = append(set.Status, st)
		if st.Available && src != nil {
			set.Sources = append(set.Sources, src)
		}
	}
	nv, st := telemetry.OpenNVML(cfg.NVML)
	add(sourceOrNil(nv), st)
	if nv != nil {
		set.Status = append(set.Status, telemetry.Status{Source: "nvidia-smi", Reason: "nvidia-smi: not used: NVML answers"})
	} else {
		add(openNvidiaSMI(ctx, cfg))
	}
	amd, amdSt, amdPts := openCommand(ctx, cfg, cfg.AMDSMI, "amd-smi", telemetry.NewAMDSMI)
	rocmSt := telemetry.Status{Source: "rocm-smi", Reason: "rocm-smi: not used: amd-smi answers"}
	if !amdSt.Available {
		amd, rocmSt, amdPts = openCommand(ctx, cfg, cfg.ROCmSMI, "rocm-smi", telemetry.NewROCmSMI)
	}
	a, aSt := telemetry.OpenAMDGPU(cfg.Root)
	if amd != nil && a != nil {
		tool := &amdSt
		if !amdSt.Available {
			tool = &rocmSt
		}
		oneSourcePerGPU(ctx, amd, tool, amdPts, a, &aSt)
	}
	if amd == nil || !amdSt.Available && !rocmSt.Available {
		amd = nil
	}
	if amdSt.Available {
		add(amd, amdSt)
		set.Status = append(set.Status, rocmSt)
	} else {
		set.Status = append(set.Status, amdSt)
		add(amd, rocmSt)
	}
	add(sourceOrNil(a), aSt)
	r, st := telemetry.OpenRAPL(cfg.Root)
	add(sourceOrNil(r), st)
	h, st := telemetry.OpenHwmon(cfg.Root)
	add(sourceOrNil(h), st)
	f, st := telemetry.OpenCPUFreq(cfg.Root)
	add(sourceOrNil(f), st)
	ho, st := telemetry.OpenHost(cfg.Root)
	add(sourceOrNil(ho), st)
	set.Status = append(set.Status, telemetry.Status{Source: "powermetrics", Reason: powermetricsReason()})
	return set
}

// sourceOrNil keeps a typed nil pointer from becoming a non-nil interface.
func sourceOrNil[T interface {
	*telemetry.NVMLSource | *telemetry.AMDGPU | *telemetry.RAPL | *telemetry.Hwmon | *telemetry.CPUFreq | *telemetry.Host
	telemetry.Source
}](p T) telemetry.Source {
	if p == nil {
		return nil
	}
	return p
}

func powermetricsReason() string {
	if runtime.GOOS != "darwin" {
		return "powermetrics: macOS only (Apple silicon power needs powermetrics as root, or IOReport)"
	}
	return "powermetrics: needs root; not sampled yet (docs/telemetry.md, Apple)"
}

// openCommand runs a one-shot sampler command once: available when its output parses. The
// points it read come back for oneSourcePerGPU.
func openCommand(ctx context.Context, cfg Config, path, name string, mk func(string, telemetry.Exec) *telemetry.Command) (*telemetry.Command, telemetry.Status, []telemetry.Point) {
	st := telemetry.Status{Source: name}
	p, why := tool(path, name)
	if p == "" {
		st.Reason = why
		return nil, st, nil
	}
	c := mk(p, Exec(cfg.CommandTimeout))
	pts, err := c.Read(ctx)
	if err != nil {
		st.Reason = err.Error()
		return nil, st, nil
	}
	st.Available, st.Devices, st.Energy = true, devices(pts), energyMethod(pts)
	return c, st, pts
}

// oneSourcePerGPU keeps one source per AMD GPU. amd-smi (or rocm-smi) and the amdgpu hwmon
// files read the same cards, and a total that added both would count each card twice. A card
// is matched to the tool's device by PCI address (the tool's list, the hwmon chip's device);
// the source kept is the more precise one: the one with an energy counter for the card, and
// on a tie the tool (it also reports the throttle status and the hotspot and memory
// temperatures). A card whose address the tool or sysfs does not give cannot be told apart
// from the tool's GPUs, so the tool reads it alone. Both statuses say what was decided.
func oneSourcePerGPU(ctx context.Context, tool *telemetry.Command, toolSt *telemetry.Status, toolPts []telemetry.Point, a *telemetry.AMDGPU, aSt *telemetry.Status) {
	byPCI := map[string]string{} // PCI address → the tool's device
	pci, pciErr := tool.PCI(ctx)
	for dev, addr := range pci {
		byPCI[addr] = dev
	}
	toolCounter := map[string]bool{}
	for _, p := range toolPts {
		if p.Metric == telemetry.EnergyJ {
			toolCounter[p.Device] = true
		}
	}
	name := toolSt.Source
	var toolNotes, aNotes, toolSkipped []string
	for _, c := range a.Cards() {
		dev, matched := byPCI[c.PCI]
		switch {
		case c.PCI == "" || pciErr != nil || !matched && len(pci) < len(toolSt.Devices):
			why := "sysfs gives no PCI address for it"
			if c.PCI != "" {
				why = name + " does not say which PCI address each of its GPUs is"
				if pciErr != nil {
					why += " (" + pciErr.Error() + ")"
				}
			}
			a.Drop(c.Device)
			aNotes = append(aNotes, fmt.Sprintf("%s not read here: %s reads the AMD GPUs and %s, so it cannot be told apart from them (counting it twice would double its energy)", c.Device, name, why))
		case !matched:
			// a card the tool does not list: the hwmon files are its only source
		case c.Counter && !toolCounter[dev]:
			tool.Skip(dev)
			toolSkipped = append(toolSkipped, dev)
			toolNotes = append(toolNotes, fmt.Sprintf("%s (%s) is read by amdgpu as %s (an energy counter; %s has power only)", dev, c.PCI, c.Device, name))
			aNotes = append(aNotes, fmt.Sprintf("%s (%s) is %s's %s, read here (energy counter)", c.Device, c.PCI, name, dev))
		default:
			a.Drop(c.Device)
			why := "energy counter"
			if !toolCounter[dev] {
				why = "power readings, as here"
			}
			if name == "amd-smi" {
				why += "; throttle status"
			}
			toolNotes = append(toolNotes, fmt.Sprintf("%s (%s) is also amdgpu's %s: read here only", dev, c.PCI, c.Device))
			aNotes = append(aNotes, fmt.Sprintf("%s (%s) is %s's %s, read there (%s)", c.Device, c.PCI, name, dev, why))
		}
	}
	toolSt.Devices = without(toolSt.Devices, toolSkipped)
	if len(toolSt.Devices) == 0 {
		toolSt.Available, toolSt.Energy = false, ""
	}
	toolSt.Reason = joinNotes(name, toolSt.Available, toolNotes)
	var kept []string
	counter := false
	for _, c := range a.Cards() {
		kept = append(kept, c.Device)
		counter = counter || c.Counter
	}
	aSt.Devices = kept
	if len(kept) == 0 {
		aSt.Available, aSt.Energy = false, ""
	} else if !counter {
		aSt.Energy = "power"
	}
	aSt.Reason = joinNotes("amdgpu", aSt.Available, aNotes)
}

// joinNotes words discovery's decisions as a status reason: a note on an available source, why
// not on one left with nothing to read.
func joinNotes(source string, available bool, notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	if available {
		return source + ": " + strings.Join(notes, "; ")
	}
	return source + ": not used: " + strings.Join(notes, "; ")
}

func without(list, drop []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

// openNvidiaSMI checks nvidia-smi with one bounded query, then starts it with -lms.
func openNvidiaSMI(ctx context.Context, cfg Config) (telemetry.Source, telemetry.Status) {
	st := telemetry.Status{Source: "nvidia-smi", Energy: "power"}
	p, why := tool(cfg.NvidiaSMI, "nvidia-smi")
	if p == "" {
		st.Reason = why
		return nil, st
	}
	once := append([]string{p}, telemetry.NvidiaSMIArgs(cfg.Interval)[:2]...)
	out, err := Exec(cfg.CommandTimeout)(ctx, once)
	if err != nil {
		st.Reason = "nvidia-smi: " + err.Error()
		return nil, st
	}
	var pts []telemetry.Point
	var notes []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		lp, ns, err := telemetry.ParseNvidiaSMILine(line)
		if err != nil {
			st.Reason = "nvidia-smi: unreadable output: " + err.Error()
			return nil, st
		}
		pts = append(pts, lp...)
		notes = append(notes, ns...)
	}
	if len(notes) > 0 {
		st.Reason = "nvidia-smi: not supported: " + strings.Join(notes, ", ")
		if strings.Contains(st.Reason, "memory.") {
			st.Reason += " (unified memory: host memory is recorded instead)"
		}
	}
	s, err := cfg.Stream(append([]string{p}, telemetry.NvidiaSMIArgs(cfg.Interval)...))
	if err != nil {
		st.Reason = "nvidia-smi -lms: " + err.Error()
		return nil, st
	}
	st.Available, st.Devices = true, devices(pts)
	return telemetry.NewNvidiaSMI(s, 5*cfg.Interval+cfg.CommandTimeout, nil), st
}

func devices(pts []telemetry.Point) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range pts {
		d, _, _ := strings.Cut(p.Device, "/")
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

func energyMethod(pts []telemetry.Point) string {
	m := ""
	for _, p := range pts {
		switch p.Metric {
		case telemetry.EnergyJ:
			return "counter"
		case telemetry.PowerW:
			m = "power"
		}
	}
	return m
}
