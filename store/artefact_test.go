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
	if got, ok, err := nb.CachedArtefactFile(ctx, "/m/x.gguf", 10, mtime, time.Time{}, 1, 42); err != nil || !ok || got.SHA256 != sum {
		t.Fatalf("hit: %+v %v %v", got, ok, err)
	}
	// Same path, size and mtime but a new inode (the file was replaced): no cached hash.
	if _, ok, _ := nb.CachedArtefactFile(ctx, "/m/x.gguf", 10, mtime, time.Time{}, 1, 43); ok {
		t.Fatal("a replaced file must miss the cache")
	}
	// Recording the replaced file drops the old hash rather than keeping it under the new inode.
	b, err := nb.UpsertArtefact(ctx, Artefact{Path: "/m/x.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 43})
	if err != nil || b.ID != a.ID || b.SHA256 != "" || b.Inode != 43 {
		t.Fatalf("replaced: %+v %v", b, err)
	}
}

// A file written in place with its mtime restored (`touch -r`) keeps its path, size, mtime,
// device and inode; only its change time moves: the cache misses and the old hash is dropped
// when the new key is recorded (issue 30, item 4).
func TestArtefactHashCacheKeyIncludesCTime(t *testing.T) {
	nb, _ := openTemp(t)
	ctx := context.Background()
	mtime, ctime := time.Unix(1700000000, 123), time.Unix(1700000500, 456).UTC()
	sum := strings.Repeat("cd", 32)
	a, err := nb.UpsertArtefact(ctx, Artefact{Path: "/m/y.gguf", Size: 10, MTime: mtime, CTime: ctime, Dev: 1, Inode: 42, SHA256: sum})
	if err != nil || !a.CTime.Equal(ctime) {
		t.Fatalf("upsert: %+v %v", a, err)
	}
	if got, ok, err := nb.CachedArtefactFile(ctx, "/m/y.gguf", 10, mtime, ctime, 1, 42); err != nil || !ok || got.SHA256 != sum {
		t.Fatalf("hit: %+v %v %v", got, ok, err)
	}
	later := ctime.Add(time.Second)
	if _, ok, _ := nb.CachedArtefactFile(ctx, "/m/y.gguf", 10, mtime, later, 1, 42); ok {
		t.Fatal("a file changed in place (new ctime) must miss the cache")
	}
	b, err := nb.UpsertArtefact(ctx, Artefact{Path: "/m/y.gguf", Size: 10, MTime: mtime, CTime: later, Dev: 1, Inode: 42})
	if err != nil || b.ID != a.ID || b.SHA256 != "" || !b.CTime.Equal(later) {
		t.Fatalf("changed in place: %+v %v", b, err)
	}
}
