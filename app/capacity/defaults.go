package capacity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sparkbench/runner/atomicfile"
)

// DefaultPromptPlanFile is the name the built-in prompt plan is written under, beside the plans
// that use it.
const DefaultPromptPlanFile = "prompts-default.json"

// DefaultPromptPlan is the built-in prompt plan (sparkbench.prompts/v1) that studies built in
// the window use unless the user picks one: a numbered prefix (no request can reuse another's
// prompt cache) and a short, fixed paragraph to summarise.
var DefaultPromptPlan = []byte(`{"schema": "sparkbench.prompts/v1", "note": "sparkbench built-in prompt plan v1", "prefix": "Request {n}. ", "body": "Summarise the following paragraph in one sentence. A small workshop measures how fast a local language model answers when several people use it at once. They start one server, send the same kind of request from a growing number of clients, and write down how long the first word takes and how many words per second come back."}` + "\n")

// DefaultPromptPlanRef is the built-in prompt plan's reference, relative to the plan's folder.
func DefaultPromptPlanRef() FileRef {
	sum := sha256.Sum256(DefaultPromptPlan)
	return FileRef{Path: DefaultPromptPlanFile, SHA256: hex.EncodeToString(sum[:])}
}

// WriteDefaultPromptPlan writes the built-in prompt plan into dir (a plans folder) unless it is
// there already. A file of that name with other bytes is left alone and reported: it is not
// the built-in plan, and a plan naming it would not verify.
func WriteDefaultPromptPlan(dir string) (string, error) {
	path := filepath.Join(dir, DefaultPromptPlanFile)
	got, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(got, DefaultPromptPlan):
		return path, nil
	case err == nil:
		return "", fmt.Errorf("%s exists with other contents than the built-in prompt plan: move it away (plans that name it by SHA-256 keep working from their own copy) and register again", path)
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// 0600 is the mode this file has always been written with (os.CreateTemp's).
	if err := atomicfile.WriteFile(path, DefaultPromptPlan, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
