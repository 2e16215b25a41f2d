package gguf

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A named pipe, a character device or a link to a named pipe given as a model is refused at
// once with what it is (opening a FIFO for reading would wait for a writer forever); a link
// to a real model reads as the model.
func TestFaultsGGUFRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.gguf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link-to-pipe.gguf")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, want string }{
		{fifo, fifo + ": is a named pipe (FIFO), not a regular file; give the path of a .gguf model file"},
		{link, link + ": is a named pipe (FIFO), not a regular file; give the path of a .gguf model file"},
		{"/dev/zero", "/dev/zero: is a character device, not a regular file; give the path of a .gguf model file"},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || err.Error() != c.want || !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: got %v, want %s", c.path, err, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: ReadFile still blocked after 20 s", c.path)
		}
	}
	model, err := filepath.Abs(filepath.Join("..", "..", "testdata", "models", "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "link.gguf")
	if err := os.Symlink(model, good); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(good)
	if err != nil || len(f.Tensors) == 0 {
		t.Fatalf("link to a model: %v", err)
	}
}
