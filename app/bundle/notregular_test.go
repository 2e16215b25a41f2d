package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A bundle path that is a named pipe or a device is refused at once by every reader (opening
// a FIFO for reading waits for a writer forever), and a link to a real .tar.gz still reads.
func TestFaultsBundlePathThatIsNotAFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "bundle.tar.gz")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "out")
	readers := []struct {
		name string
		f    func(p string) error
	}{
		{"Read", func(p string) error { _, err := Read(p, DefaultLimits); return err }},
		{"IsArchive", func(p string) error { _, err := IsArchive(p); return err }},
		{"Extract", func(p string) error { _, err := Extract(p, target, DefaultLimits); return err }},
	}
	for _, c := range []struct{ path, want string }{
		{fifo, fifo + ": refused: a named pipe (FIFO), not a folder or a regular file; give a bundle folder or a .tar.gz"},
		{"/dev/zero", "/dev/zero: refused: a character device, not a folder or a regular file; give a bundle folder or a .tar.gz"},
	} {
		for _, r := range readers {
			done := make(chan error, 1)
			go func() { done <- r.f(c.path) }()
			select {
			case err := <-done:
				var re *RefusedError
				if !errors.As(err, &re) || err.Error() != c.want {
					t.Errorf("%s(%s): got %v, want %s", r.name, c.path, err, c.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s(%s) still blocked after 20 s", r.name, c.path)
			}
		}
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Extract wrote %s: %v", target, err)
	}
	a, err := TarGz(goodFiles(), "b")
	if err != nil {
		t.Fatal(err)
	}
	arch := filepath.Join(dir, "real.tar.gz")
	if err := os.WriteFile(arch, a, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.tar.gz")
	if err := os.Symlink(arch, link); err != nil {
		t.Fatal(err)
	}
	if files, err := Read(link, DefaultLimits); err != nil || len(files) != len(goodFiles()) {
		t.Fatalf("link to an archive: %d files, %v", len(files), err)
	}
}
