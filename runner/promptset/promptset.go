// Package promptset reads the files a serving workload is made of: JSONL prompt sets
// (docs/serving.md) and any file pinned by its SHA-256. It starts no process.
package promptset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"sparkbench/runner/fsread"
	"sparkbench/runner/jsonlex"
)

// PromptItem is one line of a JSONL prompt set (docs/serving.md): the prompt's text and,
// optionally, the number of tokens to generate for it (0: the plan's n_predict or output
// length distribution).
//
//	{"prompt": "Summarise the following paragraph …", "n_predict": 64}
type PromptItem struct {
	Prompt   string `json:"prompt"`
	NPredict int    `json:"n_predict,omitempty"`
	// Line is the item's 1-based line in its file.
	Line int `json:"-"`
}

// maxPromptSet bounds a prompt set file.
const maxPromptSet = 256 << 20

// DecodePromptSet reads a JSONL prompt set: one JSON object per line, each with a non-empty
// prompt; a malformed line is refused as name:line with what is wrong. A final newline is
// optional; blank lines are refused (they are usually a truncated or joined file).
func DecodePromptSet(name string, data []byte) ([]PromptItem, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: no prompts; want one JSON object a line, {\"prompt\": \"…\"}", name)
	}
	var out []PromptItem
	for n, line := range bytes.Split(data, []byte("\n")) {
		at := fmt.Sprintf("%s:%d", name, n+1)
		var it PromptItem
		switch e := jsonlex.DecodeStrict(bytes.TrimSuffix(line, []byte("\r")), &it); {
		case e == nil:
		case e.Kind == jsonlex.StrictEmpty:
			return nil, fmt.Errorf("%s: blank line; want one JSON object a line, {\"prompt\": \"…\"}", at)
		case e.Kind == jsonlex.StrictUnknown:
			return nil, fmt.Errorf("%s: unknown field %s; a line holds prompt and, optionally, n_predict", at, e.Field)
		default:
			return nil, fmt.Errorf("%s: %s", at, e.Detail())
		}
		switch {
		case strings.TrimSpace(it.Prompt) == "":
			return nil, fmt.Errorf("%s: no prompt (want a non-empty \"prompt\")", at)
		case it.NPredict < 0 || it.NPredict > 1<<20:
			return nil, fmt.Errorf("%s: n_predict %d: want 1 to %d, or leave it out", at, it.NPredict, 1<<20)
		}
		it.Line = n + 1
		out = append(out, it)
	}
	return out, nil
}

// LoadPromptSet reads a JSONL prompt set file and checks its SHA-256 against want (when not
// empty); it returns the items and the file's SHA-256.
func LoadPromptSet(path, want string) ([]PromptItem, string, error) {
	data, got, err := ReadPinned(path, want, maxPromptSet, "prompt set")
	if err != nil {
		return nil, got, err
	}
	items, err := DecodePromptSet(path, data)
	return items, got, err
}

// ReadPinned reads a file of at most limit bytes and checks its SHA-256 against want (when
// not empty); it returns the bytes and the SHA-256. what names the file in messages.
func ReadPinned(path, want string, limit int64, what string) ([]byte, string, error) {
	data, err := fsread.ReadFile(path, limit, "a "+what)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", what, err)
	}
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	if want != "" && !strings.EqualFold(want, got) {
		return nil, got, fmt.Errorf("%s %s: SHA-256 is %s, the plan expects %s: the file changed since the plan was written", what, path, got, want)
	}
	return data, got, nil
}
