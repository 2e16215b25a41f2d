package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Exec runs argv to its end within the bound it was given and returns its standard output
// (live runs it in its own process group and kills the group at the bound).
type Exec func(ctx context.Context, argv []string) ([]byte, error)

// ErrTimeout is what an Exec returns (wrapped) when the command outlived its bound.
var ErrTimeout = errors.New("timed out")

// Command is a sampler that runs a command once per read and parses its output: amd-smi
// metric --json and rocm-smi --json. A command that outlives its bound is gone (it will not be
// asked again); output that does not parse is an unreadable sample, and the next read tries
// again.
type Command struct {
	name   string
	argv   []string
	exec   Exec
	parse  func([]byte) ([]Point, error)
	rebase Rebase
	// pciArgv and parsePCI ask the tool which PCI address each of its devices is (amd-smi
	// list --json, rocm-smi --showbus --json), once, at discovery.
	pciArgv  []string
	parsePCI func([]byte) (map[string]string, error)
	skip     map[string]bool // devices another source reads: their points are left out
}

// AMDSMIArgs and ROCmSMIArgs are the command lines (after the tool's path); AMDSMIListArgs
// and ROCmSMIBusArgs ask for each device's PCI address.
var (
	AMDSMIArgs     = []string{"metric", "--json"}
	ROCmSMIArgs    = []string{"--showpower", "--showtemp", "--showuse", "--showclocks", "--showmeminfo", "vram", "--showenergycounter", "--json"}
	AMDSMIListArgs = []string{"list", "--json"}
	ROCmSMIBusArgs = []string{"--showbus", "--json"}
)

// NewAMDSMI samples with `amd-smi metric --json`.
func NewAMDSMI(tool string, exec Exec) *Command {
	return &Command{name: "amd-smi", argv: append([]string{tool}, AMDSMIArgs...), exec: exec, parse: ParseAMDSMI,
		pciArgv: append([]string{tool}, AMDSMIListArgs...), parsePCI: ParseAMDSMIList}
}

// NewROCmSMI samples with `rocm-smi … --json`.
func NewROCmSMI(tool string, exec Exec) *Command {
	return &Command{name: "rocm-smi", argv: append([]string{tool}, ROCmSMIArgs...), exec: exec, parse: ParseROCmSMI,
		pciArgv: append([]string{tool}, ROCmSMIBusArgs...), parsePCI: ParseROCmSMIBus}
}

func (c *Command) Name() string { return c.name }
func (c *Command) Close() error { return nil }

// PCI asks the tool, once, which PCI address each of its devices (GPU0, …) is.
func (c *Command) PCI(ctx context.Context) (map[string]string, error) {
	out, err := c.exec(ctx, c.pciArgv)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c.name, err)
	}
	m, err := c.parsePCI(out)
	if err != nil {
		return nil, fmt.Errorf("%s: unreadable output of %s: %v", c.name, strings.Join(c.pciArgv[1:], " "), err)
	}
	return m, nil
}

// Skip leaves a device's points out of every later read: another source reads it.
func (c *Command) Skip(device string) {
	if c.skip == nil {
		c.skip = map[string]bool{}
	}
	c.skip[device] = true
}

// skipped drops the points of skipped devices (GPU0 and GPU0/edge alike).
func (c *Command) skipped(pts []Point) []Point {
	if len(c.skip) == 0 {
		return pts
	}
	kept := pts[:0]
	for _, p := range pts {
		if d, _, _ := strings.Cut(p.Device, "/"); !c.skip[d] {
			kept = append(kept, p)
		}
	}
	return kept
}

func (c *Command) Read(ctx context.Context) ([]Point, error) {
	out, err := c.exec(ctx, c.argv)
	if errors.Is(err, ErrTimeout) {
		return nil, fmt.Errorf("%s: %v: %w", c.name, err, ErrGone)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c.name, err)
	}
	pts, err := c.parse(out)
	if err != nil {
		return nil, fmt.Errorf("%s: unreadable output: %v", c.name, err)
	}
	pts = c.skipped(pts)
	c.rebase.Apply(pts)
	return pts, nil
}

// amdValue reads the value forms amd-smi has printed: {"value": 41, "unit": "W"} (ROCm 6.1 and
// later), a bare number, or a string "41 W"; "N/A" is absent.
func amdValue(raw json.RawMessage) (float64, string, bool) {
	var vu struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	}
	if json.Unmarshal(raw, &vu) == nil && vu.Value != nil {
		v, _, ok := amdValue(vu.Value)
		return v, vu.Unit, ok
	}
	var x float64
	if json.Unmarshal(raw, &x) == nil {
		return x, "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		f := strings.Fields(s)
		if len(f) == 0 {
			return 0, "", false
		}
		x, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, "", false
		}
		unit := ""
		if len(f) > 1 {
			unit = f[1]
		}
		return x, unit, true
	}
	return 0, "", false
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func memScale(unit string) float64 {
	switch strings.ToUpper(unit) {
	case "B":
		return 1
	case "KB":
		return 1 << 10
	case "GB":
		return 1 << 30
	}
	return 1 << 20 // MB, amd-smi's unit for VRAM
}

