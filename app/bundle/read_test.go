package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sparkbench/app/receipt"
)

type entry struct {
	name     string
	typ      byte
	body     string
	size     int64 // declared size; -1: len(body)
	linkname string
}

func archive(t *testing.T, es ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.linkname, Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if e.size >= 0 && e.typ == tar.TypeReg {
			h.Size = e.size
		}
		if e.typ == tar.TypeChar {
			h.Devmajor, h.Devminor = 1, 3
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg && int64(len(e.body)) == h.Size {
			tw.Write([]byte(e.body))
		}
	}
	tw.Flush()
	// Close writes the end marker; a huge declared size cannot be closed honestly.
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func file(name, body string) entry { return entry{name: name, typ: tar.TypeReg, body: body, size: -1} }

// listing is every path under dir (relative), to prove nothing appeared outside a target.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// extractRefused writes data to sandbox/in.tar.gz, extracts into sandbox/target and checks
// that it is refused with want in the message and that nothing was written anywhere: not in
// the sandbox, not in its parent, not in the target.
func extractRefused(t *testing.T, data []byte, want string) {
	t.Helper()
	parent := t.TempDir()
	sandbox := filepath.Join(parent, "sandbox")
	os.MkdirAll(sandbox, 0o755)
	arch := filepath.Join(sandbox, "in.tar.gz")
	if err := os.WriteFile(arch, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := listing(t, parent)
	_, err := Extract(arch, filepath.Join(sandbox, "target"), DefaultLimits)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
		t.Fatalf("want a refusal mentioning %q, got %v", want, err)
	}
	if after := listing(t, parent); !slices.Equal(before, after) {
		t.Fatalf("files appeared: before %v after %v", before, after)
	}
	if _, err := Read(arch, DefaultLimits); err == nil {
		t.Fatal("Read accepted what Extract refused")
	}
}

func TestHostileArchivesAreRefusedWithoutWriting(t *testing.T) {
	ok := file("b/bundle.json", "{}")
	cases := []struct {
		name string
		data func() []byte
		want string
	}{
		{"path traversal", func() []byte { return archive(t, ok, file("b/../../evil", "x")) }, "climbs out"},
		{"path traversal at top", func() []byte { return archive(t, file("../evil", "x")) }, "climbs out"},
		{"absolute path", func() []byte { return archive(t, ok, file("/tmp/evil", "x")) }, "absolute path"},
		{"symlink out", func() []byte {
			return archive(t, ok, entry{name: "b/link", typ: tar.TypeSymlink, linkname: "/etc/passwd", size: -1})
		}, "symbolic link"},
		{"symlink then write through it", func() []byte {
			return archive(t, entry{name: "b/out", typ: tar.TypeSymlink, linkname: "../..", size: -1}, file("b/out/evil", "x"))
		}, "symbolic link"},
		{"hard link", func() []byte {
			return archive(t, ok, entry{name: "b/hard", typ: tar.TypeLink, linkname: "/etc/passwd", size: -1})
		}, "hard link"},
		{"device file", func() []byte { return archive(t, ok, entry{name: "b/null", typ: tar.TypeChar, size: -1}) }, "device or special"},
		{"fifo", func() []byte { return archive(t, ok, entry{name: "b/fifo", typ: tar.TypeFifo, size: -1}) }, "device or special"},
		{"huge declared size", func() []byte { return archive(t, ok, entry{name: "b/huge", typ: tar.TypeReg, size: 1 << 40}) }, "declares 1099511627776 bytes"},
		{"duplicate", func() []byte { return archive(t, ok, file("b/x", "1"), file("b/x", "2")) }, "appears twice"},
		{"case collision", func() []byte { return archive(t, ok, file("b/X", "1"), file("b/x", "2")) }, "differ only in case"},
		{"file and folder", func() []byte { return archive(t, ok, file("b/x", "1"), file("b/x/y", "2")) }, "is a file and also the folder"},
		{"not gzip", func() []byte { return []byte("PK\x03\x04 a zip, not a tar.gz") }, "not a gzip stream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { extractRefused(t, c.data(), c.want) })
	}
}

func TestTooManyEntriesAreRefused(t *testing.T) {
	// 100,000 tiny entries: refused after the limit, without reading the rest.
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for i := range 100000 {
		name := "b/" + strings.Repeat("d/", i%3) + "f" + string(rune('a'+i%26)) + "-" + itoa(i)
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
		tw.Write([]byte{'x'})
	}
	tw.Close()
	gz.Close()
	extractRefused(t, buf.Bytes(), "more than 20000 entries")
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func goodFiles() receipt.Files {
	return receipt.Files{"bundle.json": []byte(`{"schema":"x"}` + "\n"), "legs/001-a/rows.jsonl": bytes.Repeat([]byte("row\n"), 5000),
		"receipt.md": []byte("# r\n"), "SHA256SUMS": []byte("")}
}

func TestTruncatedArchivesAreRefused(t *testing.T) {
	data, err := TarGz(goodFiles(), "bundle")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTarGz(bytes.NewReader(data), DefaultLimits); err != nil {
		t.Fatalf("intact: %v", err)
	}
	for _, cut := range []int{10, len(data) / 3, len(data) / 2, len(data) - 9, len(data) - 1} {
		extractRefused(t, data[:cut], "")
	}
	// Trailing garbage after the archive's end is refused too.
	extractRefused(t, append(slices.Clone(data), bytes.Repeat([]byte{0x55}, 2<<20)...), "")
}

func TestLimitsAreEnforced(t *testing.T) {
	data := archive(t, file("b/a", strings.Repeat("x", 100)), file("b/c", strings.Repeat("y", 100)))
	if _, err := ReadTarGz(bytes.NewReader(data), Limits{MaxEntries: 10, MaxEntryBytes: 99, MaxTotalBytes: 1000}); err == nil || !strings.Contains(err.Error(), "more than the 99-byte limit") {
		t.Fatalf("entry limit: %v", err)
	}
	if _, err := ReadTarGz(bytes.NewReader(data), Limits{MaxEntries: 10, MaxEntryBytes: 1000, MaxTotalBytes: 150}); err == nil || !strings.Contains(err.Error(), "exceed 150 bytes") {
		t.Fatalf("total limit: %v", err)
	}
	if _, err := ReadTarGz(bytes.NewReader(data), Limits{MaxEntries: 1, MaxEntryBytes: 1000, MaxTotalBytes: 1000}); err == nil || !strings.Contains(err.Error(), "more than 1 entries") {
		t.Fatalf("count limit: %v", err)
	}
}

func TestArchiveRoundTripIsDeterministic(t *testing.T) {
	files := goodFiles()
	a, err := TarGz(files, "demo-receipt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := TarGz(files.Clone(), "demo-receipt")
	if !bytes.Equal(a, b) {
		t.Fatal("the same files gave two archives")
	}
	back, err := ReadTarGz(bytes.NewReader(a), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(files) {
		t.Fatalf("%d files back, want %d", len(back), len(files))
	}
	for n, v := range files {
		if !bytes.Equal(back[n], v) {
			t.Errorf("%s differs after the round trip", n)
		}
	}
	// Extract writes exactly the files, into a new folder, and refuses a non-empty one.
	dir := t.TempDir()
	arch := filepath.Join(dir, "x.tar.gz")
	os.WriteFile(arch, a, 0o644)
	target := filepath.Join(dir, "out")
	if _, err := Extract(arch, target, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDir(target, DefaultLimits)
	if err != nil || len(got) != len(files) || !bytes.Equal(got["legs/001-a/rows.jsonl"], files["legs/001-a/rows.jsonl"]) {
		t.Fatalf("extracted: %v %d", err, len(got))
	}
	if _, err := Extract(arch, target, DefaultLimits); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("non-empty target: %v", err)
	}
}

func TestFolderBundlesRefuseLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(filepath.Join(dir, "b"), goodFiles()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(filepath.Join(dir, "b"), DefaultLimits); err != nil {
		t.Fatalf("plain folder: %v", err)
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("outside"), 0o644)
	os.Symlink(secret, filepath.Join(dir, "b", "legs", "link"))
	if _, err := ReadDir(filepath.Join(dir, "b"), DefaultLimits); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("symlink: %v", err)
	}
	os.Remove(filepath.Join(dir, "b", "legs", "link"))
	if err := syscall.Mkfifo(filepath.Join(dir, "b", "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := ReadDir(filepath.Join(dir, "b"), DefaultLimits); err == nil || !strings.Contains(err.Error(), "not a plain file") {
		t.Fatalf("fifo: %v", err)
	}
}
