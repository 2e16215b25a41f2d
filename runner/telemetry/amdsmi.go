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
}

// AMDSMIArgs and ROCmSMIArgs are the command lines (after the tool's path).
var (
	AMDSMIArgs  = []string{"metric", "--json"}
	ROCmSMIArgs = []string{"--showpower", "--showtemp", "--showuse", "--showclocks", "--showmeminfo", "vram", "--showenergycounter", "--json"}
)

// NewAMDSMI samples with `amd-smi metric --json`.
func NewAMDSMI(tool string, exec Exec) *Command {
	return &Command{name: "amd-smi", argv: append([]string{tool}, AMDSMIArgs...), exec: exec, parse: ParseAMDSMI}
}

// NewROCmSMI samples with `rocm-smi … --json`.
func NewROCmSMI(tool string, exec Exec) *Command {
	return &Command{name: "rocm-smi", argv: append([]string{tool}, ROCmSMIArgs...), exec: exec, parse: ParseROCmSMI}
}

func (c *Command) Name() string { return c.name }
func (c *Command) Close() error { return nil }

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

// ParseAMDSMI reads `amd-smi metric --json`: a list with one object per GPU ("gpu": index),
// sections usage, power, clock, temperature, energy and mem_usage.
func ParseAMDSMI(b []byte) ([]Point, error) {
	var gpus []map[string]json.RawMessage
	if err := json.Unmarshal(b, &gpus); err != nil {
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
