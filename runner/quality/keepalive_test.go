package quality

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A server that closes a kept-alive connection once a second request arrives on it (as
// llama-server may after a stream) must not fail a case: every case gets its own connection.
// With keep-alive the second case's POST died with EOF, which read as a failed case.
func TestFaultsQualityCasesSurviveAServerThatDropsKeptConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	body := "data: {\"content\":\"4\",\"stop\":false}\n\ndata: {\"content\":\"\",\"stop\":true,\"stop_type\":\"limit\",\"tokens_predicted\":1}\n\n"
	go func() {
		for i := 0; i < 8; i++ { // bounded: a few connections at most
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				r := bufio.NewReader(c)
				for served := 0; ; served++ {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if served > 0 {
						return // a second request on a kept connection: drop it unanswered
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
			}(conn)
		}
	}()
	cases := &Cases{Schema: SchemaCases, Cases: []Case{
		{ID: "a", Prompt: "2+2=", NPredict: 1, Matcher: MatchContain, Expect: "4"},
		{ID: "b", Prompt: "2+2=", NPredict: 1, Matcher: MatchContain, Expect: "4"},
		{ID: "c", Prompt: "2+2=", NPredict: 1, Matcher: MatchContain, Expect: "4"},
	}}
	ev, err := Run(context.Background(), Config{URL: "http://" + ln.Addr().String(), Candidate: "x", Slots: 1, Seed: 1, Timeout: 10 * time.Second}, cases)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ev.Cases {
		if c.Outcome != "pass" {
			t.Errorf("case %s: %s (%s)", c.ID, c.Outcome, c.Detail)
		}
	}
	if !strings.Contains(ev.Cases[2].Detail, `answer "4"`) {
		t.Errorf("detail %q", ev.Cases[2].Detail)
	}
}
