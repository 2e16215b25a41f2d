package quantrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sparkbench/app/quant"
	"sparkbench/runner/atomicfile"
	"sparkbench/store"
)

// The derived-model cache (docs/quant.md): DATA/quant-cache/KEY.gguf, the file, and
// KEY.json, its provenance. A file is reused only when its provenance says what the key says
// and the file still hashes to the SHA-256 recorded when it was made; one that does not is
// moved aside (KEY.gguf.stale-TIME), never overwritten, and made again.

// Derived is a cache entry's provenance: the key, the parent (reference) SHA-256, the quant
// type, the importance matrix's SHA-256 ("" for none), the llama-quantize build, the file's
// SHA-256 and size when made, the exact argv and when.
type Derived struct {
	Schema  string `json:"schema"`
	Key     string `json:"cache_key"`
	Parent  string `json:"parent_sha256"`
	Type    string `json:"type"`
	Imatrix string `json:"imatrix_sha256"`
	// Calibration is an importance matrix's calibration text (Type "imatrix").
	Calibration string   `json:"calibration_sha256,omitempty"`
	Build       string   `json:"build"`
	SHA256      string   `json:"sha256"`
	Bytes       int64    `json:"bytes"`
	Argv        []string `json:"argv"`
	CreatedAt   string   `json:"created_at"`
}

const schemaDerived = "sparkbench.quant-derived/v1"

// typeImatrix is the Type of a cached importance matrix.
const typeImatrix = "imatrix"

func cachePaths(dir, key string) (gguf, meta string) {
	return filepath.Join(dir, key+".gguf"), filepath.Join(dir, key+".json")
}

// lookup finds key's entry: ok with its provenance when the file is there and hashes as
// recorded; otherwise stale names the file that is there and cannot be trusted (no provenance,
// another key's, or another SHA-256 than recorded), which derive sets aside. It changes
// nothing.
func (e *engine) lookup(key string) (d Derived, ok bool, stale string, err error) {
	gguf, meta := cachePaths(e.cacheDir, key)
	if _, serr := os.Stat(gguf); serr != nil {
		return d, false, "", nil
	}
	b, err := os.ReadFile(meta)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return d, false, "", err
	}
	if err != nil || json.Unmarshal(b, &d) != nil || d.Key != key {
		return d, false, gguf, nil
	}
	sum, err := e.hash(gguf)
	if err != nil {
		return d, false, "", err
	}
	if sum != d.SHA256 {
		return d, false, gguf, nil
	}
	return d, true, "", nil
}

// cached looks key up (lookup) and sets aside, journals and says a file that can no longer be
// trusted (what names it: a quant type, or "imatrix"); ok when the entry can be reused.
func (e *engine) cached(ctx context.Context, key, what string) (Derived, bool, error) {
	d, ok, stale, err := e.lookup(key)
	if err != nil || stale == "" {
		return d, ok, err
	}
	if stale, err = setAside(stale); err != nil {
		return d, false, err
	}
	e.say(fmt.Sprintf("%s: the cached file no longer hashes as recorded; set aside as %s, made again", what, stale))
	_, err = e.nb.AppendJournal(ctx, EntryStale, map[string]any{"study": e.study.ID, "type": what, "cache_key": key, "set_aside": stale, "recorded_sha256": d.SHA256}, store.ForStudy(e.study.ID))
	return d, false, err
}

// setAside renames a cache file that can no longer be trusted, keeping it.
func setAside(path string) (string, error) {
	to := fmt.Sprintf("%s.stale-%s", path, time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("set aside the cache file %s: %w", path, err)
	}
	return to, nil
}

// record writes key's provenance, once its file is in place.
func (e *engine) record(d Derived) error {
	_, meta := cachePaths(e.cacheDir, d.Key)
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(meta, append(b, '\n'), 0o644)
}

// checkDisk refuses a ladder whose derived models would not fit on the cache's disk: the
// estimate (quant.EstimateBytes, an upper bound) of every type not cached yet against the
// free space.
func (e *engine) checkDisk(todo []string, refBytes int64, refType string) error {
	var need int64
	var unknown []string
	for _, typ := range todo {
		n, ok := quant.EstimateBytes(refBytes, refType, typ)
		if !ok {
			unknown = append(unknown, typ)
			continue
		}
		need += n
	}
	free, err := freeBytes(e.cacheDir)
	if err != nil {
		return nil // the estimate cannot be checked here: llama-quantize's own write error says it
	}
	if need > free {
		return fmt.Errorf("the derived models need about %d MiB (an upper estimate for %s) and the disk of %s has %d MiB free: free some space, or list fewer quants",
			need>>20, strings.Join(todo, ", "), e.cacheDir, free>>20)
	}
	if len(unknown) > 0 {
		e.say(fmt.Sprintf("no size estimate for %s: the disk check counts only the others", strings.Join(unknown, ", ")))
	}
	return nil
}

// CacheDir is the derived-model cache under a data folder.
func CacheDir(dataDir string) string { return filepath.Join(dataDir, "quant-cache") }

// DerivedModel is one file of the cache with its provenance, as ListDerived finds it.
type DerivedModel struct {
	Path string // KEY.gguf
	Derived
}

// ListDerived lists the derived models in a data folder's cache, sorted by path: every
// KEY.gguf whose KEY.json reads as its provenance (importance matrices, cached beside them,
// are not models and are left out). It neither hashes nor changes anything (a
// file set aside, or one without provenance, is not listed); a missing cache is an empty list.
func ListDerived(dataDir string) ([]DerivedModel, error) {
	dir := CacheDir(dataDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []DerivedModel
	for _, ent := range ents {
		key, ok := strings.CutSuffix(ent.Name(), ".gguf")
		if !ok || ent.IsDir() {
			continue
		}
		gguf, meta := cachePaths(dir, key)
		b, err := os.ReadFile(meta)
		if err != nil {
			continue
		}
		var d Derived
		if json.Unmarshal(b, &d) != nil || d.Key != key || d.Schema != schemaDerived || d.Type == typeImatrix {
			continue
		}
		out = append(out, DerivedModel{Path: gguf, Derived: d})
	}
	return out, nil
}
