package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/promptset"
)

// TestServingConvertShareGPT: the verb writes the conversation schema (or a prompt set) from the
// test's own small ShareGPT-style file, saying what it kept and skipped; a malformed entry
// refuses the file with its index and id, and writes nothing.
func TestServingConvertShareGPT(t *testing.T) {
	in := filepath.Join("..", "..", "runner", "promptset", "testdata", "sharegpt-small.json")
	dir := t.TempDir()
	out := filepath.Join(dir, "conv.jsonl")
	code, stdout, stderr := runCLI("serving", "convert-sharegpt", in, out)
	if code != 0 || !strings.Contains(stdout, "8 entries: 4 kept (7 turns), 4 skipped") || !strings.Contains(stdout, "1 with a system message") {
		t.Fatalf("convert: %d %q %q", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := promptset.DecodeConversations(out, data); err != nil || len(cs) != 4 {
		t.Errorf("written conversations: %d, %v", len(cs), err)
	}
	prompts := filepath.Join(dir, "p.jsonl")
	if code, stdout, _ = runCLI("serving", "convert-sharegpt", "--as", "prompts", "--json", in, prompts); code != 0 || !strings.Contains(stdout, `"kept": 4`) {
		t.Errorf("--as prompts --json: %d %q", code, stdout)
	}
	if data, err = os.ReadFile(prompts); err != nil {
		t.Fatal(err)
	}
	if items, err := promptset.DecodePromptSet(prompts, data); err != nil || len(items) != 4 {
		t.Errorf("written prompt set: %d, %v", len(items), err)
	}
	bad := filepath.Join("..", "..", "runner", "promptset", "testdata", "sharegpt-malformed.json")
	none := filepath.Join(dir, "none.jsonl")
	if code, _, stderr = runCLI("serving", "convert-sharegpt", bad, none); code != 1 || !strings.Contains(stderr, `entry 1 (id "bad-2"): message 0`) {
		t.Errorf("malformed: %d %q", code, stderr)
	}
	if _, err := os.Stat(none); err == nil {
		t.Error("a refused file wrote its output")
	}
	for _, args := range [][]string{{"serving"}, {"serving", "zz"}, {"serving", "convert-sharegpt", in}, {"serving", "convert-sharegpt", "--as", "csv", in, out}} {
		if code, _, stderr := runCLI(args...); code != 2 || !strings.HasPrefix(stderr, "sparkbench serving") {
			t.Errorf("%v: %d %q", args, code, stderr)
		}
	}
}