// amdList reads amd-smi's JSON: a list with one object per GPU, or (newer amd-smi) the same
// list under "gpu_data".
func amdList(b []byte) ([]map[string]json.RawMessage, error) {
	var gpus []map[string]json.RawMessage
	err := json.Unmarshal(b, &gpus)
	if err == nil {
		return gpus, nil
	}
	var wrapped struct {
		GPUData []map[string]json.RawMessage `json:"gpu_data"`
	}
	if json.Unmarshal(b, &wrapped) == nil && wrapped.GPUData != nil {
		return wrapped.GPUData, nil
	}
	return nil, err
}

// ParseAMDSMIList reads `amd-smi list --json` ([{"gpu": 0, "bdf": "0000:03:00.0", …}]): each
// GPU's PCI address by device name (GPU0).
func ParseAMDSMIList(b []byte) (map[string]string, error) {
	gpus, err := amdList(b)
	if err != nil {
		return nil, fmt.Errorf("not an amd-smi list: %v", err)
	}
	out := map[string]string{}
	for _, g := range gpus {
		var idx int
		var bdf string
		if json.Unmarshal(g["gpu"], &idx) != nil {
			return nil, errors.New(`an entry without "gpu"`)
		}
		if json.Unmarshal(g["bdf"], &bdf) != nil || NormalizePCI(bdf) == "" {
			continue // N/A: this GPU's address is unknown
		}
		out["GPU"+strconv.Itoa(idx)] = NormalizePCI(bdf)
	}
	return out, nil
}

// ParseROCmSMIBus reads `rocm-smi --showbus --json` ({"card0": {"PCI Bus": "0000:03:00.0"}}):
// each card's PCI address by device name (GPU0).
func ParseROCmSMIBus(b []byte) (map[string]string, error) {
	var cards map[string]map[string]string
	if err := json.Unmarshal(b, &cards); err != nil {
		return nil, fmt.Errorf("not rocm-smi JSON: %v", err)
	}
	out := map[string]string{}
	for card, kv := range cards {
		n, ok := strings.CutPrefix(card, "card")
		if !ok {
			continue
		}
		if a := NormalizePCI(kv["PCI Bus"]); a != "" {
			out["GPU"+n] = a
		}
	}
	return out, nil
}

// amdThrottle reads a GPU's throttle state from amd-smi metric: the throttle section's
// violation statuses where amd-smi prints them (MI300 and later: PROCHOT, socket, voltage
// regulator and HBM thermal violations are thermal; PPT, the package power limit, is the power
// cap), else power.throttle_status, which says THROTTLED whenever the SMU cut the clocks for a
// reason it does not name (heat, power or current): counted as a hardware slowdown, as NVML's
// HW slowdown is. hotOK and capOK are false when amd-smi says nothing of either.
func amdThrottle(power, throttle map[string]json.RawMessage) (hot, hotOK, capped, capOK bool) {
	word := func(m map[string]json.RawMessage, key string) string {
		var s string
		_ = json.Unmarshal(m[key], &s)
		return strings.ToUpper(strings.TrimSpace(s))
	}
	for _, k := range []string{"prochot_violation_status", "socket_thermal_violation_status", "vr_thermal_violation_status", "hbm_thermal_violation_status"} {
		switch word(throttle, k) {
		case "ACTIVE":
			hot, hotOK = true, true
		case "NOT ACTIVE":
			hotOK = true
		}
	}
	switch word(throttle, "ppt_violation_status") {
	case "ACTIVE":
		capped, capOK = true, true
	case "NOT ACTIVE":
		capOK = true
	}
	if !hotOK {
		switch word(power, "throttle_status") {
		case "THROTTLED":
			hot, hotOK = true, true
		case "UNTHROTTLED":
			hotOK = true
		}
	}
	return hot, hotOK, capped, capOK
}

