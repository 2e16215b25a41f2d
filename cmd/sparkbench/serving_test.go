package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/capacity"
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

// TestCapacityValidateRefusesLongConversation: `capacity validate` on the multi-turn example
// with a conversation file one of whose conversations cannot fit ctx_per_slot (1024) refuses
// the plan (exit 2), naming that conversation by file:line, id and turn; a malformed line of
// the file is refused as file:line.
func TestCapacityValidateRefusesLongConversation(t *testing.T) {
	dir := t.TempDir()
	examples, _ := filepath.Abs(filepath.Join("..", "..", "docs", "examples"))
	long := strings.Repeat("tell me more ", 90)
	write := func(name, body string) string {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", sha256.Sum256([]byte(body)))
	}
	plan := func(conv, sha string) string {
		b, err := os.ReadFile(filepath.Join(examples, "serving-multi-turn.json"))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), `"../../testdata/models/`, `"`+filepath.Join(examples, "..", "..", "testdata", "models")+`/`)
		s = strings.ReplaceAll(s, `"serving-prompts.json"`, `"`+filepath.Join(examples, "serving-prompts.json")+`"`)
		s = strings.ReplaceAll(s, `"serving-conversations.jsonl", "sha256": "a8c67a3ef7c3fbd5776a03824dbc8cbf820be45f996cb471dead0c85311d471e"`, `"`+conv+`", "sha256": "`+sha+`"`)
		path := filepath.Join(dir, "plan-"+conv+".json")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sha := write("conv.jsonl", `{"id": "short", "turns": [{"user": "Hi", "assistant": "Hello"}, {"user": "Bye"}]}
{"id": "long", "turns": [{"user": "`+long+`", "assistant": "Sure."}, {"user": "`+long+`"}]}
`)
	code, stdout, stderr := runCapacity("validate", plan("conv.jsonl", sha))
	if code != 2 || !strings.Contains(stdout+stderr, `1 conversations cannot fit a slot's context (ctx_per_slot 1024)`) || !strings.Contains(stdout+stderr, `the longest is conv.jsonl:2 (conversation "long") turn 2: at least`) {
		t.Errorf("too long: %d %q %q", code, stdout, stderr)
	}
	sha = write("bad.jsonl", "{\"turns\": [{\"user\": \"Hi\"}]}\n{\"turns\": [{\"user\": \"Hi\", \"assistant\": \"Yo\"}, {\"usr\": \"x\"}]}\n")
	code, stdout, stderr = runCapacity("validate", plan("bad.jsonl", sha))
	if code != 2 || !strings.Contains(stdout+stderr, `bad.jsonl:2: unknown field "usr"`) {
		t.Errorf("malformed: %d %q %q", code, stdout, stderr)
	}
}

// TestCapacityPresets: `capacity presets` lists every SLO preset with its figures and source,
// as text and as JSON, and refuses an argument.
func TestCapacityPresets(t *testing.T) {
	code, out, errOut := runCapacity("presets")
	if code != 0 || !strings.Contains(out, "guidellm-chat                  TTFT ≤ 200 ms, TPOT ≤ 50 ms at p99\n") ||
		!strings.Contains(out, "MLPerf Inference, Llama 2 70B, Interactive scenario") {
		t.Errorf("presets: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCapacity("presets", "--json")
	var ps []capacity.SLOPreset
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps) != len(capacity.SLOPresets()) || ps[3].Name != "guidellm-rag" || ps[3].E2EMs != 3000 {
		t.Errorf("presets --json: %d %s", code, out)
	}
	if code, _, errOut := runCapacity("presets", "x"); code != 2 || !strings.Contains(errOut, `takes no argument (got "x")`) {
		t.Errorf("presets x: %d %q", code, errOut)
	}
}
