package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// staleConn imitates a keep-alive connection the server closed while it was idle: the first
// request on it goes through, the next finds it dead. swallow: the bytes of the second
// request vanish as into a closed socket (the write succeeds, the read meets EOF), so the
// transport fails the request; !swallow: the write fails before a byte went out, so the
// transport resends the request by itself on a new connection.
type staleConn struct {
	net.Conn
	swallow bool
	origin  time.Time
	dead    *atomic.Int64 // when the second request met the dead connection, since origin
	writes  int
	killed  atomic.Bool
}

func (c *staleConn) Write(p []byte) (int, error) {
	c.writes++
	if c.writes < 2 {
		return c.Conn.Write(p)
	}
	c.dead.Store(int64(time.Since(c.origin)))
	c.killed.Store(true)
	_ = c.Conn.Close()
	if c.swallow {
		return len(p), nil
	}
	return 0, syscall.EPIPE
}

func (c *staleConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && c.killed.Load() {
		err = io.EOF
	}
	return n, err
}

// staleTransport makes the first connection it dials stale after one request.
func staleTransport(swallow bool, origin time.Time, dead *atomic.Int64) *http.Transport {
	tr := NewTransport(1)
	dial := tr.DialContext
	var once sync.Once
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return c, nil
		}
		return &staleConn{Conn: c, swallow: swallow, origin: origin, dead: dead}, nil
	}
	return tr
}

// A request resent after a stale connection is counted in Retries and timed from the send
// that the server answered: after the dead connection failed, before the server received it.
// Both ways: the load generator's resend (the bytes went out on the dead connection), and the
// transport's own (not a byte could be written).
func TestResendTimedFromTheAnsweredSend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		swallow bool
	}{{"load generator resends", true}, {"transport resends", false}} {
		t.Run(tc.name, func(t *testing.T) {
			// One write per response, with its length: the client sees the end of the body
			// with the final event, so its connection goes back to the pool every time.
			var mu sync.Mutex
			received := map[string]time.Time{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var in struct {
					Prompt   string `json:"prompt"`
					NPredict int    `json:"n_predict"`
				}
				_ = json.NewDecoder(r.Body).Decode(&in)
				mu.Lock()
				received[in.Prompt] = time.Now()
				mu.Unlock()
				var b []byte
				for k := range in.NPredict {
					b = appendTokenEvent(b, k, in.Prompt)
				}
				b = appendFinalEvent(b, in.NPredict, FakeConfig{})
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(b)
			}))
			defer srv.Close()
			origin := time.Now()
			var dead atomic.Int64
			dead.Store(-1)
			tr := staleTransport(tc.swallow, origin, &dead)
			defer tr.CloseIdleConnections()
			rs := collect(Start(context.Background(), Config{URL: srv.URL, Clients: 1, Measured: 2, NPredict: 4,
				Prompt: prompt, Origin: origin, Transport: tr}))
			if len(rs) != 2 {
				t.Fatalf("%d results", len(rs))
			}
			first, second := rs[0], rs[1]
			if first.Seq != 0 {
				first, second = second, first
			}
			if !first.OK() || first.Retries != 0 {
				t.Errorf("first request: %+v", first)
			}
			if !second.OK() || second.Tokens != 4 || second.Retries != 1 {
				t.Fatalf("second request (one resend): %+v", second)
			}
			mu.Lock()
			if len(received) != 2 {
				t.Errorf("the server received %d requests, want 2", len(received))
			}
			at := received[prompt(1)].Sub(origin)
			mu.Unlock()
			d := time.Duration(dead.Load())
			if d < 0 || at <= 0 {
				t.Fatalf("dead connection met at %v, resend received at %v", d, at)
			}
			if second.Send < d || second.Send > at {
				t.Errorf("send %v: want the resend's, between the dead connection (%v) and the server's receipt (%v)", second.Send, d, at)
			}
			if !(second.Send <= second.FirstToken && second.FirstToken <= second.End) {
				t.Errorf("times out of order: %+v", second)
			}
		})
	}
}
