package app

import (
	"context"

	"sparkbench/runner/hashing"
)

// ModelStatus is a model file's hash state: its computed SHA-256 (empty until hashed), the
// SHA-256 its source publishes (empty until entered) and the status they give.
type ModelStatus struct {
	Path      string         `json:"path"`
	SHA256    string         `json:"sha256"`
	Expected  string         `json:"expected_sha256"`
	Status    hashing.Status `json:"status"` // PENDING, VERIFIED or MISMATCH
	FromCache bool           `json:"from_cache"`
	Source    string         `json:"source,omitempty"`   // where it came from, e.g. "unsloth/Qwen3-30B-A3B-GGUF"
	Revision  string         `json:"revision,omitempty"` // the source's revision
}

// ModelLibrary hashes model files and remembers hashes and expected hashes (the CLI and the
// window wire it to the notebook, keyed by path, size, mtime, device and inode).
type ModelLibrary interface {
	// Status reads what is known without hashing: an unchanged, hashed file keeps its hash.
	Status(ctx context.Context, path string) (ModelStatus, error)
	// Hash streams the file through SHA-256 unless an unchanged file's hash is cached.
	Hash(ctx context.Context, path string, progress func(hashing.Progress)) (ModelStatus, error)
	// SetExpected records the SHA-256 the source publishes and returns the new status.
	SetExpected(ctx context.Context, path, sha256 string) (ModelStatus, error)
	// SetSource records where the file came from and at which revision.
	SetSource(ctx context.Context, path, source, revision string) (ModelStatus, error)
}
