// Package loadgen is the streaming load generator of capacity studies: C concurrent clients
// in a closed loop, each taking the next request of a fixed prompt plan, POSTing llama-server's
// /completion with stream: true and timing the server-sent events on one monotonic clock.
// It is a producer in vegeta's style: Start returns at once, results arrive on a channel that
// is closed when every request is accounted for, and Stop is idempotent.
//
//	a := loadgen.Start(ctx, loadgen.Config{URL: "http://127.0.0.1:8080", Clients: 4,
//		Warmups: 4, Measured: 8, NPredict: 64, Seed: 42, Prompt: plan.Prompt, Origin: passStart})
//	for r := range a.Results() { … }   // exactly Warmups + Measured results
//
// The package also holds FakeServer, an in-process llama-server stand-in that streams tokens on
// a known schedule (and injects faults) for tests and benchmarks.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Phases of a request.
const (
	PhaseWarmup   = "warmup"   // sent and discarded
	PhaseMeasured = "measured" // enters the metrics
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout     = 5 * time.Minute // per request
	DefaultReadBuffer  = 16 << 10        // the SSE reader's buffer (a final event is ~3 KB; longer lines are assembled)
	DefaultDialTimeout = 10 * time.Second
	maxErrorBody       = 64 << 10
	idleConnTimeout    = 4 * time.Second // below llama-server's keep-alive timeout of 5 s
)

// Config is one client level's load: Warmups then Measured requests through Clients workers.
type Config struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:8080 (the path /completion is added).
	URL string
	// Clients is C, the number of concurrent workers (closed loop: each sends its next request
	// when its previous one ended).
	Clients int
	// Warmups are sent first and discarded; Measured start together once every warmup ended.
	Warmups, Measured int
	// NPredict is the fixed number of tokens per request (sent with ignore_eos: true).
	NPredict int
	// NPredictOf, when set, gives request i its own number of tokens (an output length
	// distribution); nil: every request asks for NPredict.
	NPredictOf func(i int) int
	// Seed is every request's sampling seed (temperature 0).
	Seed int64
	// Prompt gives the text of request i (0-based, in the order requests are taken: warmups
	// first). The caller makes prompts unique across a server's lifetime.
	Prompt func(i int) string
	// Timeout bounds each request from send to its final event (default 5 min).
	Timeout time.Duration
	// Origin is the clock every time is measured from: one per pass. Zero: Start's time.
	Origin time.Time
	// Transport carries the requests; nil: NewTransport(Clients), closed when the run ends.
	Transport *http.Transport
	// TokenTimes keeps the arrival time of every event that carries generated content.
	TokenTimes bool
	// AllowRemote permits a non-loopback URL (refused by default: sparkbench measures a server
	// on this machine).
	AllowRemote bool
	// Schedule, when set, makes the measured phase open-loop: measured request k is due at
	// Schedule[k] after the phase starts (Schedule has Measured offsets, non-decreasing),
	// whether or not earlier requests ended. Warmups still run closed-loop through Clients
	// workers first. Result.Scheduled is the due time, and latency is measured from it
	// (coordinated-omission-correct); Send - Scheduled is the send delay.
	Schedule []time.Duration
	// MaxInFlight bounds the open-loop requests in flight (default DefaultMaxInFlight): a
	// request due while the bound is reached waits for a slot, and its send delay says so.
	MaxInFlight int
	// CachePrompt sends cache_prompt: true (llama-server may reuse a cached prefix); false
	// by default: every request is cold.
	CachePrompt bool
	// Follows, with Schedule, makes the measured requests conversations' turns: Follows[k] is
	// the measured request that k follows (the turn before it in its conversation), or -1 for
	// a conversation's first turn. Schedule then has one offset per first turn, in order: a
	// first turn is due at its offset, a later turn when the turn it follows ended (its
	// Scheduled), and a turn whose predecessor failed is not sent (NotSent, saying why).
	Follows []int
}

