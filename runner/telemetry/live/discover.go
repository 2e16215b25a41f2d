package live

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
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
	amd, st := openCommand(ctx, cfg, cfg.AMDSMI, "amd-smi", telemetry.NewAMDSMI)
	add(amd, st)
	if st.Available {
		set.Status = append(set.Status, telemetry.Status{Source: "rocm-smi", Reason: "rocm-smi: not used: amd-smi answers"})
	} else {
		add(openCommand(ctx, cfg, cfg.ROCmSMI, "rocm-smi", telemetry.NewROCmSMI))
	}
	a, st := telemetry.OpenAMDGPU(cfg.Root)
	add(sourceOrNil(a), st)
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

// openCommand runs a one-shot sampler command once: available when its output parses.
func openCommand(ctx context.Context, cfg Config, path, name string, mk func(string, telemetry.Exec) *telemetry.Command) (telemetry.Source, telemetry.Status) {
	st := telemetry.Status{Source: name}
	p, why := tool(path, name)
	if p == "" {
		st.Reason = why
		return nil, st
	}
	c := mk(p, Exec(cfg.CommandTimeout))
	pts, err := c.Read(ctx)
	if err != nil {
		st.Reason = err.Error()
		return nil, st
	}
	st.Available, st.Devices, st.Energy = true, devices(pts), energyMethod(pts)
	return c, st
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
