package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/runner/gguf"
)

// cmdAnalyze runs one derived-figure calculation on numbers given on the command line:
//
//	sparkbench analyze crossing --line 70 --points 0:92.1,4096:75.3,8192:68.0
//	sparkbench analyze slope --points 0:92.83,8192:66.97
//	sparkbench analyze ceiling --bandwidth 220 --model FILE | --active-bytes N [--observed T]
func cmdAnalyze(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fprintf(stderr, "sparkbench analyze: want crossing, slope or ceiling (e.g. sparkbench analyze crossing --line 70 --points 0:92.1,4096:75.3)\n")
		return 2
	}
	switch args[0] {
	case "crossing":
		return analyzeCrossing(args[1:], stdout, stderr)
	case "slope":
		return analyzeSlope(args[1:], stdout, stderr)
	case "ceiling":
		return analyzeCeiling(args[1:], stdout, stderr)
	}
	fprintf(stderr, "sparkbench analyze: unknown figure %q; want crossing, slope or ceiling\n", args[0])
	return 2
}

// parsePoints reads "0:92.1,4096:75.3".
func parsePoints(s string) ([]analysis.Point, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--points is empty; give depth:value pairs such as 0:92.1,4096:75.3")
	}
	var pts []analysis.Point
	for i, part := range strings.Split(s, ",") {
		x, y, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("--points item %d %q: want depth:value, e.g. 4096:75.3", i+1, part)
		}
		fx, err1 := strconv.ParseFloat(x, 64)
		fy, err2 := strconv.ParseFloat(y, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("--points item %d %q: both sides must be numbers", i+1, part)
		}
		if err := analysis.CheckRatePoint(analysis.Point{X: fx, Y: fy}); err != nil {
			return nil, fmt.Errorf("--points item %d %q: %v", i+1, part, err)
		}
		pts = append(pts, analysis.Point{X: fx, Y: fy})
	}
	return pts, nil
}

func printJSON(stdout, stderr io.Writer, name string, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", name, err)
		return 1
	}
	return 0
}

func analyzeCrossing(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("analyze crossing", stderr)
	line := fs.Float64("line", 0, "the line in t/s (e.g. 70)")
	points := fs.String("points", "", "depth:value pairs, e.g. 0:92.1,4096:75.3,8192:68.0")
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseInterspersed(fs, args); err != nil {
		return usageError(err)
	} else if !flagsOnly("analyze crossing", pos, stderr) {
		return 2
	}
	if !(*line > 0) || math.IsInf(*line, 0) {
		fprintf(stderr, "sparkbench analyze crossing: --line must be a positive t/s, e.g. --line 70\n")
		return 2
	}
	pts, err := parsePoints(*points)
	if err != nil {
		fprintf(stderr, "sparkbench analyze crossing: %v\n", err)
		return 2
	}
	c, err := analysis.CrossingDepth(pts, *line)
	if err != nil {
		fprintf(stderr, "sparkbench analyze crossing: %v\n", err)
		return 2
	}
	if *asJSON {
		return printJSON(stdout, stderr, "analyze crossing", c)
	}
	fprintf(stdout, "%s\n", c)
	return 0
}

func analyzeSlope(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("analyze slope", stderr)
	points := fs.String("points", "", "depth:value pairs; the first depth is the reference")
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseInterspersed(fs, args); err != nil {
		return usageError(err)
	} else if !flagsOnly("analyze slope", pos, stderr) {
		return 2
	}
	pts, err := parsePoints(*points)
	if err == nil && len(pts) < 2 {
		err = fmt.Errorf("--points needs at least two depths")
	}
	if err != nil {
		fprintf(stderr, "sparkbench analyze slope: %v\n", err)
		return 2
	}
	s, err := analysis.DepthSlopes(pts)
	if err != nil {
		fprintf(stderr, "sparkbench analyze slope: %v\n", err)
		return 2
	}
	if *asJSON {
		return printJSON(stdout, stderr, "analyze slope", s)
	}
	for _, p := range s {
		fprintf(stdout, "d%-8g %+.1f%%\n", p.Depth, p.Slope*100)
	}
	return 0
}

