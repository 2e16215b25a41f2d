package loadgen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FakeConfig is what a FakeServer streams: llama-server's /completion SSE format on a known
// schedule, with optional faults per request.
type FakeConfig struct {
	// TTFT is the time from a request's arrival (its body read) to its first token event.
	TTFT time.Duration
	// ITL is the time between token events; the final event follows the last token at once.
	ITL time.Duration
	// Tokens per request; 0: the request's n_predict.
	Tokens int
	// Fault, when set, is asked for each request (n: 0-based arrival order).
	Fault func(n int) Fault
	// Record keeps every request's arrival and emission times (Served).
	Record bool
	// Addr is where to listen: a loopback host and a port; default 127.0.0.1:0 (a free port).
	Addr string
	// CloseAfterResponse imitates llama-server's habit: it advertises keep-alive but often
	// closes the connection right after a streamed response, so a client that reuses it at
	// that moment meets a dead connection.
	CloseAfterResponse bool
	// ReportITL, when set, is the gap between tokens the final event's timings claim
	// (predicted_ms = (n - 1) x ReportITL) instead of ITL: a server whose own timings disagree
	// with what the client sees.
	ReportITL time.Duration
	// WordTokens makes a prompt one token a word: /tokenize counts them, and a final event's
	// prompt_n (less cache_n) and tokens_evaluated are that count. Off, every prompt is 9
	// tokens, to /tokenize too.
	WordTokens bool
	// Slots, when above 0, serves at most this many requests at a time, as llama-server's
	// slots do: a request waits for a free slot, and its TTFT runs from when it got one. A
	// fake that saturates: offered more than Slots / (TTFT + tokens × ITL), its queue grows.
	Slots int
}

// Fault is a failure the fake injects into one request.
type Fault struct {
	Status     int    // answer this HTTP status with Body instead of a stream
	Body       string // e.g. {"error":{"code":500,"message":"…","type":"server_error"}}
	CutAfter   int    // close the connection after this many token events (no final event)
	ErrorAfter int    // after this many token events send an error event and end the stream
	// CacheN is the final event's timings.cache_n: prompt tokens the "server" says it took
	// from its prompt cache (a contaminated cold request), taken off prompt_n's 9.
	CacheN int
}

// fakePromptTokens is every prompt's length without WordTokens.
const fakePromptTokens = 9

// promptTokens is the fake's token count of a prompt.
func (c FakeConfig) promptTokens(prompt string) int {
	if c.WordTokens {
		return len(strings.Fields(prompt))
	}
	return fakePromptTokens
}

// Served is one request the fake answered, on the monotonic clock.
type Served struct {
	N        int
	Prompt   string
	NPredict int
	Received time.Time   // body read
	Emitted  []time.Time // each token event, after its flush
	Final    time.Time   // the final event, after its flush (zero if none was sent)
}

// FakeServer is an in-process stand-in for llama-server on 127.0.0.1: GET /health answers
// {"status":"ok"}, POST /completion streams FakeConfig's schedule. Not a model of llama-server's
// performance; a known source to measure the client against.
type FakeServer struct {
	URL string // http://127.0.0.1:PORT

	cfg     FakeConfig
	srv     *http.Server
	ln      net.Listener
	n       atomic.Int64
	closing chan struct{}
	once    sync.Once
	slots   chan struct{} // FakeConfig.Slots (nil: no limit)

	mu     sync.Mutex
	served []Served
}

