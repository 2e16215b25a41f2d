package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestArtefactHashCacheKeyIncludesInode(t *testing.T) {
	nb, _ := openTemp(t)
	ctx := context.Background()
	mtime := time.Unix(1700000000, 123)
	sum := strings.Repeat("ab", 32)
	a, err := nb.UpsertArtefact(ctx, Artefact{Path: "/m/x.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 42, SHA256: sum})
	if err != nil || a.Dev != 1 || a.Inode != 42 || a.SHA256 != sum || a.Status != ArtefactPending {
		t.Fatalf("upsert: %+v %v", a, err)
	}
	if got, ok, err := nb.CachedArtefactFile(ctx, "/m/x.gguf", 10, mtime, 1, 42); err != nil || !ok || got.SHA256 != sum {
		t.Fatalf("hit: %+v %v %v", got, ok, err)
	}
	// Same path, size and mtime but a new inode (the file was replaced): no cached hash.
	if _, ok, _ := nb.CachedArtefactFile(ctx, "/m/x.gguf", 10, mtime, 1, 43); ok {
		t.Fatal("a replaced file must miss the cache")
	}
	// Recording the replaced file drops the old hash rather than keeping it under the new inode.
	b, err := nb.UpsertArtefact(ctx, Artefact{Path: "/m/x.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 43})
	if err != nil || b.ID != a.ID || b.SHA256 != "" || b.Inode != 43 {
		t.Fatalf("replaced: %+v %v", b, err)
	}
}