// ParseAMDSMI reads `amd-smi metric --json`: a list with one object per GPU ("gpu": index),
// sections usage, power (with throttle_status), clock, temperature, energy, mem_usage and,
// where amd-smi has it, throttle.
func ParseAMDSMI(b []byte) ([]Point, error) {
	gpus, err := amdList(b)
	if err != nil {
		return nil, fmt.Errorf("not an amd-smi metric list: %v", err)
	}
	var pts []Point
	for _, g := range gpus {
		var idx int
		if err := json.Unmarshal(g["gpu"], &idx); err != nil {
			return nil, errors.New(`an entry without "gpu"`)
		}
		dev := "GPU" + strconv.Itoa(idx)
		sec := func(name string) map[string]json.RawMessage {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(g[name], &m)
			return m
		}
		add := func(metric string, raw json.RawMessage, scale func(unit string) float64) {
			if v, unit, ok := amdValue(raw); ok {
				pts = append(pts, Point{Device: dev, Metric: metric, Value: v * scale(unit)})
			}
		}
		one := func(string) float64 { return 1 }
		add(PowerW, sec("power")["socket_power"], one)
		add(UtilPct, sec("usage")["gfx_activity"], one)
		add(EnergyJ, sec("energy")["total_energy_consumption"], func(u string) float64 {
			if strings.EqualFold(u, "uJ") {
				return 1e-6
			}
			return 1
		})
		for _, t := range []string{"edge", "hotspot", "mem"} {
			if v, _, ok := amdValue(sec("temperature")[t]); ok {
				pts = append(pts, Point{Device: dev + "/" + t, Metric: TempC, Value: v})
			}
		}
		clocks := sec("clock")
		for key, metric := range map[string]string{"gfx_0": ClockSMMHz, "mem_0": ClockMemMHz} {
			var c map[string]json.RawMessage
			if json.Unmarshal(clocks[key], &c) == nil {
				add(metric, c["clk"], one)
				if key == "gfx_0" {
					add(ClockMaxMHz, c["max_clk"], one)
				}
			}
		}
		mem := sec("mem_usage")
		add(MemUsedBytes, mem["used_vram"], memScale)
		add(MemTotalBytes, mem["total_vram"], memScale)
		hot, hotOK, capped, capOK := amdThrottle(sec("power"), sec("throttle"))
		if hotOK {
			pts = append(pts, Point{Device: dev, Metric: ThrottleHot, Value: b2f(hot)})
		}
		if capOK { // the power cap as NVML's bit, so the figures count it as they count NVIDIA's
			pts = append(pts, Point{Device: dev, Metric: Throttle, Value: b2f(capped) * ReasonSwPowerCap})
		}
	}
	if len(gpus) == 0 {
		return nil, errors.New("no GPU in the list")
	}
	return pts, nil
}

// ParseROCmSMI reads `rocm-smi --json`: {"card0": {"Average Graphics Package Power (W)": "41.0",
// "Temperature (Sensor edge) (C)": "45.0", "GPU use (%)": "12", "sclk clock speed:": "(1900Mhz)",
// "VRAM Total Memory (B)": "…", "VRAM Total Used Memory (B)": "…", "Energy counter": "…",
// "Accumulated Energy (uJ)": "…"}, "system": {…}}.
func ParseROCmSMI(b []byte) ([]Point, error) {
	var cards map[string]map[string]string
	if err := json.Unmarshal(b, &cards); err != nil {
		return nil, fmt.Errorf("not rocm-smi JSON: %v", err)
	}
	names := make([]string, 0, len(cards))
	for k := range cards {
		if strings.HasPrefix(k, "card") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var pts []Point
	for _, card := range names {
		dev := "GPU" + strings.TrimPrefix(card, "card")
		for key, raw := range cards[card] {
			metric, scale := rocmKey(key)
			if metric == "" {
				continue
			}
			s := strings.Trim(strings.TrimSpace(raw), "()")
			s = strings.TrimSuffix(strings.TrimSuffix(s, "Mhz"), "MHz")
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				continue // N/A
			}
			d := dev
			if metric == TempC {
				d = dev + "/" + rocmSensor(key)
			}
			pts = append(pts, Point{Device: d, Metric: metric, Value: v * scale})
		}
	}
	if len(names) == 0 {
		return nil, errors.New("no card in the output")
	}
	sort.SliceStable(pts, func(i, j int) bool {
		return pts[i].Device+pts[i].Metric < pts[j].Device+pts[j].Metric
	})
	return pts, nil
}

func rocmKey(k string) (string, float64) {
	switch {
	case strings.Contains(k, "Graphics Package Power (W)"): // Average … (older) or Current Socket …
		return PowerW, 1
	case strings.HasPrefix(k, "Temperature (Sensor "):
		return TempC, 1
	case k == "GPU use (%)":
		return UtilPct, 1
	case strings.HasPrefix(k, "sclk clock speed"):
		return ClockSMMHz, 1
	case strings.HasPrefix(k, "mclk clock speed"):
		return ClockMemMHz, 1
	case k == "VRAM Total Memory (B)":
		return MemTotalBytes, 1
	case k == "VRAM Total Used Memory (B)":
		return MemUsedBytes, 1
	case k == "Accumulated Energy (uJ)":
		return EnergyJ, 1e-6
	}
	return "", 0
}

func rocmSensor(k string) string {
	s := strings.TrimPrefix(k, "Temperature (Sensor ")
	s, _, _ = strings.Cut(s, ")")
	return strings.ToLower(strings.TrimSpace(s))
}
