package main

import (
	"encoding/json"
	"io"

	"sparkbench/runner/atomicfile"
	"sparkbench/runner/fsread"
	"sparkbench/runner/promptset"
)

const servingUsage = "serving convert-sharegpt IN OUT [--as conversations|prompts] [--json]"

// cmdServing holds the serving workloads' file tools (docs/serving.md).
func cmdServing(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fprintf(stderr, "sparkbench serving: want a verb: `sparkbench %s`\n", servingUsage)
		return 2
	}
	switch args[0] {
	case "convert-sharegpt":
		return servingConvertShareGPT(args[1:], stdout, stderr)
	}
	fprintf(stderr, "sparkbench serving: unknown verb %q; want convert-sharegpt\n", args[0])
	return 2
}

// servingConvertShareGPT writes a ShareGPT-style file as the JSONL conversation schema (the
// multi_turn workload's) or as a prompt set (each conversation's first user message), and
// says what it kept and skipped. A malformed entry refuses the file (exit 1), naming it.
func servingConvertShareGPT(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serving convert-sharegpt", stderr)
	as := fs.String("as", "conversations", "what to write: conversations (the multi_turn workload's JSONL) or prompts (a prompt set of each conversation's first user message)")
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 2 || (*as != "conversations" && *as != "prompts") {
		fprintf(stderr, "sparkbench serving convert-sharegpt: want IN and OUT files and --as conversations or prompts: `sparkbench %s`\n", servingUsage)
		return 2
	}
	in, out := pos[0], pos[1]
	data, err := fsread.ReadFile(in, 1<<30, "a ShareGPT file")
	if err != nil {
		fprintf(stderr, "sparkbench serving convert-sharegpt: %v\n", err)
		return 1
	}
	cs, counts, err := promptset.ConvertShareGPT(in, data)
	if err != nil {
		fprintf(stderr, "sparkbench serving convert-sharegpt: %v\n", err)
		return 1
	}
	body := promptset.EncodeConversations(cs)
	if *as == "prompts" {
		body = promptset.EncodePromptSet(promptset.FirstPrompts(cs))
	}
	if err := atomicfile.WriteFile(out, body, 0o644); err != nil {
		fprintf(stderr, "sparkbench serving convert-sharegpt: write %s: %v\n", out, err)
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(struct {
			In     string                  `json:"in"`
			Out    string                  `json:"out"`
			As     string                  `json:"as"`
			Counts promptset.ConvertCounts `json:"counts"`
		}{in, out, *as, counts}, "", "  ")
		fprintf(stdout, "%s\n", b)
		return 0
	}
	w, flush := escaped(stdout)
	defer flush()
	fprintf(w, "%s: %s; wrote %s (%s)\n", in, counts, out, *as)
	return 0
}