// Result is one request as the client measured it. Every time is since Config.Origin on the
// monotonic clock.
type Result struct {
	Clients int    `json:"clients"`
	Phase   string `json:"phase"`
	Seq     int    `json:"seq"`   // 0-based within (clients, phase)
	Index   int    `json:"index"` // 0-based in take order (warmups first): the argument of Prompt
	// Scheduled is when an open-loop request was due (Config.Schedule); zero in a closed loop.
	Scheduled time.Duration `json:"scheduled,omitempty"`
	// Send is when the request bytes were written (httptrace WroteRequest) by its last send,
	// the one that got the response (see Retries); when the write never completed, when the
	// request was handed to the transport.
	Send time.Duration `json:"send"`
	// FirstToken is the first event carrying generated content; valid when HasFirstToken.
	FirstToken    time.Duration `json:"first_token"`
	HasFirstToken bool          `json:"has_first_token"`
	// End is the final event (stop: true), or when the request failed.
	End time.Duration `json:"end"`
	// Tokens is the server's tokens_predicted: from the final event, or the last one seen when
	// the stream ended early.
	Tokens int `json:"tokens"`
	// ContentEvents counts the events that carried generated content.
	ContentEvents int `json:"content_events"`
	HTTPStatus    int `json:"http_status"` // 0: no HTTP response
	// Retries counts resends after a stale keep-alive connection, the load generator's and Go
	// transport's own (see Attack.send).
	Retries  int    `json:"retries,omitempty"`
	StopType string `json:"stop_type,omitempty"`
	// Error is empty for a request that ended with its final event; otherwise what went wrong.
	Error   string         `json:"error,omitempty"`
	NotSent bool           `json:"not_sent,omitempty"` // never sent (the run was stopped first)
	Timings *ServerTimings `json:"timings,omitempty"`
	// TokenTimes are the arrival times of the content events (Config.TokenTimes).
	TokenTimes []time.Duration `json:"token_times,omitempty"`
}

// OK says the request ended with its final event, HTTP 200 and no error.
func (r Result) OK() bool { return r.HTTPStatus == http.StatusOK && r.Error == "" && !r.NotSent }

// NewTransport is an HTTP/1.1 transport sized for c keep-alive connections to one server: no
// proxy, no compression, idle connections dropped before llama-server's 5 s keep-alive ends.
func NewTransport(c int) *http.Transport {
	if c < 1 {
		c = 1
	}
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        c,
		MaxIdleConnsPerHost: c,
		MaxConnsPerHost:     c,
		IdleConnTimeout:     idleConnTimeout,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     8 << 10,
		ReadBufferSize:      16 << 10,
	}
}

// CompletionBody is the JSON body of request prompt: streamed, no prompt cache, fixed length
// (ignore_eos), greedy (temperature 0) with a fixed seed.
func CompletionBody(prompt string, nPredict int, seed int64) []byte {
	return completionBody(prompt, nPredict, seed, false)
}

func completionBody(prompt string, nPredict int, seed int64, cache bool) []byte {
	b, _ := json.Marshal(struct {
		Prompt      string `json:"prompt"`
		NPredict    int    `json:"n_predict"`
		Stream      bool   `json:"stream"`
		CachePrompt bool   `json:"cache_prompt"`
		IgnoreEOS   bool   `json:"ignore_eos"`
		Temperature int    `json:"temperature"`
		Seed        int64  `json:"seed"`
	}{prompt, nPredict, true, cache, true, 0, seed})
	return b
}

// Attack is one running client level.
type Attack struct {
	cfg      Config
	url      string
	client   *http.Client
	fresh    *http.Client // for resends after a stale connection: one new connection each
	ownTrans bool
	results  chan Result
	ctx      context.Context
	cancel   context.CancelCauseFunc
	stopOnce sync.Once
	bodies   [][]byte
	timedOut error // the cause of a request's timeout
}

// ErrStopped is the cause of requests cut short by Stop.
var ErrStopped = errors.New("stopped")

// Start begins the load and returns at once. A refused configuration yields no request: the
// results channel carries one NotSent result per request with the reason, then closes.
// Cancelling ctx (with a cause, see context.WithCancelCause) is the same as Stop, and the
// cause is quoted in the results it cuts short.
func Start(ctx context.Context, cfg Config) *Attack {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Origin.IsZero() {
		cfg.Origin = time.Now()
	}
	total := max(cfg.Warmups, 0) + max(cfg.Measured, 0)
	a := &Attack{cfg: cfg, results: make(chan Result, max(total, 1))}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	if err := a.check(); err != nil {
		go a.refuse(err)
		return a
	}
	a.timedOut = fmt.Errorf("timed out after %s (the per-request limit)", cfg.Timeout)
	a.bodies = make([][]byte, total)
	for i := range a.bodies {
		a.bodies[i] = completionBody(cfg.Prompt(i), cfg.nPredict(i), cfg.Seed, cfg.CachePrompt)
	}
	tr := cfg.Transport
	if tr == nil {
		tr, a.ownTrans = NewTransport(a.conns()), true
	}
	a.client = &http.Client{Transport: tr} // no client timeout: each request has its own context
	ft := tr.Clone()
	ft.DisableKeepAlives = true
	a.fresh = &http.Client{Transport: ft}
	go a.run()
	return a
}

