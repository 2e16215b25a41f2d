package store

import (
	"context"
	"encoding/json"
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
	// Recording the replaced file gives it a row of its own without the old hash; the old row,
	// which legs may name, keeps its hash and its inode.
	b, err := nb.UpsertArtefact(ctx, Artefact{Path: "/m/x.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 43})
	if err != nil || b.ID == a.ID || b.SHA256 != "" || b.Inode != 43 {
		t.Fatalf("replaced: %+v %v", b, err)
	}
	if old := must[Artefact](t)(nb.Artefact(ctx, a.ID)); old.SHA256 != sum || old.Inode != 42 {
		t.Fatalf("the old row changed: %+v", old)
	}
	// Its hash lands in its own row; the same content under yet another inode (copied back)
	// is that row again, with the new inode.
	other := strings.Repeat("ef", 32)
	c := must[Artefact](t)(nb.UpsertArtefact(ctx, Artefact{Path: "/m/x.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 43, SHA256: other}))
	d := must[Artefact](t)(nb.UpsertArtefact(ctx, Artefact{Path: "/m/x.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 44, SHA256: other}))
	if c.ID != b.ID || c.SHA256 != other || d.ID != b.ID || d.Inode != 44 {
		t.Fatalf("hashed %+v, copied back %+v (want row %d)", c, d, b.ID)
	}
	if got, ok, _ := nb.CachedArtefact(ctx, "/m/x.gguf", 10, mtime); !ok || got.ID != b.ID {
		t.Fatalf("the cache key reads the newest row: %+v %v", got, ok)
	}
}

// A row's hash never changes: a file of the same path, size, mtime and inode whose content
// hashes differently (the cache was bypassed: model verify --rehash) gets a new row, with the
// expected hash entered for the path; the legs' row keeps what their leg.started recorded.
func TestArtefactHashNeverRewritten(t *testing.T) {
	nb, _ := openTemp(t)
	mtime := time.Unix(1700000000, 0)
	first, second, want := strings.Repeat("01", 32), strings.Repeat("02", 32), strings.Repeat("01", 32)
	a := must[Artefact](t)(nb.UpsertArtefact(ctx, Artefact{Path: "/m/z.gguf", Size: 10, MTime: mtime, Inode: 7, SHA256: first, ExpectedSHA256: want}))
	b := must[Artefact](t)(nb.UpsertArtefact(ctx, Artefact{Path: "/m/z.gguf", Size: 10, MTime: mtime, Inode: 7, SHA256: second}))
	if b.ID == a.ID || b.SHA256 != second || b.ExpectedSHA256 != want || b.Status != ArtefactMismatch {
		t.Fatalf("another content: %+v (first row %d)", b, a.ID)
	}
	if old := must[Artefact](t)(nb.Artefact(ctx, a.ID)); old.SHA256 != first || old.Status != ArtefactVerified {
		t.Fatalf("the first row changed: %+v", old)
	}
}

// A file written in place with its mtime restored (`touch -r`) keeps its path, size, mtime,
// device and inode; only its change time moves: the cache misses, and the file recorded under
// the new key gets a row of its own (issue 30, item 4).
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
	if err != nil || b.ID == a.ID || b.SHA256 != "" || !b.CTime.Equal(later) {
		t.Fatalf("changed in place: %+v %v", b, err)
	}
	if old := must[Artefact](t)(nb.Artefact(ctx, a.ID)); old.SHA256 != sum || !old.CTime.Equal(ctime) {
		t.Fatalf("the old row changed: %+v", old)
	}
}

// An upsert that carries no header fields (the hash cache recording a fresh hash of the same
// file, as every run does before its first leg) keeps the name, architecture, quant, parameter
// count and metadata the row holds: a receipt's models line does not lose "llama Q8_0" to a
// re-hash. Given fields still replace them.
func TestArtefactUpsertWithoutHeaderKeepsIt(t *testing.T) {
	nb, _ := openTemp(t)
	mtime := time.Unix(1700000000, 0)
	sum := strings.Repeat("ab", 32)
	key := Artefact{Path: "/m/h.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 9, SHA256: sum}
	full := key
	full.Name, full.Architecture, full.Quant, full.NParams, full.Metadata = "tiny", "llama", "Q8_0", 1234, json.RawMessage(`{"k":1}`)
	a := must[Artefact](t)(nb.UpsertArtefact(ctx, full))
	b := must[Artefact](t)(nb.UpsertArtefact(ctx, key)) // the hash cache's put: no header fields
	if b.ID != a.ID || b.Name != "tiny" || b.Architecture != "llama" || b.Quant != "Q8_0" || b.NParams != 1234 || string(b.Metadata) != `{"k":1}` {
		t.Fatalf("a re-hash of the same file blanked its header fields: %+v (was %+v)", b, a)
	}
	other := key
	other.Name, other.Quant = "renamed", "Q4_0"
	c := must[Artefact](t)(nb.UpsertArtefact(ctx, other))
	if c.ID != a.ID || c.Name != "renamed" || c.Quant != "Q4_0" || c.Architecture != "llama" {
		t.Fatalf("given fields: %+v", c)
	}
}

// Every write that changes a model record journals it as it then stands (artefact.recorded),
// a write that changes nothing journals nothing, and verify holds each column to the last
// entry: an edit of the source (shown by receipts) or of the cache key is named as damage.
func TestArtefactRecordsAreJournaledAndHeld(t *testing.T) {
	nb, path := openTemp(t)
	mtime := time.Unix(1700000000, 5)
	sum := strings.Repeat("cd", 32)
	a := must[Artefact](t)(nb.UpsertArtefact(ctx, Artefact{Path: "/m/q.gguf", Size: 10, MTime: mtime, Inode: 9, SHA256: sum, Name: "q", Quant: "Q4_0"}))
	entries := func() int {
		t.Helper()
		e, err := nb.JournalOfKind(ctx, KindArtefactRecorded)
		if err != nil {
			t.Fatal(err)
		}
		return len(e)
	}
	if n := entries(); n != 1 {
		t.Fatalf("%d entries after the first record, want 1", n)
	}
	// The cache hit recorded again (no header fields, the same file): nothing changed, no entry.
	must[Artefact](t)(nb.UpsertArtefact(ctx, Artefact{Path: "/m/q.gguf", Size: 10, MTime: mtime, Inode: 9, SHA256: sum}))
	if n := entries(); n != 1 {
		t.Fatalf("%d entries after a write that changed nothing, want 1", n)
	}
	must[Artefact](t)(nb.UpsertArtefact(ctx, Artefact{Path: "/m/q.gguf", Size: 10, MTime: mtime, Inode: 9, SHA256: sum, Source: "hf:org/q", Revision: "r2"}))
	if _, err := nb.SetArtefactExpected(ctx, a.ID, sum); err != nil {
		t.Fatal(err)
	}
	if n := entries(); n != 3 {
		t.Fatalf("%d entries after a new source and an expected hash, want 3", n)
	}
	if rep, err := nb.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep.Broken, err)
	}
	nb.Close()
	for _, c := range []struct{ col, set string }{{"source", "'hf:other/q'"}, {"revision", "'r1'"}, {"ctime_ns", "ctime_ns + 1"}, {"expected_sha256", "NULL"}} {
		db := rawDB(t, path)
		if _, err := db.Exec("UPDATE artefacts SET "+c.col+" = "+c.set+" WHERE id = ?", a.ID); err != nil {
			t.Fatal(err)
		}
		n, err := OpenWith(path, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := n.Verify(ctx)
		n.Close()
		if err != nil || rep.OK() || rep.Broken.Table != "artefacts" || rep.Broken.Column != c.col || rep.Broken.RowID != a.ID {
			t.Fatalf("%s edited: verify %+v %v", c.col, rep.Broken, err)
		}
		// put it back through the entry's value for the next column
		if _, err := db.Exec("UPDATE artefacts SET source = 'hf:org/q', revision = 'r2', ctime_ns = 0, expected_sha256 = ? WHERE id = ?", sum, a.ID); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}