// StartFake listens on a loopback address (FakeConfig.Addr, default a free port of 127.0.0.1)
// and serves until Close.
func StartFake(cfg FakeConfig) (*FakeServer, error) {
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !isLoopback(host) {
		return nil, fmt.Errorf("fake server address %s: want a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	f := &FakeServer{URL: "http://" + ln.Addr().String(), cfg: cfg, ln: ln, closing: make(chan struct{})}
	if cfg.Slots > 0 {
		f.slots = make(chan struct{}, cfg.Slots)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("POST /completion", f.completion)
	mux.HandleFunc("POST /tokenize", f.tokenize)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// Close stops the server and ends every stream in flight.
func (f *FakeServer) Close() error {
	f.once.Do(func() { close(f.closing) })
	return f.srv.Close()
}

// Served lists the requests answered so far (with FakeConfig.Record).
func (f *FakeServer) Served() []Served {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Served(nil), f.served...)
}

// Requests counts the requests received.
func (f *FakeServer) Requests() int { return int(f.n.Load()) }

func (f *FakeServer) completion(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Prompt   string `json:"prompt"`
		NPredict int    `json:"n_predict"`
		Stream   bool   `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	rec := Served{N: int(f.n.Add(1) - 1), Prompt: in.Prompt, NPredict: in.NPredict, Received: time.Now()}
	var fault Fault
	if f.cfg.Fault != nil {
		fault = f.cfg.Fault(rec.N)
	}
	if f.cfg.Record {
		defer func() {
			f.mu.Lock()
			f.served = append(f.served, rec)
			f.mu.Unlock()
		}()
	}
	if fault.Status != 0 && fault.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fault.Status)
		_, _ = w.Write([]byte(fault.Body))
		return
	}
	if !in.Stream {
		http.Error(w, `{"error":{"code":400,"message":"the fake only streams","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	n := f.cfg.Tokens
	if n <= 0 {
		n = in.NPredict
	}
	if f.slots != nil {
		select {
		case f.slots <- struct{}{}:
			defer func() { <-f.slots }()
			rec.Received = time.Now()
		case <-r.Context().Done():
			return
		case <-f.closing:
			return
		}
	}
	out, err := f.open(w)
	if err != nil {
		return
	}
	defer out.close()
	if f.cfg.Record {
		rec.Emitted = make([]time.Time, 0, n)
	}
	buf := make([]byte, 0, 512)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := 0; k < n; k++ {
		if !f.wait(r, timer, rec.Received.Add(f.cfg.TTFT+time.Duration(k)*f.cfg.ITL)) {
			return
		}
		if fault.ErrorAfter > 0 && k == fault.ErrorAfter {
			_ = out.event([]byte(`data: {"error":{"code":500,"message":"injected error after ` + strconv.Itoa(k) + ` tokens","type":"server_error"}}` + "\n\n"))
			return
		}
		if fault.CutAfter > 0 && k == fault.CutAfter {
			out.abort()
			return
		}
		buf = appendTokenEvent(buf[:0], k, in.Prompt)
		if out.event(buf) != nil {
			return
		}
		if f.cfg.Record {
			rec.Emitted = append(rec.Emitted, time.Now())
		}
	}
	pn := f.cfg.promptTokens(in.Prompt)
	buf = appendFinalEventCache(buf[:0], n, f.cfg, pn, min(max(fault.CacheN, 0), pn))
	if out.event(buf) != nil {
		return
	}
	rec.Final = time.Now()
}

// sseOut writes one streamed response: through net/http, or (CloseAfterResponse) as raw
// HTTP/1.1 chunks on the hijacked connection, which is closed after the last chunk.
type sseOut struct {
	w    http.ResponseWriter
	fl   http.Flusher
	conn net.Conn
	bw   *bufio.Writer
}

func (f *FakeServer) open(w http.ResponseWriter) (*sseOut, error) {
	if !f.cfg.CloseAfterResponse {
		o := &sseOut{w: w}
		o.fl, _ = w.(http.Flusher)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Server", "sparkbench-fake")
		w.WriteHeader(http.StatusOK)
		if o.fl != nil {
			o.fl.Flush()
		}
		return o, nil
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, errors.New("cannot hijack")
	}
	conn, bw, err := hj.Hijack()
	if err != nil {
		return nil, err
	}
	o := &sseOut{conn: conn, bw: bw.Writer}
	_, _ = o.bw.WriteString("HTTP/1.1 200 OK\r\nServer: sparkbench-fake\r\nContent-Type: text/event-stream\r\n" +
		"Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n")
	return o, o.bw.Flush()
}

func (o *sseOut) event(b []byte) error {
	if o.conn == nil {
		if _, err := o.w.Write(b); err != nil {
			return err
		}
		if o.fl != nil {
			o.fl.Flush()
		}
		return nil
	}
	_, _ = o.bw.WriteString(strconv.FormatInt(int64(len(b)), 16) + "\r\n")
	_, _ = o.bw.Write(b)
	_, _ = o.bw.WriteString("\r\n")
	return o.bw.Flush()
}

// abort cuts the response: the client sees the stream end without its final chunk.
func (o *sseOut) abort() {
	if o.conn == nil {
		panic(http.ErrAbortHandler) // net/http closes the connection mid-response
	}
	_ = o.conn.Close()
	o.conn = nil
	o.w = nil
}

func (o *sseOut) close() {
	if o.conn == nil {
		return
	}
	_, _ = o.bw.WriteString("0\r\n\r\n")
	_ = o.bw.Flush()
	time.Sleep(time.Millisecond) // the window in which a client may reuse the connection
	_ = o.conn.Close()
}

// wait sleeps until deadline; false when the client went away or the server is closing.
func (f *FakeServer) wait(r *http.Request, t *time.Timer, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t.Reset(d)
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-f.closing:
		return false
	}
}

func appendTokenEvent(b []byte, k int, prompt string) []byte {
	c := byte('a' + (k+len(prompt))%26)
	b = append(b, `data: {"index":0,"content":"`...)
	b = append(b, c)
	b = append(b, `","tokens":[`...)
	b = strconv.AppendInt(b, int64(c), 10)
	b = append(b, `],"stop":false,"id_slot":-1,"tokens_predicted":`...)
	b = strconv.AppendInt(b, int64(k+1), 10)
	b = append(b, `,"tokens_evaluated":9}`...)
	return append(b, '\n', '\n')
}

func appendFinalEvent(b []byte, n int, cfg FakeConfig) []byte {
	return appendFinalEventCache(b, n, cfg, fakePromptTokens, 0)
}

// appendFinalEventCache is the final event with cacheN of the prompt's promptN tokens from the
// cache.
func appendFinalEventCache(b []byte, n int, cfg FakeConfig, promptN, cacheN int) []byte {
	ms := func(d time.Duration) []byte {
		return strconv.AppendFloat(nil, float64(d)/1e6, 'f', 3, 64)
	}
	itl := cfg.ITL
	if cfg.ReportITL > 0 {
		itl = cfg.ReportITL
	}
	pred := time.Duration(max(n-1, 0)) * itl
	b = append(b, `data: {"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"fake","tokens_predicted":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"tokens_evaluated":`...)
	b = strconv.AppendInt(b, int64(promptN), 10)
	b = append(b, `,"stop_type":"limit","timings":{"cache_n":`...)
	b = strconv.AppendInt(b, int64(cacheN), 10)
	b = append(b, `,"prompt_n":`...)
	b = strconv.AppendInt(b, int64(promptN-cacheN), 10)
	b = append(b, `,"prompt_ms":`...)
	b = append(b, ms(cfg.TTFT)...)
	b = append(b, `,"predicted_n":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"predicted_ms":`...)
	b = append(b, ms(pred)...)
	if pred > 0 {
		b = append(b, `,"predicted_per_second":`...)
		b = strconv.AppendFloat(b, float64(n)/pred.Seconds(), 'f', 3, 64)
	}
	b = append(b, `}}`...)
	return append(b, '\n', '\n')
}

// tokenize answers /tokenize with the fake's count of the prompt's tokens (token i is i).
func (f *FakeServer) tokenize(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content string `json:"content"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxTokenizeBody)).Decode(&in); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad JSON","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	toks := make([]int, f.cfg.promptTokens(in.Content))
	for i := range toks {
		toks[i] = i
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Tokens []int `json:"tokens"`
	}{toks})
}