// ceilingReport is analyze ceiling's result.
type ceilingReport struct {
	BandwidthGBs      float64  `json:"bandwidth_gbs"`
	Model             string   `json:"model,omitempty"`
	HouseActiveBytes  float64  `json:"house_active_bytes,omitempty"`
	HouseCeiling      float64  `json:"house_ceiling_tps,omitempty"`
	ExactActiveBytes  float64  `json:"tensor_exact_active_bytes"`
	ExactCeiling      float64  `json:"tensor_exact_ceiling_tps"`
	Observed          float64  `json:"observed_tps,omitempty"`
	HouseEfficiency   *float64 `json:"house_efficiency,omitempty"`
	ExactEfficiency   *float64 `json:"tensor_exact_efficiency,omitempty"`
	ActiveBytesSource string   `json:"active_bytes_source"`
}

func analyzeCeiling(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("analyze ceiling", stderr)
	bw := fs.Float64("bandwidth", 0, "memory bandwidth in GB/s (1e9 bytes/s)")
	model := fs.String("model", "", "GGUF file: active bytes per token from its tensor table (both conventions)")
	active := fs.Float64("active-bytes", 0, "active bytes per token, when no model file is at hand")
	observed := fs.Float64("observed", 0, "observed tg in t/s: also print the efficiency")
	asJSON := fs.Bool("json", false, "print JSON")
	if pos, err := parseInterspersed(fs, args); err != nil {
		return usageError(err)
	} else if !flagsOnly("analyze ceiling", pos, stderr) {
		return 2
	}
	fail := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench analyze ceiling: "+format+"\n", a...)
		return 2
	}
	if !(*bw > 0) || math.IsInf(*bw, 0) {
		return fail("--bandwidth must be a positive GB/s, e.g. --bandwidth 220")
	}
	if !(*observed >= 0) || math.IsInf(*observed, 0) {
		return fail("--observed must be a rate in t/s, 0 or more (e.g. --observed 21.5)")
	}
	if (*model == "") == (*active == 0) {
		return fail("give exactly one of --model FILE or --active-bytes N")
	}
	rep := ceilingReport{BandwidthGBs: *bw, Observed: *observed}
	if *model != "" {
		f, err := gguf.ReadFile(*model)
		if err != nil {
			return fail("%v", err)
		}
		rep.Model = *model
		rep.ExactActiveBytes = float64(f.ActiveBytesPerToken())
		rep.HouseActiveBytes = f.HouseActiveBytesPerToken()
		rep.ActiveBytesSource = "GGUF tensor table"
		if c, err := analysis.CeilingTPS(*bw, rep.HouseActiveBytes); err == nil {
			rep.HouseCeiling = c
		}
	} else {
		if !(*active > 0) || math.IsInf(*active, 0) {
			return fail("--active-bytes must be a positive number of bytes")
		}
		rep.ExactActiveBytes = *active
		rep.ActiveBytesSource = "--active-bytes"
	}
	c, err := analysis.CeilingTPS(*bw, rep.ExactActiveBytes)
	if err != nil {
		return fail("%v", err)
	}
	rep.ExactCeiling = c
	if *observed > 0 {
		e, _ := analysis.Efficiency(*observed, rep.ExactCeiling)
		rep.ExactEfficiency = &e
		if rep.HouseCeiling > 0 {
			h, _ := analysis.Efficiency(*observed, rep.HouseCeiling)
			rep.HouseEfficiency = &h
		}
	}
	if *asJSON {
		return printJSON(stdout, stderr, "analyze ceiling", rep)
	}
	if rep.HouseCeiling > 0 {
		fprintf(stdout, "house convention:  %.4g bytes/token -> %.1f t/s at %g GB/s\n", rep.HouseActiveBytes, rep.HouseCeiling, *bw)
	}
	fprintf(stdout, "tensor-exact:      %.4g bytes/token -> %.1f t/s at %g GB/s\n", rep.ExactActiveBytes, rep.ExactCeiling, *bw)
	if rep.ExactEfficiency != nil {
		fprintf(stdout, "efficiency:        %.1f%% of the tensor-exact ceiling", *rep.ExactEfficiency*100)
		if rep.HouseEfficiency != nil {
			fprintf(stdout, ", %.1f%% of the house ceiling", *rep.HouseEfficiency*100)
		}
		fprintf(stdout, "\n")
	}
	return 0
}
