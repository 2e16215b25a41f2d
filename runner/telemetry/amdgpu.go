package telemetry

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// AMDGPU reads the amdgpu driver's hwmon files: power1_average or power1_input (µW),
// energy1_input (µJ) where the chip has it, freq1_input / freq2_input (shader and memory clock,
// Hz), and from the device folder gpu_busy_percent, mem_info_vram_used/total (bytes) and
// pp_dpm_sclk (the level marked * is the current one; the highest level is the maximum).
type AMDGPU struct{ cards []*amdCard }

type amdCard struct {
	dir, device string
	pci         string // the card's PCI address (0000:03:00.0), "" when sysfs does not say
	power       string // power1_average or power1_input
	counter     *Counter
}

// AMDGPUCard is one card discovery found: its device name, PCI address ("" when unknown) and
// whether its hwmon files have an energy counter.
type AMDGPUCard struct {
	Device, PCI string
	Counter     bool
}

// Cards lists the cards the source reads.
func (a *AMDGPU) Cards() []AMDGPUCard {
	out := make([]AMDGPUCard, len(a.cards))
	for i, c := range a.cards {
		out[i] = AMDGPUCard{Device: c.device, PCI: c.pci, Counter: c.counter != nil}
	}
	return out
}

// Drop stops reading a card (another source reads the same device: one device is one
// source, or its energy would be counted twice).
func (a *AMDGPU) Drop(device string) {
	kept := a.cards[:0]
	for _, c := range a.cards {
		if c.device != device {
			kept = append(kept, c)
		}
	}
	a.cards = kept
}

// pciAddress is the PCI address of a hwmon chip's device: PCI_SLOT_NAME in device/uevent,
// else the name the device link resolves to.
func pciAddress(dir string) string {
	if s, err := readFile(filepath.Join(dir, "device", "uevent")); err == nil {
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PCI_SLOT_NAME="); ok && NormalizePCI(v) != "" {
				return NormalizePCI(v)
			}
		}
	}
	if p, err := filepath.EvalSymlinks(filepath.Join(dir, "device")); err == nil {
		return NormalizePCI(filepath.Base(p))
	}
	return ""
}

// pciRE is a PCI address with its domain: 0000:03:00.0.
var pciRE = regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

// NormalizePCI writes a PCI address as sysfs does (four-digit domain, lower case), or "" when s
// is not one: amd-smi and rocm-smi print 0000:03:00.0, some tools an eight-digit domain.
func NormalizePCI(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if !pciRE.MatchString(s) {
		return ""
	}
	dom, rest, _ := strings.Cut(s, ":")
	if len(dom) > 4 && strings.Trim(dom[:len(dom)-4], "0") == "" {
		dom = dom[len(dom)-4:]
	}
	return dom + ":" + rest
}

// OpenAMDGPU finds the hwmon chips named amdgpu under root.
func OpenAMDGPU(root string) (*AMDGPU, Status) {
	st := Status{Source: "amdgpu"}
	a := &AMDGPU{}
	for _, dir := range glob(filepath.Join(root, "sys/class/hwmon/hwmon*")) {
		if name, _ := readFile(filepath.Join(dir, "name")); name != "amdgpu" {
			continue
		}
		c := &amdCard{dir: dir, device: fmt.Sprintf("amdgpu%d", len(a.cards)), pci: pciAddress(dir)}
		for _, f := range []string{"power1_average", "power1_input"} {
			if _, err := readUint(filepath.Join(dir, f)); err == nil {
				c.power = f
				break
			}
		}
		if _, err := readUint(filepath.Join(dir, "energy1_input")); err == nil {
			c.counter = &Counter{Scale: 1e-6}
		}
		a.cards = append(a.cards, c)
		st.Devices = append(st.Devices, c.device)
	}
	if len(a.cards) == 0 {
		st.Reason = "amdgpu: no hwmon chip named amdgpu under " + filepath.Join(root, "sys/class/hwmon")
		return nil, st
	}
	st.Available, st.Energy = true, "power"
	for _, c := range a.cards {
		if c.counter != nil {
			st.Energy = "counter"
		}
	}
	return a, st
}

func (a *AMDGPU) Name() string { return "amdgpu" }
func (a *AMDGPU) Close() error { return nil }

// Read returns each card's readings; a card whose folder is gone is an error (the device
// disappeared), the other cards still read.
func (a *AMDGPU) Read(context.Context) ([]Point, error) {
	var pts []Point
	var errs []string
	for _, c := range a.cards {
		p, err := c.read()
		pts = append(pts, p...)
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return pts, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return pts, nil
}

func (c *amdCard) read() ([]Point, error) {
	var pts []Point
	add := func(m string, v float64) { pts = append(pts, Point{Device: c.device, Metric: m, Value: v}) }
	if _, err := readFile(filepath.Join(c.dir, "name")); err != nil {
		return nil, fmt.Errorf("amdgpu %s: gone: %w", c.device, err)
	}
	if c.power != "" {
		if v, err := readUint(filepath.Join(c.dir, c.power)); err == nil {
			add(PowerW, float64(v)/1e6)
		}
	}
	if c.counter != nil {
		if v, err := readUint(filepath.Join(c.dir, "energy1_input")); err == nil {
			if j, err := c.counter.Add(v); err == nil {
				add(EnergyJ, j)
			}
		}
	}
	if v, err := readUint(filepath.Join(c.dir, "freq1_input")); err == nil {
		add(ClockSMMHz, float64(v)/1e6)
	}
	if v, err := readUint(filepath.Join(c.dir, "freq2_input")); err == nil {
		add(ClockMemMHz, float64(v)/1e6)
	}
	dev := filepath.Join(c.dir, "device")
	if s, err := readFile(filepath.Join(dev, "pp_dpm_sclk")); err == nil {
		if cur, mx, ok := ParseDPM(s); ok {
			if !hasMetric(pts, ClockSMMHz) {
				add(ClockSMMHz, cur)
			}
			add(ClockMaxMHz, mx)
		}
	}
	if v, err := readUint(filepath.Join(dev, "gpu_busy_percent")); err == nil {
		add(UtilPct, float64(v))
	}
	if v, err := readUint(filepath.Join(dev, "mem_info_vram_used")); err == nil {
		add(MemUsedBytes, float64(v))
	}
	if v, err := readUint(filepath.Join(dev, "mem_info_vram_total")); err == nil {
		add(MemTotalBytes, float64(v))
	}
	return pts, nil
}

func hasMetric(pts []Point, m string) bool {
	for _, p := range pts {
		if p.Metric == m {
			return true
		}
	}
	return false
}

// ParseDPM reads pp_dpm_sclk ("0: 500Mhz\n1: 2100Mhz *"): the current level's clock (the one
// marked *) and the highest level's, in MHz.
func ParseDPM(s string) (cur, max float64, ok bool) {
	found := false
	for _, line := range strings.Split(s, "\n") {
		_, v, hasColon := strings.Cut(line, ":")
		if !hasColon {
			continue
		}
		v = strings.TrimSpace(v)
		star := strings.HasSuffix(v, "*")
		v = strings.TrimSpace(strings.TrimSuffix(v, "*"))
		num := strings.TrimSuffix(strings.TrimSuffix(v, "Mhz"), "MHz")
		mhz, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil {
			continue
		}
		if mhz > max {
			max = mhz
		}
		if star {
			cur, found = mhz, true
		}
	}
	return cur, max, found && max > 0
}
