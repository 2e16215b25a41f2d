// Package uitest starts what real-window tests need: an Xvfb server of their own.
package uitest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StartXvfb starts a private Xvfb (screen w x h x 24) and returns its DISPLAY (":N"). It is
// stopped when the test ends. Without Xvfb installed the test fails under make test
// (SPARKBENCH_REQUIRE_LLAMA=1 marks a set-up machine) and skips otherwise.
func StartXvfb(t testing.TB, w, h int) string {
	t.Helper()
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		msg := "Xvfb is not installed: run make setup (or apt-get install xvfb)"
		if os.Getenv("SPARKBENCH_REQUIRE_LLAMA") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	r, wpipe, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// -displayfd: Xvfb picks a free display number and writes it to fd 3 when ready.
	cmd := exec.Command(bin, "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", w, h), "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{wpipe}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start Xvfb: %v", err)
	}
	wpipe.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		got <- strings.TrimSpace(line)
	}()
	select {
	case n := <-got:
		if n == "" {
			t.Fatal("Xvfb did not report a display number")
		}
		return ":" + n
	case err := <-exited:
		t.Fatalf("Xvfb exited at start: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Xvfb did not start within 20 s")
	}
	return ""
}
