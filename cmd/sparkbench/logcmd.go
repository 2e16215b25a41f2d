package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"sparkbench/runner/devlog"
	"sparkbench/runner/fsread"
	"sparkbench/runner/vocab"
)

const logUsage = "log inspect FILE [--json]"

// maxLogFile bounds the log a `log inspect` reads (llama-server logs of long sessions run to
// tens of MiB; the scanner keeps only the last load block and bounded lists).
const maxLogFile = 1 << 30

// cmdLog: sparkbench log inspect FILE [--json] — what a llama.cpp log (llama-server,
// llama-cli, llama-bench -v, any generation) says about devices, offload, per-device memory and
// generation timings: the evidence the device gates read.
func cmdLog(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "inspect" {
		fprintf(stderr, "sparkbench log: want `sparkbench %s`\n", logUsage)
		return 2
	}
	fs := newFlagSet("log inspect", stderr)
	asJSON := fs.Bool("json", false, "print everything the log says as JSON")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench log inspect: want exactly one log file, got %d arguments\n", len(pos))
		return 2
	}
	f, _, err := fsread.OpenRegular(pos[0])
	if err != nil {
		fprintf(stderr, "sparkbench log inspect: %v\n", err)
		return 2
	}
	defer f.Close()
	lg, err := devlog.ScanReader(io.LimitReader(f, maxLogFile), nil)
	if err != nil {
		fprintf(stderr, "sparkbench log inspect: %s: %v\n", pos[0], err)
		return 2
	}
	if saysNothing(lg) {
		fprintf(stderr, "sparkbench log inspect: %s: found no llama.cpp log in its %d lines (no model load block, device, buffer, offload or timing line); give the log of a llama-server, llama-cli or llama-bench -v run\n", pos[0], lg.Lines)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(lg); err != nil {
			fprintf(stderr, "sparkbench log inspect: %v\n", err)
			return 1
		}
		return 0
	}
	printLog(stdout, pos[0], lg)
	return 0
}

func printLog(w io.Writer, name string, lg devlog.Log) {
	ev := lg.Evidence
	fprintf(w, "%s: %d lines", name, lg.Lines)
	if ev.Loads > 0 {
		fprintf(w, ", %d model load block(s), the last from line %d", ev.Loads, ev.BlockLine)
	}
	fprintf(w, "\n")
	if len(ev.Devices) == 0 {
		fprintf(w, "devices: none named\n")
	}
	for _, d := range ev.Devices {
		mem := ""
		switch {
		case d.TotalMiB > 0:
			mem = fmt.Sprintf(" (%g MiB, %g MiB free)", d.TotalMiB, d.FreeMiB)
		case d.FreeMiB > 0:
			mem = fmt.Sprintf(" (%g MiB free)", d.FreeMiB)
		}
		sel := ""
		if d.Selected {
			sel = ", selected"
		}
		fprintf(w, "device %s: %s%s%s (line %d)\n", d.Name, d.Description, mem, sel, d.Line)
	}
	if n, of, ok := ev.OffloadedLayers(); ok {
		fprintf(w, "offloaded: %d/%d layers to GPU\n", n, of)
	} else {
		fprintf(w, "offloaded: the log does not say\n")
	}
	used := ev.DevicesUsed()
	if len(used) == 0 {
		fprintf(w, "memory: no buffer or memory breakdown line\n")
	}
	for _, d := range used {
		mib, _ := ev.PeakDeviceMiB(d)
		var kinds []string
		byKind := map[string]float64{}
		for _, b := range ev.Buffers {
			if vocab.DeviceOf(b.Device) == d {
				if _, ok := byKind[b.Kind]; !ok {
					kinds = append(kinds, b.Kind)
				}
				byKind[b.Kind] += b.MiB
			}
		}
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s %.2f", k, byKind[k])
		}
		fprintf(w, "memory %s: peak %.2f MiB (buffers: %s)\n", d, mib, strings.Join(parts, ", "))
	}
	for _, r := range ev.Breakdown {
		cols := make([]string, 0, len(r.MiB))
		for k := range r.MiB {
			cols = append(cols, k)
		}
		sort.Strings(cols)
		for i, k := range cols {
			cols[i] = fmt.Sprintf("%s %g", k, r.MiB[k])
		}
		fprintf(w, "breakdown %s: %s (line %d)\n", r.Device, strings.Join(cols, ", "), r.Line)
	}
	for _, t := range lg.Timings {
		fprintf(w, "timing (%s, line %d): prompt %d tokens at %.2f t/s, generation %d tokens at %.2f t/s\n",
			t.Source, t.Line, t.PromptTokens, t.PromptTPS, t.GenTokens, t.GenTPS)
	}
	if lg.TimingsOmitted > 0 {
		fprintf(w, "timings: %d more not listed\n", lg.TimingsOmitted)
	}
}

// saysNothing reports whether the scan recognised no line of a llama.cpp log at all: then the
// file is not one, and "devices: none named" would pass it off as a log that names none.
func saysNothing(lg devlog.Log) bool {
	ev := lg.Evidence
	return ev.Loads == 0 && len(ev.Layers) == 0 && len(ev.Buffers) == 0 && ev.Offloaded == nil &&
		len(ev.Devices) == 0 && len(ev.Breakdown) == 0 && len(lg.Timings) == 0 && lg.TimingsOmitted == 0
}
