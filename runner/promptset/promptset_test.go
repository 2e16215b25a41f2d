package promptset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodePromptSet(t *testing.T) {
	items, err := DecodePromptSet("set.jsonl", []byte("{\"prompt\": \"a b\"}\r\n{\"prompt\": \"c\", \"n_predict\": 4}\n"))
	if err != nil || len(items) != 2 || items[1].NPredict != 4 || items[1].Line != 2 || items[0].Prompt != "a b" {
		t.Fatalf("items %+v, err %v", items, err)
	}
	bad := map[string]string{
		"{\"prompt\": \"a\"}\n{\"prompt\": \"b\"\n":                   "set.jsonl:2: ",
		"{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\"}\n":                "set.jsonl:2: blank line",
		"{\"prompt\": \"a\", \"role\": \"user\"}\n":                   "set.jsonl:1: unknown field \"role\"",
		"{\"prompt\": \"\"}\n":                                        "set.jsonl:1: no prompt",
		"{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"n_predict\": -1}": "set.jsonl:2: n_predict -1",
		"{\"prompt\": 7}\n":                                           "set.jsonl:1: ",
		"":                                                            "set.jsonl: no prompts",
	}
	for in, want := range bad {
		if _, err := DecodePromptSet("set.jsonl", []byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", in, err, want)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "set.jsonl")
	if err := os.WriteFile(path, []byte("{\"prompt\": \"x\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadPromptSet(path, strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "changed since the plan was written") {
		t.Errorf("a prompt set with another hash: %v", err)
	}
}
