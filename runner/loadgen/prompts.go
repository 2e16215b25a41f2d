package loadgen

import (
	"fmt"
	"strconv"
	"strings"

	"sparkbench/runner/jsonlex"
	"sparkbench/runner/promptset"
)

// SchemaPrompts identifies version 1 of the prompt plan format.
const SchemaPrompts = "sparkbench.prompts/v1"

// PromptPlan is the fixed, checksummed list of prompts a capacity study sends: request n gets
// Prefix with every "{n}" replaced by n, then Body. The numbered prefix makes every prompt of a
// server lifetime unique, so no request can reuse another's KV cache even where the server
// ignores cache_prompt. Its identity is the SHA-256 of the file's bytes (the plan's
// prompt_plan.sha256).
//
//	{"schema": "sparkbench.prompts/v1", "note": "free text",
//	 "prefix": "Request {n}. ", "body": "Summarise the following paragraph …"}
type PromptPlan struct {
	Schema string `json:"schema"`
	Note   string `json:"note,omitempty"`
	Prefix string `json:"prefix"` // must contain "{n}"
	Body   string `json:"body"`
}

// Prompt is the text of request n.
func (p *PromptPlan) Prompt(n int) string {
	return strings.ReplaceAll(p.Prefix, "{n}", strconv.Itoa(n)) + p.Body
}

// DecodePromptPlan reads a prompt plan strictly (unknown fields are errors). name is used in
// messages only.
func DecodePromptPlan(name string, data []byte) (*PromptPlan, error) {
	var p PromptPlan
	switch e := jsonlex.DecodeStrict(data, &p); {
	case e == nil:
	case e.Kind == jsonlex.StrictEmpty:
		return nil, fmt.Errorf("%s: empty file; want {\"schema\":%q,\"prefix\":\"Request {n}. \",\"body\":\"…\"}", name, SchemaPrompts)
	case e.Kind == jsonlex.StrictTrailing:
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
	default:
		return nil, fmt.Errorf("%s: %w", name, e.Err)
	}
	switch {
	case p.Schema != SchemaPrompts:
		return nil, fmt.Errorf("%s: schema %q: want %q", name, p.Schema, SchemaPrompts)
	case !strings.Contains(p.Prefix, "{n}"):
		return nil, fmt.Errorf("%s: prefix %q has no {n}: every request needs its own numbered prefix (e.g. \"Request {n}. \")", name, p.Prefix)
	}
	return &p, nil
}

// LoadPromptPlan reads a prompt plan file and checks its SHA-256 against want (when not empty).
// It returns the plan and the file's SHA-256.
func LoadPromptPlan(path, want string) (*PromptPlan, string, error) {
	data, got, err := promptset.ReadPinned(path, want, 64<<20, "prompt plan")
	if err != nil {
		return nil, got, err
	}
	p, err := DecodePromptPlan(path, data)
	if err != nil {
		return nil, got, err
	}
	return p, got, nil
}
