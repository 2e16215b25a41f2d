// Package energy turns a leg's telemetry samples into figures: energy and power per device
// (from the device's energy counter where it has one, else by integrating its power readings,
// the method recorded), Joules per prompt and per generated token and tokens per Joule per row,
// clock and temperature ranges, throttle events, and the machine-state gates
// (docs/telemetry.md). It is pure: samples in, figures out.
package energy

import (
	"math"
	"sort"
	"strings"
	"time"

	"sparkbench/runner/telemetry"
)

// Methods of an energy figure.
const (
	MethodCounter    = "counter"    // the difference of an energy counter, interpolated at the window's ends
	MethodIntegrated = "integrated" // trapezoidal integral of power readings
	MethodMixed      = "mixed"      // a total over devices measured both ways
)

// Window is a span on the leg's clock.
type Window struct{ From, To time.Duration }

// Seconds is the window's length.
func (w Window) Seconds() float64 { return (w.To - w.From).Seconds() }

// series is one metric of one device over time.
type series struct {
	t []time.Duration
	v []float64
}

func (s *series) add(t time.Duration, v float64) { s.t, s.v = append(s.t, t), append(s.v, v) }

// at interpolates linearly at t, holding the first and last values beyond the ends.
func (s *series) at(t time.Duration) float64 {
	n := len(s.t)
	i := sort.Search(n, func(i int) bool { return s.t[i] >= t })
	switch {
	case i == 0:
		return s.v[0]
	case i == n:
		return s.v[n-1]
	case s.t[i] == s.t[i-1]:
		return s.v[i]
	}
	f := float64(t-s.t[i-1]) / float64(s.t[i]-s.t[i-1])
	return s.v[i-1] + f*(s.v[i]-s.v[i-1])
}

// integral is the trapezoidal integral over w (value × seconds), the series held flat
// beyond its ends.
func (s *series) integral(w Window) float64 {
	pts := []time.Duration{w.From}
	for _, t := range s.t {
		if t > w.From && t < w.To {
			pts = append(pts, t)
		}
	}
	pts = append(pts, w.To)
	sum := 0.0
	for i := 1; i < len(pts); i++ {
		sum += (s.at(pts[i-1]) + s.at(pts[i])) / 2 * (pts[i] - pts[i-1]).Seconds()
	}
	return sum
}

// in lists the values sampled within w.
func (s *series) in(w Window) []float64 {
	var out []float64
	for i, t := range s.t {
		if t >= w.From && t <= w.To {
			out = append(out, s.v[i])
		}
	}
	return out
}

// device is what the samples say of one device.
type device struct {
	source, name string
	m            map[string]*series
}

// Timeline is a leg's samples arranged per device and metric, in time order.
type Timeline struct {
	devices    []*device
	Unreadable int // samples that carried an error instead of (some) readings
}

// NewTimeline arranges samples (any order) by source, device and metric.
func NewTimeline(samples []telemetry.Sample) *Timeline {
	sorted := append([]telemetry.Sample(nil), samples...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].T < sorted[j].T })
	tl := &Timeline{}
	byKey := map[string]*device{}
	for _, s := range sorted {
		if s.Source == telemetry.SourceMark {
			continue
		}
		if s.Err != "" {
			tl.Unreadable++
		}
		for _, p := range s.Points {
			key := s.Source + "\x00" + p.Device
			d := byKey[key]
			if d == nil {
				d = &device{source: s.Source, name: p.Device, m: map[string]*series{}}
				byKey[key] = d
				tl.devices = append(tl.devices, d)
			}
			ser := d.m[p.Metric]
			if ser == nil {
				ser = &series{}
				d.m[p.Metric] = ser
			}
			ser.add(s.T, p.Value)
		}
	}
	sort.SliceStable(tl.devices, func(i, j int) bool {
		a, b := tl.devices[i], tl.devices[j]
		if a.source != b.source {
			return a.source < b.source
		}
		return a.name < b.name
	})
	return tl
}

// energy measures one device's energy over w: its counter when it has two readings, else its
// power integrated; ok false when it has neither.
func (d *device) energy(w Window) (j float64, method string, ok bool) {
	if c := d.m[telemetry.EnergyJ]; c != nil && len(c.t) >= 2 {
		return c.at(w.To) - c.at(w.From), MethodCounter, true
	}
	if p := d.m[telemetry.PowerW]; p != nil && len(p.t) >= 1 {
		return p.integral(w), MethodIntegrated, true
	}
	return 0, "", false
}

// counted says whether a device's energy is part of a total: GPUs, and RAPL's package and
// DRAM zones (package-N, and dram-N or dram: a separate domain the package's counter does not
// include); a sub-zone such as package-0/core is inside its package, and psys holds them all.
// Samples recorded before the DRAM sub-zone was named dram-N call it package-N/dram: as a
// sub-zone it is left out, so their figures stay those their reports and receipts were made
// with.
func (d *device) counted() bool {
	if d.source == "rapl" {
		if strings.Contains(d.name, "/") {
			return false
		}
		return strings.HasPrefix(d.name, "package-") || d.name == "dram" || strings.HasPrefix(d.name, "dram-")
	}
	return d.source != "hwmon" && d.source != "cpufreq" && d.source != "host" && !strings.Contains(d.name, "/")
}

// Total is the energy over w of every counted device, with the method (mixed when devices
// differ) and false when no device measures energy.
func (tl *Timeline) Total(w Window) (float64, string, bool) {
	sum, method, any := 0.0, "", false
	for _, d := range tl.devices {
		if !d.counted() {
			continue
		}
		j, m, ok := d.energy(w)
		if !ok {
			continue
		}
		sum += j
		if method == "" {
			method = m
		} else if method != m {
			method = MethodMixed
		}
		any = true
	}
	return sum, method, any
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// Marks reads the recorder's marks among samples: each row's arrival by sequence number, and
// the leg's end (ok false when the leg has no end mark).
func Marks(samples []telemetry.Sample) (rows map[int]time.Duration, end time.Duration, ok bool) {
	rows = map[int]time.Duration{}
	for _, s := range samples {
		if s.Source != telemetry.SourceMark {
			continue
		}
		for _, p := range s.Points {
			switch p.Metric {
			case telemetry.MarkRow:
				rows[int(p.Value)] = s.T
			case telemetry.MarkEnd:
				end, ok = s.T, true
			}
		}
	}
	return rows, end, ok
}
