package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The headroom benchmark can run the fake in a child process (this test binary, re-executed),
// so that Getrusage around the run counts the client alone. Both processes stamp times on
// CLOCK_MONOTONIC, the clock Go's monotonic readings use, so the timing errors stay exact.
const fakeChildEnv = "SPARKBENCH_LOADGEN_FAKE_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeChildEnv) {
	case "sse":
		os.Exit(fakeChild())
	case "tcp":
		os.Exit(tcpChild())
	}
	os.Exit(m.Run())
}

// tcpChild is the floor's source: on every connection, headroomTokens messages of 120 bytes
// (about one llama-server token event) on the headroom schedule, then close.
func tcpChild() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(ln.Addr().String())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	msg := append(bytes.Repeat([]byte("x"), 119), '\n')
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			t0 := time.Now()
			for k := range headroomTokens {
				time.Sleep(time.Until(t0.Add(headroomTTFT + time.Duration(k)*headroomITL)))
				if _, err := c.Write(msg); err != nil {
					return
				}
			}
		}()
	}
}

// monoNow reads CLOCK_MONOTONIC in nanoseconds.
func monoNow() int64 {
	var ts syscall.Timespec
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// clockPair ties a time.Time to CLOCK_MONOTONIC.
type clockPair struct {
	t    time.Time
	mono int64
}

func newClockPair() clockPair {
	a := monoNow()
	t := time.Now()
	b := monoNow()
	return clockPair{t, (a + b) / 2}
}

func (c clockPair) at(t time.Time) int64 { return c.mono + int64(t.Sub(c.t)) }

// childServed is Served on CLOCK_MONOTONIC, as the child reports it.
type childServed struct {
	Prompt   string  `json:"prompt"`
	Received int64   `json:"received"`
	Emitted  []int64 `json:"emitted"`
	Final    int64   `json:"final"`
}

// fakeChild serves the headroom schedule, prints its URL, and on a line on stdin prints what
// it served (JSON) and exits.
func fakeChild() int {
	clk := newClockPair()
	f, err := StartFake(FakeConfig{TTFT: headroomTTFT, ITL: headroomITL, Tokens: headroomTokens, Record: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(f.URL)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	// The fake files a request after its final flush, so the client may ask before the last
	// handlers have filed theirs: wait for every request received to be filed.
	for end := time.Now().Add(5 * time.Second); len(f.Served()) < f.Requests() && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	var out []childServed
	for _, s := range f.Served() {
		c := childServed{Prompt: s.Prompt, Received: clk.at(s.Received), Final: clk.at(s.Final)}
		for _, e := range s.Emitted {
			c.Emitted = append(c.Emitted, clk.at(e))
		}
		out = append(out, c)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	_ = f.Close()
	return 0
}

// fakeProc is a running child fake.
type fakeProc struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startFakeChild(tb testing.TB, mode string) *fakeProc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeChildEnv+"="+mode)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &fakeProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	tb.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	line, err := p.out.ReadString('\n')
	if err != nil {
		tb.Fatalf("fake child: %v", err)
	}
	p.URL = strings.TrimSpace(line)
	return p
}

// served asks the child for what it served and waits for it to exit.
func (p *fakeProc) served(tb testing.TB) []childServed {
	tb.Helper()
	if _, err := io.WriteString(p.stdin, "dump\n"); err != nil {
		tb.Fatal(err)
	}
	var out []childServed
	if err := json.NewDecoder(p.out).Decode(&out); err != nil {
		tb.Fatalf("fake child: %v", err)
	}
	_ = p.cmd.Wait()
	return out
}

// tcpFloor reads rounds x c connections of the raw TCP child with c goroutines (bufio, one
// ReadSlice per message): the CPU per message that Go's netpoller and the kernel's loopback
// TCP cost on this machine before any HTTP or SSE work.
func tcpFloor(tb testing.TB, c, rounds int) (perMsg time.Duration) {
	p := startFakeChild(tb, "tcp")
	u0, s0 := cpuTime()
	msgs := 0
	var mu sync.Mutex
	for range rounds {
		var wg sync.WaitGroup
		for range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := net.Dial("tcp", p.URL)
				if err != nil {
					tb.Error(err)
					return
				}
				defer conn.Close()
				br := bufio.NewReader(conn)
				n := 0
				for {
					if _, err := br.ReadSlice('\n'); err != nil {
						break
					}
					n++
				}
				mu.Lock()
				msgs += n
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	u1, s1 := cpuTime()
	if msgs == 0 {
		tb.Fatal("no messages")
	}
	return (u1 - u0 + s1 - s0) / time.Duration(msgs)
}

// floorReadDeadline bounds every stream the headroom measurements read (a stall fails them
// instead of hanging).
const floorReadDeadline = 30 * time.Second

// sseFloor is tcpFloor against the load generator's own source: the SSE child, asked over raw
// loopback TCP (one hand-written HTTP/1.1 request per connection, rounds x c connections, c at
// a time) and read the same way (bufio, one ReadSlice per line), no HTTP client, no SSE
// parsing: the CPU per streamed event that the netpoller and the kernel cost for exactly
// the messages, and the pace, that the load generator reads.
func sseFloor(tb testing.TB, c, rounds int) (perEvent time.Duration) {
	p := startFakeChild(tb, "sse")
	addr := strings.TrimPrefix(p.URL, "http://")
	reqs := make([][]byte, rounds*c)
	for i := range reqs {
		body := CompletionBody(prompt(i), headroomTokens, 0)
		reqs[i] = fmt.Appendf(nil, "POST /completion HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\nConnection: close\r\n\r\n%s", addr, len(body), body)
	}
	u0, s0 := cpuTime()
	events := 0
	var mu sync.Mutex
	for r := range rounds {
		var wg sync.WaitGroup
		for k := range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					tb.Error(err)
					return
				}
				defer conn.Close()
				if _, err := conn.Write(reqs[r*c+k]); err != nil {
					tb.Error(err)
					return
				}
				_ = conn.SetReadDeadline(time.Now().Add(floorReadDeadline))
				br := bufio.NewReaderSize(conn, DefaultReadBuffer)
				n := 0
				for {
					var line []byte
					if line, err = br.ReadSlice('\n'); err != nil {
						break
					}
					if bytes.HasPrefix(line, []byte("data: ")) {
						n++
					}
				}
				if n != headroomTokens+1 {
					tb.Errorf("stream %d: %d events, want %d (the tokens and the final event): %v", r*c+k, n, headroomTokens+1, err)
				}
				mu.Lock()
				events += n
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	u1, s1 := cpuTime()
	p.served(tb)
	if events == 0 {
		tb.Fatal("no events")
	}
	return (u1 - u0 + s1 - s0) / time.Duration(events)
}

// epollFloor reads the raw TCP child (as tcpFloor does) without Go's netpoller: sockets of
// its own, one edge-triggered epoll loop on one goroutine, one read per ready connection (a
// read shorter than the buffer drained the socket), so one read syscall per message instead
// of two and no goroutine wakeups. What a hand-made event loop could reach on the machine;
// the part of the floor it keeps (the wakeup of a sleeping thread and the kernel's loopback
// TCP receive path) no client avoids.
func epollFloor(tb testing.TB, c, rounds int) (perMsg time.Duration) {
	p := startFakeChild(tb, "tcp")
	ta, err := net.ResolveTCPAddr("tcp4", p.URL)
	if err != nil {
		tb.Fatal(err)
	}
	sa := &syscall.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		tb.Fatal(err)
	}
	defer syscall.Close(ep)
	const edgeTriggered = 1 << 31 // EPOLLET
	buf := make([]byte, DefaultReadBuffer)
	evs := make([]syscall.EpollEvent, 256)
	u0, s0 := cpuTime()
	msgs := 0
	for range rounds {
		open := 0
		for range c {
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				tb.Fatal(err)
			}
			if err := syscall.Connect(fd, sa); err != nil {
				tb.Fatal(err)
			}
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | edgeTriggered, Fd: int32(fd)}
			if err := errors.Join(syscall.SetNonblock(fd, true), syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev)); err != nil {
				tb.Fatal(err)
			}
			open++
		}
		for open > 0 {
			n, err := syscall.EpollWait(ep, evs, -1)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				tb.Fatal(err)
			}
			for _, ev := range evs[:n] {
				fd := int(ev.Fd)
				for {
					k, err := syscall.Read(fd, buf)
					if err == syscall.EAGAIN {
						break
					}
					if k <= 0 { // EOF or an error: the child is done with this connection
						_ = syscall.Close(fd)
						open--
						break
					}
					msgs += bytes.Count(buf[:k], []byte{'\n'})
					if k < len(buf) && ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP) == 0 {
						break // drained; the next message is a new edge
					}
				}
			}
		}
	}
	u1, s1 := cpuTime()
	if msgs == 0 {
		tb.Fatal("no messages")
	}
	return (u1 - u0 + s1 - s0) / time.Duration(msgs)
}
