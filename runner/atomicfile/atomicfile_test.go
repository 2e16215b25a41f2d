package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists the names in dir, so a test can see that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// existing makes a folder holding name with data, mode perm, and returns the folder and the path.
func existing(t *testing.T, name, data string, perm fs.FileMode) (string, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// mustCreate starts a replacement of path with mode 0644, failing the test when it cannot.
func mustCreate(t *testing.T, path string) *File {
	t.Helper()
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func wantOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	got := entries(t, dir)
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

func wantFile(t *testing.T, path, data string, perm fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != data {
		t.Errorf("%s holds %q, want %q", path, b, data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != perm {
		t.Errorf("%s has mode %v, want %v", path, fi.Mode(), perm)
	}
}

func TestWriteFileContentAndMode(t *testing.T) {
	dir := t.TempDir()
	// os.CreateTemp makes 0600 files, so 0644 and 0640 show the mode is set, not inherited.
	for _, perm := range []fs.FileMode{0o644, 0o600, 0o640} {
		path := filepath.Join(dir, "out-"+perm.String())
		if err := WriteFile(path, []byte("hello "+perm.String()+"\n"), perm); err != nil {
			t.Fatal(err)
		}
		wantFile(t, path, "hello "+perm.String()+"\n", perm)
	}
	wantOnly(t, dir, "out--rw-------", "out--rw-r-----", "out--rw-r--r--")
}

func TestCreateStreamsAndCommits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.gguf")
	f := mustCreate(t, path)
	defer f.Abort() // a no-op after Commit
	for _, part := range []string{"GGUF", "-", "body"} {
		if _, err := io.WriteString(f, part); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target exists before Commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	wantFile(t, path, "GGUF-body", 0o644)
	wantOnly(t, dir, "model.gguf")
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("a Write after Commit succeeded")
	}
	wantFile(t, path, "GGUF-body", 0o644)
}

// TestReplaceIsARename: a reader that opened the old file keeps reading the old bytes after
// the replacement (the new file is a new inode renamed over the name, not the old one
// rewritten in place), and the name gives the new bytes.
func TestReplaceIsARename(t *testing.T) {
	dir, path := existing(t, "anchor.json", "old\n", 0o600)
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := WriteFile(path, []byte("new and longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(old)
	if err != nil || string(b) != "old\n" {
		t.Errorf("the open old file reads %q, %v; want the old bytes", b, err)
	}
	wantFile(t, path, "new and longer\n", 0o644)
	wantOnly(t, dir, "anchor.json")
}

func TestAbortLeavesTargetAndNoTemp(t *testing.T) {
	dir, path := existing(t, "study.json", "kept\n", 0o644)
	f := mustCreate(t, path)
	if _, err := f.Write([]byte("half a stu")); err != nil {
		t.Fatal(err)
	}
	if n := len(entries(t, dir)); n != 2 {
		t.Errorf("%d entries while writing, want the target and one temporary file", n)
	}
	f.Abort()
	f.Abort()
	wantFile(t, path, "kept\n", 0o644)
	wantOnly(t, dir, "study.json")
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	wantFile(t, path, "kept\n", 0o644)
}

// TestFailedWriteLeavesTargetAndNoTemp: a write that fails (here the temporary file is closed
// under the writer) makes Commit fail too; the target keeps its bytes and no temporary file
// stays.
func TestFailedWriteLeavesTargetAndNoTemp(t *testing.T) {
	dir, path := existing(t, "plot.png", "old png", 0o644)
	f := mustCreate(t, path)
	f.f.Close()
	if _, err := f.Write([]byte("new png")); err == nil {
		t.Fatal("a write to a closed temporary file succeeded")
	}
	if err := f.Commit(); err == nil {
		t.Fatal("Commit of a failed write succeeded")
	}
	wantFile(t, path, "old png", 0o644)
	wantOnly(t, dir, "plot.png")
}

// TestFailedRenameLeavesTargetAndNoTemp: a target that cannot be replaced (a folder that is
// not empty) fails Commit; the folder is untouched and no temporary file stays.
func TestFailedRenameLeavesTargetAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bundle.tar.gz")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("archive"), 0o644); err == nil {
		t.Fatal("replacing a non-empty folder succeeded")
	}
	if fi, err := os.Stat(filepath.Join(path, "inside")); err != nil || !fi.IsDir() {
		t.Errorf("the folder's content changed: %v", err)
	}
	wantOnly(t, dir, "bundle.tar.gz")
}

func TestMissingFolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "no", "such", "dir", "study.json")
	err := WriteFile(path, []byte("x"), 0o644)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "create" || pe.Path != path || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %#v, want a create PathError on %s matching fs.ErrNotExist", err, path)
	}
	if want := "create " + path + ": no such file or directory"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	wantOnly(t, dir)
}

// TestTwoWritersDoNotShareATemp: two replacements of one path in progress at once have their
// own temporary files; the one committed last is the file.
func TestTwoWritersDoNotShareATemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	a := mustCreate(t, path)
	b := mustCreate(t, path)
	if a.f.Name() == b.f.Name() {
		t.Fatalf("both writers use %s", a.f.Name())
	}
	for _, name := range []string{a.f.Name(), b.f.Name()} {
		if base := filepath.Base(name); !strings.HasPrefix(base, ".out.json.tmp-") {
			t.Errorf("temporary file %s: want a hidden name beginning .out.json.tmp-", base)
		}
	}
	io.WriteString(a, "from a")
	io.WriteString(b, "from b")
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	wantFile(t, path, "from b", 0o644)
	wantOnly(t, dir, "out.json")
}
