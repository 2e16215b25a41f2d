package telemetry

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Apple silicon (docs/telemetry.md, Apple): `powermetrics` needs root and runs on macOS only,
// so no sampler starts it yet; this is its parser, tested on recorded output, for the
// privileged helper that will. With --format plist it prints one XML property list per
// sample, the samples separated by a NUL byte. Each holds elapsed_ns (the sample's length),
// processor (cpu_energy, gpu_energy, ane_energy in mJ over the sample; combined_power in mW;
// clusters with freq_hz and idle_ratio), gpu (freq_hz, idle_ratio, gpu_energy) and
// thermal_pressure (Nominal, Moderate, Heavy, Trapping, Sleeping).

// PowermetricsArgs is the command line of a powermetrics sampler: CPU, GPU and thermal
// samplers every interval, as property lists, until it is stopped.
func PowermetricsArgs(interval time.Duration) []string {
	ms := max(interval.Milliseconds(), 1)
	return []string{"--samplers", "cpu_power,gpu_power,thermal", "-i", strconv.FormatInt(ms, 10), "--format", "plist"}
}

// SplitPowermetrics cuts powermetrics' plist output into its samples (NUL-separated; empty
// pieces dropped).
func SplitPowermetrics(data []byte) [][]byte {
	var out [][]byte
	for _, p := range bytes.Split(data, []byte{0}) {
		if len(bytes.TrimSpace(p)) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Powermetrics turns successive samples into points: each energy is a counter summed since the
// first sample (energy_j, unwrapped), beside the sample's mean power.
type Powermetrics struct {
	total map[string]float64 // J per device since the first sample
}

// Read parses one sample: the points of the cpu, gpu and ane devices (power_w, energy_j), the
// GPU's clock and busy share, each CPU cluster's frequency, the thermal pressure as a
// thermal slowdown (0 at Nominal, 1 above), and the sample's length.
func (pm *Powermetrics) Read(doc []byte) ([]Point, time.Duration, error) {
	v, err := decodePlist(doc)
	if err != nil {
		return nil, 0, fmt.Errorf("powermetrics: %v", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, 0, errors.New("powermetrics: the sample is not a dictionary")
	}
	ns, ok := number(root["elapsed_ns"])
	if !ok || ns <= 0 {
		return nil, 0, errors.New("powermetrics: no elapsed_ns in the sample")
	}
	elapsed := time.Duration(ns)
	proc, _ := root["processor"].(map[string]any)
	if proc == nil {
		return nil, 0, errors.New("powermetrics: no processor dictionary (run with --samplers cpu_power,gpu_power)")
	}
	if pm.total == nil {
		pm.total = map[string]float64{}
	}
	var pts []Point
	for _, d := range []struct{ dev, key string }{{"cpu", "cpu_energy"}, {"gpu", "gpu_energy"}, {"ane", "ane_energy"}} {
		mj, ok := number(proc[d.key])
		if !ok {
			continue
		}
		j := mj / 1000
		pm.total[d.dev] += j
		pts = append(pts, Point{Device: d.dev, Metric: PowerW, Value: j / elapsed.Seconds()}, Point{Device: d.dev, Metric: EnergyJ, Value: pm.total[d.dev]})
	}
	if len(pts) == 0 {
		return nil, 0, errors.New("powermetrics: no cpu_energy, gpu_energy or ane_energy in the processor dictionary")
	}
	if gpu, _ := root["gpu"].(map[string]any); gpu != nil {
		if hz, ok := number(gpu["freq_hz"]); ok {
			pts = append(pts, Point{Device: "gpu", Metric: ClockSMMHz, Value: hz / 1e6})
		}
		if idle, ok := number(gpu["idle_ratio"]); ok {
			pts = append(pts, Point{Device: "gpu", Metric: UtilPct, Value: 100 * (1 - idle)})
		}
	}
	clusters, _ := proc["clusters"].([]any)
	for _, c := range clusters {
		cm, _ := c.(map[string]any)
		name, _ := cm["name"].(string)
		if hz, ok := number(cm["freq_hz"]); ok && name != "" {
			pts = append(pts, Point{Device: name, Metric: FreqMHz, Value: hz / 1e6})
		}
	}
	if tp, ok := root["thermal_pressure"].(string); ok {
		hot := 0.0
		if !strings.EqualFold(tp, "Nominal") {
			hot = 1
		}
		pts = append(pts, Point{Device: "gpu", Metric: ThrottleHot, Value: hot})
	}
	return pts, elapsed, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// decodePlist reads an XML property list into maps, slices, strings, int64, float64 and bool
// (data and date values are kept as their text).
func decodePlist(doc []byte) (any, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err != nil {
			if err == io.EOF {
				return nil, errors.New("no <plist> element")
			}
			return nil, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "plist" {
				return nil, fmt.Errorf("<%s> where <plist> was expected", se.Name.Local)
			}
			v, end, err := plistValue(d, 0)
			if err != nil {
				return nil, err
			}
			if end {
				return nil, errors.New("an empty <plist>")
			}
			return v, nil
		}
	}
}

// plistValue reads the next value; end reports the closing tag of the enclosing element.
func plistValue(d *xml.Decoder, depth int) (v any, end bool, err error) {
	if depth > 32 {
		return nil, false, errors.New("nested more than 32 deep")
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, false, err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil, true, nil
		case xml.StartElement:
			return plistElement(d, t.Name.Local, depth)
		}
	}
}

func plistElement(d *xml.Decoder, name string, depth int) (any, bool, error) {
	switch name {
	case "dict":
		m := map[string]any{}
		for {
			k, end, err := plistValue(d, depth+1)
			if err != nil || end {
				return m, false, err
			}
			key, ok := k.(plistKey)
			if !ok {
				return nil, false, errors.New("a <dict> value without its <key>")
			}
			val, end, err := plistValue(d, depth+1)
			if err != nil {
				return nil, false, err
			}
			if end {
				return nil, false, fmt.Errorf("key %q without a value", string(key))
			}
			m[string(key)] = val
		}
	case "array":
		a := []any{}
		for {
			val, end, err := plistValue(d, depth+1)
			if err != nil || end {
				return a, false, err
			}
			a = append(a, val)
		}
	case "true", "false":
		if err := d.Skip(); err != nil {
			return nil, false, err
		}
		return name == "true", false, nil
	}
	var text string
	if err := d.DecodeElement(&text, &xml.StartElement{Name: xml.Name{Local: name}}); err != nil {
		return nil, false, err
	}
	text = strings.TrimSpace(text)
	switch name {
	case "key":
		return plistKey(text), false, nil
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("<integer>%s</integer>: not an integer", clip(text))
		}
		return n, false, nil
	case "real":
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, false, fmt.Errorf("<real>%s</real>: not a number", clip(text))
		}
		return x, false, nil
	case "string", "date", "data":
		return text, false, nil
	}
	return nil, false, fmt.Errorf("<%s>: not a property list element", name)
}

type plistKey string
