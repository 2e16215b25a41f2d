package remote

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/remote/sshdtest"
)

func testHost(alias string) Host {
	return Host{Name: alias, SSH: alias, LlamaDir: "/nonexistent-llama", ModelDirs: []string{"/nonexistent-models"}}
}

func TestQuoteRoundTripsThroughTheRemoteShell(t *testing.T) {
	srv := sshdtest.Start(t, "quote-host")
	cfg := sshdtest.WriteConfig(t, "", srv)
	c, err := Open(context.Background(), testHost("quote-host"), Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	words := []string{"plain", "it's", `dollar $HOME`, "`backtick`", `back\slash`, "semi;colon && true", "*", "", "ünïcode", `"dq"`}
	cmd, err := Command(append([]string{"/usr/bin/printf", `%s\n`}, words...))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Output(context.Background(), 0, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), strings.Join(words, "\n")+"\n"; got != want {
		t.Fatalf("the host printed %q, want %q", got, want)
	}
	if _, err := Command([]string{"echo", "a\nb"}); err == nil {
		t.Fatal("a line break in an argument was accepted")
	}
}

func TestOpenRefusesPrecisely(t *testing.T) {
	srv := sshdtest.Start(t, "good-host")
	other := sshdtest.Start(t, "other-host")
	// a listener that accepts and never speaks: the banner exchange times out
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	closedPort := sshdtest.FreePort(t)
	extra := "Host refused-host\n  HostName 127.0.0.1\n  Port " + strconv.Itoa(closedPort) + "\n" +
		"Host silent-host\n  HostName 127.0.0.1\n  Port " + strconv.Itoa(silent.Addr().(*net.TCPAddr).Port) + "\n" +
		"Host *\n  BatchMode yes\n  StrictHostKeyChecking yes\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n"
	// good-host's known_hosts holds other-host's key: a mismatch
	srv.WriteKnownHosts(t, other.HostPub)
	cfg := sshdtest.WriteConfig(t, extra, srv)
	for _, tc := range []struct{ alias, kind, words string }{
		{"no-such-alias.invalid", "unknown_host", "does not resolve"},
		{"good-host", "host_key", "never bypasses"},
		{"refused-host", "refused", "refused"},
		{"silent-host", "timeout", "timed out"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			_, err := Open(context.Background(), testHost(strings.TrimSuffix(tc.alias, ".invalid")), Options{Config: cfg, ConnectTimeout: 2 * time.Second})
			if tc.alias == "no-such-alias.invalid" {
				h := testHost("nohost")
				h.SSH = tc.alias
				_, err = Open(context.Background(), h, Options{Config: cfg, ConnectTimeout: 2 * time.Second})
			}
			var ce *ConnError
			if !errors.As(err, &ce) || ce.Kind != tc.kind || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("Open(%s) = %v, want a %s ConnError saying %q", tc.alias, err, tc.kind, tc.words)
			}
		})
	}
}

func TestCloseEndsTheMaster(t *testing.T) {
	srv := sshdtest.Start(t, "close-host")
	c, err := Open(context.Background(), testHost("close-host"), Options{Config: sshdtest.WriteConfig(t, "", srv)})
	if err != nil {
		t.Fatal(err)
	}
	pid := c.MasterPid()
	c.Close()
	if c.Alive() {
		t.Fatalf("master %d still running after Close", pid)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatalf("master %d still exists", pid)
	}
}
