// Package live is the half of telemetry that touches the machine: it runs the sampler commands
// (nvidia-smi, amd-smi, rocm-smi) as argv in their own process group with every wait bounded,
// loads libnvidia-ml through go-nvml at run time, and discovers which samplers this machine
// has (Discover). The readers and parsers are runner/telemetry's.
package live

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"sparkbench/runner/telemetry"
)

// maxOutput bounds what one sampler command may print (amd-smi metric --json on an 8-GPU box
// is about 40 KiB).
const maxOutput = 4 << 20

// grace is how long a stopped command gets between SIGTERM and SIGKILL.
const grace = time.Second

func command(argv []string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.Env = append(c.Environ(), "LC_ALL=C", "NO_COLOR=1")
	return c
}

// killGroup sends SIGTERM to the command's process group, then SIGKILL after grace unless
// done closes first.
func killGroup(c *exec.Cmd, done <-chan struct{}) {
	if c.Process == nil {
		return
	}
	pg := -c.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(pg, syscall.SIGKILL)
}

// limitedBuffer keeps at most max bytes and counts the rest.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.Len()
	if room < len(p) {
		b.over += int64(len(p) - max(room, 0))
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// Exec returns a telemetry.Exec that runs argv in its own process group and kills the group
// when it outlives timeout (the error then wraps telemetry.ErrTimeout).
func Exec(timeout time.Duration) telemetry.Exec {
	return func(ctx context.Context, argv []string) ([]byte, error) {
		if len(argv) == 0 {
			return nil, errors.New("no command")
		}
		c := command(argv)
		out := &limitedBuffer{max: maxOutput}
		c.Stdout, c.Stderr = out, io.Discard
		if err := c.Start(); err != nil {
			return nil, err
		}
		done := make(chan struct{})
		var werr error
		go func() { werr = c.Wait(); close(done) }()
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			killGroup(c, done)
			<-done
			return nil, fmt.Errorf("%s gave no answer within %s: %w", argv[0], timeout, telemetry.ErrTimeout)
		case <-ctx.Done():
			killGroup(c, done)
			<-done
			return nil, ctx.Err()
		}
		if werr != nil {
			return nil, fmt.Errorf("%s: %v", argv[0], werr)
		}
		if out.over > 0 {
			return nil, fmt.Errorf("%s printed more than %d bytes", argv[0], maxOutput)
		}
		return out.Bytes(), nil
	}
}

// stream is a running command whose output lines arrive on a channel.
type stream struct {
	c     *exec.Cmd
	lines chan string
	done  chan struct{}
	once  sync.Once
}

// StartStream runs argv in its own process group and delivers its output line by line (lines
// over 64 KiB end the stream). Close stops it: SIGTERM, then SIGKILL after a second.
func StartStream(argv []string) (telemetry.Stream, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	c := command(argv)
	pr, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.Stderr = io.Discard
	if err := c.Start(); err != nil {
		return nil, err
	}
	s := &stream{c: c, lines: make(chan string, 64), done: make(chan struct{})}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 4096), 64<<10)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			case <-s.done:
				return
			}
		}
	}()
	return s, nil
}

func (s *stream) Lines() <-chan string { return s.lines }

func (s *stream) Close() error {
	s.once.Do(func() {
		close(s.done)
		exited := make(chan struct{})
		go func() { _ = s.c.Wait(); close(exited) }()
		select {
		case <-exited:
		default:
			killGroup(s.c, exited)
			<-exited
		}
		for range s.lines { // the reader ends at EOF or on done
		}
	})
	return nil
}