// nPredict is the number of tokens request i asks for.
func (c Config) nPredict(i int) int {
	if c.NPredictOf != nil {
		return c.NPredictOf(i)
	}
	return c.NPredict
}

func (a *Attack) check() error {
	c := a.cfg
	switch {
	case c.Clients < 1:
		return fmt.Errorf("clients %d: want at least 1", c.Clients)
	case c.Warmups < 0 || c.Measured < 0:
		return fmt.Errorf("warmups %d, measured %d: want non-negative counts", c.Warmups, c.Measured)
	case c.NPredict < 1:
		return fmt.Errorf("n_predict %d: want at least 1", c.NPredict)
	case c.Prompt == nil:
		return errors.New("no prompt function")
	}
	for i := range max(c.Warmups, 0) + max(c.Measured, 0) {
		if n := c.nPredict(i); n < 1 {
			return fmt.Errorf("n_predict %d of request %d: want at least 1", n, i)
		}
	}
	if err := c.checkSchedule(); err != nil {
		return err
	}
	if err := checkURL(c.URL, c.AllowRemote); err != nil {
		return err
	}
	a.url = strings.TrimRight(c.URL, "/") + "/completion"
	return nil
}

// checkURL refuses a server URL that is not http(s)://HOST:PORT, or, unless remote, not on
// this machine's loopback interface.
func checkURL(s string, remote bool) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server URL %q: want http://127.0.0.1:PORT", s)
	}
	if !remote && !isLoopback(u.Hostname()) {
		return fmt.Errorf("server URL %q is not on this machine's loopback interface (127.0.0.1)", s)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Results is the producer's channel: one result per request (Warmups + Measured), in the
// order they ended, then closed.
func (a *Attack) Results() <-chan Result { return a.results }

// Stop cuts the run short: requests in flight are cancelled (their results say so), requests
// not yet taken are reported NotSent. Idempotent; safe from any goroutine.
func (a *Attack) Stop() { a.StopCause(ErrStopped) }

// StopCause is Stop with the reason quoted in the results it cuts short.
func (a *Attack) StopCause(cause error) {
	a.stopOnce.Do(func() { a.cancel(cause) })
}

func (a *Attack) since() time.Duration { return time.Since(a.cfg.Origin) }

func (a *Attack) refuse(err error) {
	now := a.since()
	for i := 0; i < a.cfg.Warmups+a.cfg.Measured; i++ {
		r := a.shell(i)
		r.Send, r.End, r.NotSent, r.Error = now, now, true, "not sent: "+err.Error()
		a.results <- r
	}
	close(a.results)
}

// shell is request i's identity.
func (a *Attack) shell(i int) Result {
	r := Result{Clients: a.cfg.Clients, Phase: PhaseWarmup, Seq: i, Index: i}
	if i >= a.cfg.Warmups {
		r.Phase, r.Seq = PhaseMeasured, i-a.cfg.Warmups
	}
	return r
}

func (a *Attack) run() {
	defer close(a.results)
	defer a.cancel(nil)
	if a.ownTrans {
		defer a.client.Transport.(*http.Transport).CloseIdleConnections()
	}
	defer a.fresh.Transport.(*http.Transport).CloseIdleConnections()
	a.phase(0, a.cfg.Warmups)
	if a.cfg.Schedule != nil {
		a.open(a.cfg.Warmups, a.cfg.Warmups+a.cfg.Measured)
		return
	}
	a.phase(a.cfg.Warmups, a.cfg.Warmups+a.cfg.Measured)
}

// phase runs requests [from, to) through the workers and returns when all have ended: the
// measured requests start together after the last warmup.
func (a *Attack) phase(from, to int) {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for range min(a.cfg.Clients, max(to-from, 0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if a.ctx.Err() != nil {
					r := a.shell(i)
					r.Send = a.since()
					r.End, r.NotSent = r.Send, true
					r.Error = "not sent: " + causeText(a.ctx)
					a.results <- r
					continue
				}
				a.results <- a.do(i)
			}
		}()
	}
	wg.Wait()
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "stopped"
}

// do sends request i and reads its stream to the final event.
func (a *Attack) do(i int) Result {
	r := a.shell(i)
	ctx, cancel := context.WithTimeoutCause(a.ctx, a.cfg.Timeout, a.timedOut)
	defer cancel()
	var (
		resp *http.Response
		err  error
		send time.Duration
	)
	client := a.client
	for {
		var stale bool
		var resent int
		resp, send, resent, stale, err = a.send(ctx, client, i)
		r.Retries += resent
		if err == nil || !stale || client == a.fresh || ctx.Err() != nil {
			break
		}
		r.Retries++
		client = a.fresh // a new connection cannot be stale
	}
	if err != nil {
		r.End = a.since()
		r.Send = min(send, r.End)
		r.Error = requestError(ctx, err)
		return r
	}
	defer resp.Body.Close()
	r.Send = send
	r.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		r.End = a.since()
		r.Error = httpError(resp.StatusCode, body)
		return r
	}
	a.stream(ctx, resp.Body, &r)
	if r.End < r.Send { // the response raced the WroteRequest callback; keep the order sane
		r.Send = r.End
	}
	if r.HasFirstToken && r.FirstToken < r.Send {
		r.FirstToken = r.Send
	}
	return r
}

