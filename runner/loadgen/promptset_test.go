package loadgen

import (
	"context"
	"net/http"
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

// TestTokenizeAndOwnLengths: /tokenize gives the server's count (the fake: one token a word),
// a non-loopback URL is refused, and NPredictOf gives each request its own n_predict (the
// fake streams as many tokens as a request asks for).
func TestTokenizeAndOwnLengths(t *testing.T) {
	f, err := StartFake(FakeConfig{WordTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := Tokenize(context.Background(), &http.Client{}, f.URL, "one two three")
	if err != nil || n != 3 {
		t.Fatalf("tokenize: %d, %v; want 3", n, err)
	}
	if _, err := Tokenize(context.Background(), &http.Client{}, "http://192.0.2.1:80", "x"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a remote URL: %v", err)
	}
	own := []int{3, 5, 2, 4}
	rs := collect(Start(context.Background(), Config{URL: f.URL, Clients: 1, Warmups: 1, Measured: 3, NPredict: 9, Prompt: func(i int) string { return "p" },
		NPredictOf: func(i int) int { return own[i] }}))
	for _, r := range rs {
		if !r.OK() || r.Tokens != own[r.Index] {
			t.Errorf("request %d: ok %v, %d tokens; want %d", r.Index, r.OK(), r.Tokens, own[r.Index])
		}
	}
	if len(rs) != len(own) {
		t.Errorf("%d results, want %d", len(rs), len(own))
	}
	a := Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: 1, NPredict: 9, Prompt: func(int) string { return "p" }, NPredictOf: func(int) int { return 0 }})
	if rs := collect(a); len(rs) != 1 || !strings.Contains(rs[0].Error, "n_predict 0 of request 0") {
		t.Errorf("n_predict 0 from NPredictOf: %+v", rs)
	}
}
