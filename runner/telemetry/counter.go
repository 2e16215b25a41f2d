package telemetry

import "fmt"

// Counter turns a raw energy counter that wraps (RAPL's energy_uj at max_energy_range_uj) or
// restarts (a driver reload) into Joules since the first reading, so energy over a window is
// always the last value minus the first.
type Counter struct {
	Scale float64 // Joules per raw unit (1e-6 for µJ, 1e-3 for mJ)
	// Range is the largest raw value before the counter starts again at zero (RAPL's
	// max_energy_range_uj); 0: it does not wrap, and a decrease is a restart.
	Range uint64

	started bool
	last    uint64
	total   float64
	Wraps   int // wraps seen
	Resets  int // decreases on a counter without a range: counted from the new value
}

// Add takes the next raw reading and returns Joules since the first one.
func (c *Counter) Add(raw uint64) (float64, error) {
	if c.Scale <= 0 {
		return 0, fmt.Errorf("energy counter without a scale")
	}
	if !c.started {
		c.started, c.last = true, raw
		return 0, nil
	}
	var delta uint64
	switch {
	case raw >= c.last:
		delta = raw - c.last
	case c.Range > 0 && c.last <= c.Range:
		// RAPL: the counter runs from 0 to max_energy_range_uj, then starts again at 0.
		delta = c.Range - c.last + raw
		c.Wraps++
	default:
		delta = raw // restarted from zero: what it counted since is the new value
		c.Resets++
	}
	c.last = raw
	c.total += float64(delta) * c.Scale
	return c.total, nil
}

// Rebase turns absolute energy readings already in Joules (amd-smi's and rocm-smi's counters
// since boot) into Joules since each device's first reading; a decrease is a restart, counted
// from the new value.
type Rebase struct {
	last  map[string]float64
	total map[string]float64
}

// Apply rewrites the energy_j points of pts in place.
func (r *Rebase) Apply(pts []Point) {
	if r.last == nil {
		r.last, r.total = map[string]float64{}, map[string]float64{}
	}
	for i, p := range pts {
		if p.Metric != EnergyJ {
			continue
		}
		last, seen := r.last[p.Device]
		switch {
		case !seen:
		case p.Value >= last:
			r.total[p.Device] += p.Value - last
		default:
			r.total[p.Device] += p.Value
		}
		r.last[p.Device] = p.Value
		pts[i].Value = r.total[p.Device]
	}
}