// send makes one attempt at request i. stale reports the signature of a keep-alive
// connection the server had already closed: a reused connection that failed with EOF or a
// reset before any byte of a response arrived. llama-server (cpp-httplib) often closes a
// connection after a streamed response although it advertises keep-alive, and Go does not
// resend a POST once its bytes went out; the server never read such a request, so it is sent
// once more on a connection of its own (Attack.fresh: keep-alive off), timed from that send
// (Result.Retries counts them). Another pooled connection would not do: it may be one the
// server is closing at that very moment.
//
// send is the time the request's bytes were written on the connection that answered (or
// failed last); resent counts the times the transport itself sent the request again within
// this attempt (it does, on another connection, when not a byte could be written on a reused
// one): each takes a connection of its own (GotConn).
func (a *Attack) send(ctx context.Context, client *http.Client, i int) (resp *http.Response, send time.Duration, resent int, stale bool, err error) {
	var wrote atomic.Int64
	var reused, answered atomic.Bool
	var conns atomic.Int32
	wrote.Store(-1)
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			conns.Add(1)
			reused.Store(info.Reused)
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil { // the last complete write: a failed one is resent or fails the request
				wrote.Store(int64(a.since()))
			}
		},
		GotFirstResponseByte: func() { answered.Store(true) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, a.url, bytes.NewReader(a.bodies[i]))
	if err != nil {
		return nil, a.since(), 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	handed := a.since()
	resp, err = client.Do(req)
	send = handed
	if w := wrote.Load(); w >= 0 {
		send = time.Duration(w)
	}
	if err != nil {
		stale = reused.Load() && !answered.Load() && staleError(err)
	}
	return resp, send, max(int(conns.Load())-1, 0), stale, err
}

func staleError(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "server closed idle connection")
}

// stream reads the SSE body to the final event.
func (a *Attack) stream(ctx context.Context, body io.Reader, r *Result) {
	sr := getSSEReader(body)
	defer putSSEReader(sr)
	for {
		data, err := sr.next()
		now := a.since()
		if err != nil {
			r.End = now
			r.Error = streamError(ctx, err, r.ContentEvents)
			return
		}
		ev, derr := parseEvent(data)
		if derr != nil {
			r.End = now
			r.Error = fmt.Sprintf("malformed event after %d content events: %v", r.ContentEvents, derr)
			return
		}
		if ev.err != nil {
			r.End = now
			r.Error = "server error event: " + ev.err.String()
			return
		}
		if ev.predicted > 0 || ev.stop {
			r.Tokens = ev.predicted
		}
		if ev.content {
			a.content(r, now)
		}
		if ev.stop {
			r.End, r.StopType, r.Timings = now, ev.stopType, ev.timings
			if r.HasFirstToken && r.Tokens >= 2 && r.FirstToken == r.End {
				r.End++ // one nanosecond: the records refuse an undefined inter-token latency
			}
			return
		}
	}
}

func (a *Attack) content(r *Result, now time.Duration) {
	if !r.HasFirstToken {
		r.FirstToken, r.HasFirstToken = now, true
	}
	r.ContentEvents++
	if a.cfg.TokenTimes {
		if r.TokenTimes == nil {
			r.TokenTimes = make([]time.Duration, 0, a.cfg.NPredict)
		}
		r.TokenTimes = append(r.TokenTimes, now)
	}
}

func requestError(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return causeText(ctx)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

func streamError(ctx context.Context, err error, events int) string {
	if ctx.Err() != nil {
		return fmt.Sprintf("%s (after %d content events)", causeText(ctx), events)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Sprintf("stream ended after %d content events without the final event (incomplete)", events)
	}
	return fmt.Sprintf("stream broken after %d content events: %v", events, err)
}

// httpError quotes a non-200 answer: llama-server's {"error":{"code","message","type"}} when
// the body holds one, else the body's start.
func httpError(status int, body []byte) string {
	var e struct {
		Error *serverError `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Message != "" {
		return fmt.Sprintf("HTTP %d: %s", status, e.Error.Message)
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	}
	return fmt.Sprintf("HTTP %d: %s", status, s)
}
