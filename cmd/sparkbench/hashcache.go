package main

import (
	"context"
	"io"
	"path/filepath"

	"sparkbench/app/study"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// cachedHash hashes model files through the notebook's cache (path, size, mtime, device,
// inode), with progress on a terminal.
func cachedHash(ctx context.Context, nb *store.Notebook, stderr io.Writer) study.HashFunc {
	return hashThrough(ctx, notebookHashCache{nb}, stderr)
}

// registrationHash is cachedHash for registering a plan: it reads the notebook's cache, but
// holds the hashes it computes until commit is called, once the plan is accepted. A refused
// plan (a MISMATCH model) so writes nothing to the notebook, not even a hash-cache row.
func registrationHash(ctx context.Context, nb *store.Notebook, stderr io.Writer) (hash study.HashFunc, commit func(context.Context) error) {
	c := &heldHashCache{nb: notebookHashCache{nb}}
	return hashThrough(ctx, c, stderr), c.commit
}

// heldHashCache looks hashes up in the notebook and keeps new ones in memory until commit.
type heldHashCache struct {
	nb   notebookHashCache
	held []heldHash
}

type heldHash struct {
	k   hashing.Key
	sum string
}

func (c *heldHashCache) Lookup(ctx context.Context, k hashing.Key) (string, bool, error) {
	for _, h := range c.held {
		if h.k == k {
			return h.sum, true, nil
		}
	}
	return c.nb.Lookup(ctx, k)
}

func (c *heldHashCache) Store(_ context.Context, k hashing.Key, sum string) error {
	c.held = append(c.held, heldHash{k, sum})
	return nil
}

// commit writes the held hashes to the notebook's cache.
func (c *heldHashCache) commit(ctx context.Context) error {
	for _, h := range c.held {
		if err := c.nb.Store(ctx, h.k, h.sum); err != nil {
			return err
		}
	}
	c.held = nil
	return nil
}

// hashThrough hashes model files through cache c, with progress on a terminal.
func hashThrough(ctx context.Context, c hashing.Cache, stderr io.Writer) study.HashFunc {
	return func(path string) (string, error) {
		var progress func(hashing.Progress)
		if isTerminal(stderr) {
			progress = func(p hashing.Progress) {
				fprintf(stderr, "\rhashing %s: %5.1f%%", filepath.Base(p.Path), p.Fraction()*100)
			}
		}
		sum, cached, err := hashing.Cached(ctx, c, path, progress)
		if progress != nil && !cached {
			fprintf(stderr, "\r\033[K")
		}
		return sum, err
	}
}
