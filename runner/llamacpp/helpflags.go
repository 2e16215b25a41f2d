package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"sparkbench/runner/vocab"
)

// HelpTimeout bounds one `BIN --help` (llama.cpp answers in milliseconds).
const HelpTimeout = 20 * time.Second

// HelpCap is the most output of `BIN --help` that is kept; the rest is read and dropped
// (llama-server's help is about 60 KiB).
const HelpCap = 1 << 20

// ParseHelpFlags is vocab.ParseHelpFlags: reading --help text starts no process.
func ParseHelpFlags(text string) map[string]bool { return vocab.ParseHelpFlags(text) }

// UnknownFlags is vocab.UnknownFlags.
func UnknownFlags(args []string, known map[string]bool) []string {
	return vocab.UnknownFlags(args, known)
}

// SortedFlags is vocab.SortedFlags.
func SortedFlags(flags map[string]bool) []string { return vocab.SortedFlags(flags) }

type helpKey struct {
	path  string
	size  int64
	mtime time.Time
	ino   uint64
}

var helpCache sync.Map

// helpKey -> map[string]bool

// HelpFlags runs `bin --help` (argv, no shell, its own process group, bounded by HelpTimeout,
// output capped at HelpCap) and returns the flags it lists (ParseHelpFlags). The answer is
// cached per binary file (path, size, modification time, inode), so validating a plan while
// it is typed does not start a process each time. The returned map must not be modified.
// An error says the binary did not answer or listed no flags, with its output's last lines.
func HelpFlags(ctx context.Context, bin string) (map[string]bool, error) {
	st, err := os.Stat(bin)
	if err != nil {
		return nil, fmt.Errorf("list the flags of %s: %w", bin, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("list the flags of %s: not a regular file (%s)", bin, st.Mode().Type())
	}
	key := helpKey{path: bin, size: st.Size(), mtime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		key.ino = sys.Ino
	}
	if v, ok := helpCache.Load(key); ok {
		return v.(map[string]bool), nil
	}
	out, runErr := runCapped(ctx, HelpTimeout, HelpCap, bin, "--help")
	flags := ParseHelpFlags(out)
	// a tool that answers --help lists --help itself; fewer than that is not a help text
	if !flags["--help"] || len(flags) < 2 {
		if runErr != nil {
			return nil, fmt.Errorf("run %s --help: %w", bin, runErr)
		}
		return nil, fmt.Errorf("%s --help listed no flags (is it a llama.cpp tool?): %s", bin, lastLines(out, 3))
	}
	helpCache.Store(key, flags)
	return flags, nil
}

// capWriter keeps the first max bytes written to it and drops the rest, still reporting
// every byte written so the child never blocks on a full pipe.
type capWriter struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.buf); room > 0 {
		if len(p) > room {
			w.buf = append(w.buf, p[:room]...)
			w.truncated = true
		} else {
			w.buf = append(w.buf, p...)
		}
	} else if len(p) > 0 {
		w.truncated = true
	}
	return len(p), nil
}

func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// runCapped runs argv (no shell) in its own process group with Pdeathsig, keeping at most
// max bytes of stdout and stderr merged. On timeout or cancellation the whole group gets
// SIGKILL, and the wait for the output pipes is bounded too (a grandchild holding them open
// cannot hang it). A non-zero exit is an error carrying the output's last lines.
func runCapped(ctx context.Context, timeout time.Duration, max int, argv0 string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv0, args...)
	w := &capWriter{max: max}
	cmd.Stdout = w
	cmd.Stderr = w
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), QuietEnv...)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	out := w.String()
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return out, fmt.Errorf("no answer within %s (killed)", timeout)
		}
		return out, ctx.Err()
	}
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, lastLines(out, 3))
	}
	return out, nil
}
