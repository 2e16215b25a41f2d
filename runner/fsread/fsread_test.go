package fsread

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after 20 s (a FIFO opened for
// reading without O_NONBLOCK blocks until a writer comes, i.e. forever).
func within(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatal("still blocked after 20 s")
		return nil
	}
}

func TestOpenRegularRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	linkToFIFO := filepath.Join(dir, "link-to-pipe")
	if err := os.Symlink(fifo, linkToFIFO); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, want string
	}{
		{"named pipe", fifo, fifo + " is a named pipe (FIFO), not a regular file; give the path of a file"},
		{"symbolic link to a named pipe", linkToFIFO, linkToFIFO + " is a named pipe (FIFO), not a regular file"},
		{"unix socket", sock, sock + " is a socket, not a regular file"},
		{"character device", "/dev/null", "/dev/null is a character device, not a regular file"},
		{"directory", dir, dir + " is a directory, not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, op := range []struct {
				name string
				f    func() error
			}{
				{"OpenRegular", func() error { f, _, err := OpenRegular(c.path); closeIf(f); return err }},
				{"ReadFile", func() error { _, err := ReadFile(c.path, 1<<20, "test"); return err }},
			} {
				err := within(t, op.f)
				var nr *NotRegularError
				if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want a *NotRegularError saying %q", op.name, err, c.want)
				}
				if nr != nil && nr.IsDir() != (c.name == "directory") {
					t.Errorf("%s: IsDir %v", op.name, nr.IsDir())
				}
			}
		})
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func TestOpenRegularFollowsLinksToFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("data.txt", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		b, err := ReadFile(p, 6, "test")
		if err != nil || string(b) != "hello\n" {
			t.Errorf("ReadFile(%s) = %q, %v", p, b, err)
		}
		f, st, err := OpenRegular(p)
		if err != nil || st.Size() != 6 {
			t.Fatalf("OpenRegular(%s): %v %v", p, st, err)
		}
		// O_NONBLOCK does not change reading a regular file
		buf := make([]byte, 16)
		if n, err := f.Read(buf); n != 6 || err != nil {
			t.Errorf("read %d %v", n, err)
		}
		f.Close()
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, _, err := OpenRegularIn(root, "link.txt")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = within(t, func() error { f, _, err := OpenRegularIn(root, "pipe"); closeIf(f); return err })
	if err == nil || err.Error() != "pipe is a named pipe (FIFO), not a regular file; give the path of a file" {
		t.Errorf("OpenRegularIn(pipe): %v", err)
	}
}

func TestReadFileLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(p, make([]byte, 1001), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, 1000, "llama-bench output")
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != p+" is 1001 bytes, more than the 1000-byte limit for llama-bench output; give a smaller file (split it)" {
		t.Fatalf("got %v", err)
	}
	if b, err := ReadFile(p, 1001, ""); err != nil || len(b) != 1001 {
		t.Fatalf("at the limit: %d %v", len(b), err)
	}
	if _, err := ReadFile(filepath.Join(filepath.Dir(p), "absent"), 10, ""); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("absent: %v", err)
	}
}
