package hashing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeRandom(t testing.TB, path string, n int64) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestFileHashAndProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	data := writeRandom(t, path, 5*bufSize+123)
	want := sha256.Sum256(data)
	var events []Progress
	got, err := File(context.Background(), path, func(p Progress) { events = append(events, p) })
	if err != nil {
		t.Fatal(err)
	}
	if got != hex.EncodeToString(want[:]) {
		t.Fatalf("hash = %s", got)
	}
	last := events[len(events)-1]
	if last.Done != int64(len(data)) || last.Total != int64(len(data)) || last.Fraction() != 1 {
		t.Fatalf("last progress = %+v", last)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Done < events[i-1].Done {
			t.Fatalf("progress went backwards: %+v", events)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o644)
	if got, _ := File(context.Background(), empty, nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("empty file hash = %s", got)
	}
	if _, err := File(context.Background(), t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("folder: %v", err)
	}
}

func TestFileCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	writeRandom(t, path, bufSize)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := File(ctx, path, nil); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "after 0 of") {
		t.Fatalf("cancelled before start: %v", err)
	}

	// Mid-stream: the context is cancelled after two reads (File checks it between reads).
	big := filepath.Join(t.TempDir(), "big.gguf")
	writeRandom(t, big, 4*bufSize)
	_, err := File(&cancelAfter{Context: context.Background(), n: 2}, big, nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), fmt.Sprintf("after %d of %d bytes", 2*bufSize, 4*bufSize)) {
		t.Fatalf("cancelled mid-stream: %v", err)
	}
}

// cancelAfter is a context whose Err is nil for its first n calls and Canceled after.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n > 0 {
		c.n--
		return nil
	}
	return context.Canceled
}

func TestCachedNeverRehashesAnUnchangedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	writeRandom(t, path, 3*bufSize)
	c := MapCache{}
	ctx := context.Background()
	s1, hit, err := Cached(ctx, c, path, nil)
	if err != nil || hit {
		t.Fatalf("first: %v %v", hit, err)
	}
	s2, hit, err := Cached(ctx, c, path, func(Progress) { t.Error("an unchanged file must not be read again") })
	if err != nil || !hit || s2 != s1 {
		t.Fatalf("second: %v %v %s", hit, err, s2)
	}
	// Changing the bytes (and so size or mtime) invalidates the entry.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("x"))
	f.Close()
	future := time.Now().Add(2 * time.Second)
	os.Chtimes(path, future, future)
	s3, hit, err := Cached(ctx, c, path, nil)
	if err != nil || hit || s3 == s1 {
		t.Fatalf("after change: %v %v", hit, err)
	}
	// A different file at the same path (new inode) is hashed anew even with equal size/mtime.
	k, _ := KeyOf(path)
	tmp := path + ".new"
	data, _ := os.ReadFile(path)
	data[0] ^= 0xff
	os.WriteFile(tmp, data, 0o644)
	os.Chtimes(tmp, k.MTime, k.MTime)
	os.Rename(tmp, path)
	if k2, _ := KeyOf(path); k2.Inode == k.Inode {
		t.Skip("filesystem reused the inode")
	}
	s4, hit, _ := Cached(ctx, c, path, nil)
	if hit || s4 == s3 {
		t.Fatalf("replaced file served from cache")
	}
}

func TestCompare(t *testing.T) {
	if Compare("", "ab") != Pending || Compare("ab", "") != Pending || Compare("ab", "ab") != Verified || Compare("ab", "cd") != Mismatch {
		t.Fatal("Compare")
	}
}

// benchFile is a 1 GiB file shared by the hashing benchmarks (created once per run).
func benchFile(b *testing.B) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "sparkbench-hash-bench-1GiB")
	if st, err := os.Stat(path); err == nil && st.Size() == 1<<30 {
		warm(b, path)
		return path
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, bufSize)
	for i := 0; i < 1024; i++ {
		for j := range buf {
			buf[j] = byte(r.Uint32())
		}
		f.Write(buf)
	}
	f.Close()
	warm(b, path)
	return path
}

// warm reads the file once so that every benchmark hashes it from the page cache: the first
// timed pass must not be the one that reads it from disk (measured: 480 MB/s cold against
// 1,400 MB/s warm on this machine).
func warm(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHashFile is sparkbench's hasher (progress events on) over 1 GiB.
func BenchmarkHashFile(b *testing.B) {
	path := benchFile(b)
	b.SetBytes(1 << 30)
	events := 0
	for b.Loop() {
		if _, err := File(context.Background(), path, func(Progress) { events++ }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// BenchmarkBareSHA256 is a plain crypto/sha256 io.Copy loop over the same file: the reference.
func BenchmarkBareSHA256(b *testing.B) {
	path := benchFile(b)
	b.SetBytes(1 << 30)
	for b.Loop() {
		f, _ := os.Open(path)
		h := sha256.New()
		io.Copy(h, f)
		f.Close()
		_ = h.Sum(nil)
	}
}

// BenchmarkCachedReverify is a re-verify of an unchanged file: a stat and a cache lookup.
func BenchmarkCachedReverify(b *testing.B) {
	path := benchFile(b)
	c := MapCache{}
	if _, _, err := Cached(context.Background(), c, path, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, hit, _ := Cached(context.Background(), c, path, nil); !hit {
			b.Fatal("miss")
		}
	}
}

// A named pipe given as a model path is refused at once (opening it for reading would wait
// for a writer forever); a link to a regular file is hashed as the file.
func TestFaultsHashingRefusesNamedPipeAndFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := File(context.Background(), fifo, nil)
		done <- err
		_, _, err = Cached(context.Background(), MapCache{}, fifo, nil)
		done <- err
	}()
	for i := 0; i < 2; i++ {
		select {
		case err := <-done:
			want := fifo + " is a named pipe (FIFO), not a regular file; give the path of a file"
			if err == nil || err.Error() != want {
				t.Errorf("got %v, want %q", err, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("hashing a named pipe still blocked after 20 s")
		}
	}
	real := filepath.Join(dir, "real.gguf")
	data := writeRandom(t, real, 1000)
	link := filepath.Join(dir, "link.gguf")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	if got, err := File(context.Background(), link, nil); err != nil || got != hex.EncodeToString(want[:]) {
		t.Errorf("link: %s %v", got, err)
	}
}

// Diff names each part of a file's identity that moved, and nothing when none did.
func TestDiffNamesWhatMoved(t *testing.T) {
	a := Key{Path: "m", Size: 10, MTime: time.Unix(1, 0), Dev: 1, Inode: 2, CTime: time.Unix(3, 0)}
	if d := Diff(a, a); d != "" {
		t.Errorf("same key: %q", d)
	}
	for _, c := range []struct {
		edit func(*Key)
		want string
	}{
		{func(k *Key) { k.Size = 11 }, "size 10 → 11 bytes"},
		{func(k *Key) { k.MTime = time.Unix(2, 0) }, "mtime 1970-01-01T00:00:01.000000000Z → 1970-01-01T00:00:02.000000000Z"},
		{func(k *Key) { k.Inode = 3 }, "device/inode 1/2 → 1/3 (another file)"},
		{func(k *Key) { k.Dev = 4 }, "device/inode 1/2 → 4/2 (another file)"},
		{func(k *Key) { k.CTime = time.Unix(4, 0) }, "ctime 1970-01-01T00:00:03.000000000Z → 1970-01-01T00:00:04.000000000Z (written or touched)"},
	} {
		b := a
		c.edit(&b)
		if d := Diff(a, b); d != c.want {
			t.Errorf("Diff = %q, want %q", d, c.want)
		}
	}
}
