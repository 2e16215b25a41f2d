package main

import (
	"encoding/json"
	"io"

	"sparkbench/runner/gguf"
)

func cmdModel(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "verify" {
		return modelVerify(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "inspect" {
		fprintf(stderr, "sparkbench model: want `sparkbench model inspect FILE [--json]` or `sparkbench model verify FILE [--expect SHA256]`\n")
		return 2
	}
	fs := newFlagSet("model inspect", stderr)
	asJSON := fs.Bool("json", false, "print every key and every tensor as JSON")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench model inspect: want exactly one GGUF file, got %d arguments\n", len(pos))
		return 2
	}
	f, err := gguf.ReadFile(pos[0])
	if err != nil {
		fprintf(stderr, "sparkbench model inspect: %v\n", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(f); err != nil {
			fprintf(stderr, "sparkbench model inspect: %v\n", err)
			return 1
		}
		return 0
	}
	if err := gguf.WriteText(stdout, f); err != nil {
		fprintf(stderr, "sparkbench model inspect: %v\n", err)
		return 1
	}
	return 0
}
