package ui

import (
	"context"
	"fmt"

	"sparkbench/app"
)

// modelFact is a column of a GGUF file's header facts, as the Models section and the New study
// forms' model tables show them.
type modelFact struct {
	title string
	width float32
	cell  func(m app.ModelEntry) string
}

// modelFacts are the header facts of a GGUF file: architecture, parameters, file type (the
// quantization), context, experts and size.
var modelFacts = []modelFact{
	{"Architecture", 100, func(m app.ModelEntry) string { return m.Architecture }},
	{"Params", 70, func(m app.ModelEntry) string { return app.HumanCount(m.Params) }},
	{"Type", 110, func(m app.ModelEntry) string { return m.FileType }},
	{"Context", 70, func(m app.ModelEntry) string { return fmt.Sprint(m.Context) }},
	{"Experts", 90, expertsText},
	{"Size", 90, func(m app.ModelEntry) string { return app.HumanBytes(m.Size) }},
}

func expertsText(m app.ModelEntry) string {
	if m.Experts == 0 {
		return "—"
	}
	return fmt.Sprintf("%d (%d used)", m.Experts, m.ExpertsUsed)
}

// hashStateText is a model's SHA-256 state in plain words: unreadable, being hashed, pending
// (not hashed, or no expected SHA-256), verified or mismatched. known: st was read.
func hashStateText(m app.ModelEntry, st app.ModelStatus, known, busy bool) string {
	if m.Err != "" {
		return "UNREADABLE: " + m.Err
	}
	switch {
	case busy:
		return "hashing…"
	case !known || st.SHA256 == "":
		if known && st.Expected != "" {
			return "PENDING — not hashed yet (expected " + short(st.Expected) + ")"
		}
		return "PENDING — not hashed yet"
	case st.Status == app.HashVerified:
		return "VERIFIED " + short(st.SHA256)
	case st.Status == app.HashMismatch:
		return "MISMATCH " + short(st.SHA256) + " ≠ expected " + short(st.Expected)
	default:
		return "PENDING — " + short(st.SHA256) + ", no expected SHA-256"
	}
}

// readStatuses reads the library's cached hash state of each path (no hashing); a path it
// cannot read is left out. It runs off the UI goroutine (the library touches the notebook).
func readStatuses(lib app.ModelLibrary, paths []string) map[string]app.ModelStatus {
	got := map[string]app.ModelStatus{}
	for _, p := range paths {
		if st, err := lib.Status(context.Background(), p); err == nil {
			got[p] = st
		}
	}
	return got
}
