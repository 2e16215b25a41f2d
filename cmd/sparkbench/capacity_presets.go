package main

import (
	"encoding/json"
	"io"

	"sparkbench/app/capacity"
)

// capacityPresets is `sparkbench capacity presets [--json]`: the named SLO presets a serving
// plan may use (serving.slo.preset, with the preset's figures written beside it), each with
// its public source.
func capacityPresets(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("capacity presets", stderr)
	asJSON := fs.Bool("json", false, "print the presets as JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) > 0 {
		fprintf(stderr, "sparkbench capacity presets: takes no argument (got %q)\n", pos[0])
		return 2
	}
	ps := capacity.SLOPresets()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ps); err != nil {
			fprintf(stderr, "sparkbench capacity presets: %v\n", err)
			return 1
		}
		return 0
	}
	for _, p := range ps {
		fprintf(stdout, "%-30s %s\n%30s %s, %s\n", p.Name, p.Limits(), "", p.Source, p.URL)
	}
	fprintf(stdout, "A serving plan names one as serving.slo.preset and writes its figures beside it (docs/serving.md).\n")
	return 0
}
