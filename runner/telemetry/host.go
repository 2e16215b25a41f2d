package telemetry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Host reads the host's load: /proc/pressure (cpu, memory, io), /proc/loadavg and
// /proc/meminfo (memory in use = MemTotal - MemAvailable). Each file is optional; the source is
// available when one of them reads.
type Host struct{ proc string }

// OpenHost checks which of the host files read under root/proc.
func OpenHost(root string) (*Host, Status) {
	st := Status{Source: "host"}
	h := &Host{proc: filepath.Join(root, "proc")}
	pts, err := h.Read(context.Background())
	if len(pts) == 0 {
		st.Reason = "host: nothing readable under " + h.proc
		if err != nil {
			st.Reason += ": " + err.Error()
		}
		return nil, st
	}
	seen := map[string]bool{}
	for _, p := range pts {
		if !seen[p.Device] {
			seen[p.Device] = true
			st.Devices = append(st.Devices, p.Device)
		}
	}
	if _, err := os.Stat(filepath.Join(h.proc, "pressure")); err != nil {
		st.Reason = "pressure: " + filepath.Join(h.proc, "pressure") + " is absent (kernel without PSI)"
	}
	st.Available = true
	return h, st
}

func (h *Host) Name() string { return "host" }
func (h *Host) Close() error { return nil }

// Read returns what reads now; an unreadable file is the error beside the points that did.
func (h *Host) Read(context.Context) ([]Point, error) {
	var pts []Point
	var errs []string
	for _, res := range []string{"cpu", "memory", "io"} {
		s, err := readFile(filepath.Join(h.proc, "pressure", res))
		if err != nil {
			continue // absent on kernels without PSI: said at discovery
		}
		p, err := ParsePressure(s)
		if err != nil {
			errs = append(errs, "pressure/"+res+": "+err.Error())
			continue
		}
		for _, q := range p {
			q.Device = "psi/" + res
			pts = append(pts, q)
		}
	}
	if s, err := readFile(filepath.Join(h.proc, "loadavg")); err == nil {
		f := strings.Fields(s)
		if v, err := strconv.ParseFloat(first(f), 64); err == nil {
			pts = append(pts, Point{Device: "host", Metric: Load1, Value: v})
		} else {
			errs = append(errs, fmt.Sprintf("loadavg: not a load average: %q", clip(s)))
		}
	}
	if s, err := readFile(filepath.Join(h.proc, "meminfo")); err == nil {
		total, avail, ok := parseMeminfo(s)
		if ok {
			pts = append(pts, Point{Device: "host", Metric: MemTotalBytes, Value: float64(total)},
				Point{Device: "host", Metric: MemUsedBytes, Value: float64(total - avail)})
		} else {
			errs = append(errs, "meminfo: no MemTotal and MemAvailable")
		}
	}
	if len(errs) > 0 {
		return pts, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return pts, nil
}

func first(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// ParsePressure reads a /proc/pressure file ("some avg10=0.12 avg60=… total=…", and "full …"
// for memory and io): the avg10 shares, in percent.
func ParsePressure(s string) ([]Point, error) {
	var pts []Point
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		metric := map[string]string{"some": PressureAvg10, "full": FullAvg10}[f[0]]
		if metric == "" {
			return nil, fmt.Errorf("unknown line %q", clip(line))
		}
		v, ok := strings.CutPrefix(f[1], "avg10=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("no avg10 in %q", clip(line))
		}
		pts = append(pts, Point{Metric: metric, Value: x})
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("empty")
	}
	return pts, nil
}

func parseMeminfo(s string) (total, avail int64, ok bool) {
	var gotT, gotA bool
	for _, l := range strings.Split(s, "\n") {
		k, v, found := strings.Cut(l, ":")
		if !found {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && strings.EqualFold(f[1], "kB") {
			n *= 1024
		}
		switch k {
		case "MemTotal":
			total, gotT = n, true
		case "MemAvailable":
			avail, gotA = n, true
		}
	}
	return total, avail, gotT && gotA && avail <= total
}
