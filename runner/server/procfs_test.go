package server

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// TestListenerOwnerOfAReapedProcess: another program listens on the port and the process we
// started is gone (it failed to bind and was reaped). It owns nothing, and /proc can tell: a
// 200 on /health there is the other program's (TestPortInUse saw a start taken for healthy
// when this read as "unknown").
func TestListenerOwnerOfAReapedProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if owns, known := listenerOwner(os.Getpid(), port); !known || !owns {
		t.Skipf("/proc cannot tell who listens here (owns %v, known %v)", owns, known)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if owns, known := listenerOwner(cmd.Process.Pid, port); owns || !known {
		t.Fatalf("reaped pid %d: owns %v, known %v; want it known not to own the port", cmd.Process.Pid, owns, known)
	}
}
