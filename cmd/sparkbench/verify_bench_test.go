package main

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// BenchmarkModelVerifyNotebookCache is `model verify` on the same 256 MiB file through the
// notebook-backed hash cache (notebookLibrary.Hash: a stat, a lookup in the artefacts table,
// and on a miss a streamed SHA-256 with progress events and the row written):
//
//   - full_hash: the file's mtime moves before every pass, so each is a cache miss and a full
//     hash, as for a new or changed file;
//   - cached_reverify: the file is unchanged, so the hash comes from the notebook.
//
// go test -tags migrated_fynedo -run '^$' -bench ModelVerifyNotebookCache -benchtime 5x ./cmd/sparkbench
func BenchmarkModelVerifyNotebookCache(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "model.bin")
	const size = 256 << 20
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 1<<20)
	for i := 0; i < size>>20; i++ {
		for j := range buf {
			buf[j] = byte(r.Uint32())
		}
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	// Read once so that every pass hashes from the page cache, not the disk.
	if f, err := os.Open(path); err == nil {
		io.Copy(io.Discard, f)
		f.Close()
	}
	nb, err := store.Open(filepath.Join(dir, "notebook.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	lib := notebookLibrary{nb}
	ctx := context.Background()
	var want string

	b.Run("full_hash", func(b *testing.B) {
		b.SetBytes(size)
		mtime := time.Now().Add(-time.Hour)
		events := 0
		for b.Loop() {
			mtime = mtime.Add(time.Second) // a changed file: the cache key no longer matches
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				b.Fatal(err)
			}
			st, err := lib.Hash(ctx, path, func(hashing.Progress) { events++ })
			if err != nil || st.FromCache {
				b.Fatalf("full hash: from cache %v, %v", st.FromCache, err)
			}
			want = st.SHA256
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		b.ReportMetric(float64(events)/float64(b.N), "events/op")
	})
	b.Run("cached_reverify", func(b *testing.B) {
		if _, err := lib.Hash(ctx, path, nil); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			st, err := lib.Hash(ctx, path, nil)
			if err != nil || !st.FromCache || (want != "" && st.SHA256 != want) {
				b.Fatalf("re-verify: from cache %v, sha %s (hashed %s), %v", st.FromCache, st.SHA256, want, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
}
