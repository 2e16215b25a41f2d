package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func prompt(i int) string { return fmt.Sprintf("Request %d. hello", i) }

func collect(a *Attack) []Result {
	var out []Result
	for r := range a.Results() {
		out = append(out, r)
	}
	return out
}

func TestSSEReader(t *testing.T) {
	in := ": comment\r\n" +
		"event: message\n" +
		"data: {\"a\":1}\n\n" +
		"data:two\n" + // no space after the colon
		"data: lines\r\n\r\n" +
		"id: 7\n\n" + // an event without data is not dispatched
		"data: " + strings.Repeat("x", 300) + "\n\n" + // longer than the reader's buffer
		"data: cut"
	sr := newSSEReader(strings.NewReader(in), 64)
	want := []string{`{"a":1}`, "two\nlines", strings.Repeat("x", 300)}
	for _, w := range want {
		got, err := sr.next()
		if err != nil || string(got) != w {
			t.Fatalf("next = %q, %v; want %q", got, err, w)
		}
	}
	if _, err := sr.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("an event cut by the end of the stream: err %v, want ErrUnexpectedEOF", err)
	}
	sr = newSSEReader(strings.NewReader("data: x\n\n"), 64)
	_, _ = sr.next()
	if _, err := sr.next(); err != io.EOF {
		t.Fatalf("clean end: err %v, want EOF", err)
	}
}

// replay serves a captured llama-server response (status line and headers, blank line, SSE
// body) for every request.
func replay(t *testing.T, name string) *httptest.Server {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("%s: no header/body separator", name)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range bytes.SplitAfter(body, []byte("\n\n")) {
			_, _ = w.Write(ev)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCapturedStreams(t *testing.T) {
	srv := replay(t, "server-completion-stream.sse.http")
	rs := collect(Start(context.Background(), Config{URL: srv.URL, Clients: 1, Measured: 1, NPredict: 16, Prompt: prompt}))
	if len(rs) != 1 {
		t.Fatalf("%d results", len(rs))
	}
	r := rs[0]
	if !r.OK() || r.Tokens != 16 || r.ContentEvents != 16 || !r.HasFirstToken || r.StopType != "limit" {
		t.Fatalf("captured stream: %+v", r)
	}
	if r.Timings == nil || r.Timings.PromptMs != 1.019 || r.Timings.PredictedN != 16 || r.Timings.PredictedMs != 6.197 {
		t.Fatalf("timings %+v", r.Timings)
	}
	if !(r.Send <= r.FirstToken && r.FirstToken < r.End) {
		t.Fatalf("times out of order: %+v", r)
	}

	// The all-bytes model's stream ends in an error event (invalid UTF-8) after 13 tokens.
	srv = replay(t, "allbytes-model.server-completion-stream-invalid-utf8.sse.http")
	r = collect(Start(context.Background(), Config{URL: srv.URL, Clients: 1, Measured: 1, NPredict: 16, Prompt: prompt}))[0]
	if r.OK() || r.HTTPStatus != 200 || r.Tokens != 13 || !strings.Contains(r.Error, "server error event: 500 server_error: [json.exception.type_error.316] invalid UTF-8 byte") {
		t.Fatalf("error event: %+v", r)
	}
}

func TestFakeClosedLoop(t *testing.T) {
	f, err := StartFake(FakeConfig{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	origin := time.Now()
	a := Start(context.Background(), Config{URL: f.URL, Clients: 3, Warmups: 2, Measured: 7, NPredict: 8, Seed: 42,
		Prompt: prompt, Origin: origin, TokenTimes: true})
	rs := collect(a)
	if len(rs) != 9 {
		t.Fatalf("%d results, want 9", len(rs))
	}
	seen := map[string]bool{}
	var lastWarmupEnd, firstMeasuredSend time.Duration = 0, time.Hour
	for _, r := range rs {
		if !r.OK() || r.Tokens != 8 || r.ContentEvents != 8 || len(r.TokenTimes) != 8 {
			t.Fatalf("result %+v", r)
		}
		if ttft := r.FirstToken - r.Send; ttft < 5*time.Millisecond {
			t.Errorf("TTFT %v is below the fake's 5ms schedule", ttft)
		}
		k := fmt.Sprintf("%s/%d", r.Phase, r.Seq)
		if seen[k] {
			t.Fatalf("seq %s twice", k)
		}
		seen[k] = true
		if r.Phase == PhaseWarmup {
			lastWarmupEnd = max(lastWarmupEnd, r.End)
		} else {
			firstMeasuredSend = min(firstMeasuredSend, r.Send)
		}
	}
	if firstMeasuredSend < lastWarmupEnd {
		t.Errorf("a measured request was sent at %v, before the last warmup ended at %v", firstMeasuredSend, lastWarmupEnd)
	}
	prompts := map[string]bool{}
	for _, s := range served(t, f, 9) {
		prompts[s.Prompt] = true
		if s.NPredict != 8 {
			t.Errorf("n_predict %d", s.NPredict)
		}
	}
	if len(prompts) != 9 {
		t.Errorf("%d distinct prompts, want 9 (one per request)", len(prompts))
	}
}

// served waits for the fake to file n requests (it files each after its final flush).
func served(t testing.TB, f *FakeServer, n int) []Served {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if s := f.Served(); len(s) >= n {
			return s
		}
	}
	t.Fatalf("the fake filed %d requests, want %d", len(f.Served()), n)
	return nil
}

func TestRequestBody(t *testing.T) {
	got := string(CompletionBody("Request 3. hi", 64, 42))
	want := `{"prompt":"Request 3. hi","n_predict":64,"stream":true,"cache_prompt":false,"ignore_eos":true,"temperature":0,"seed":42}`
	if got != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
}

func TestFaults(t *testing.T) {
	f, err := StartFake(FakeConfig{TTFT: time.Millisecond, ITL: time.Millisecond, Fault: func(n int) Fault {
		switch n {
		case 0:
			return Fault{Status: 500, Body: `{"error":{"code":500,"message":"boom: the model is on fire","type":"server_error"}}`}
		case 1:
			return Fault{CutAfter: 3}
		case 2:
			return Fault{ErrorAfter: 2}
		}
		return Fault{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs := collect(Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: 4, NPredict: 6, Prompt: prompt}))
	if len(rs) != 4 {
		t.Fatalf("%d results", len(rs))
	}
	bySeq := map[int]Result{}
	for _, r := range rs {
		bySeq[r.Seq] = r
	}
	if r := bySeq[0]; r.HTTPStatus != 500 || r.Error != "HTTP 500: boom: the model is on fire" || r.HasFirstToken {
		t.Errorf("500: %+v", r)
	}
	if r := bySeq[1]; r.HTTPStatus != 200 || r.Tokens != 3 || !strings.Contains(r.Error, "stream ended after 3 content events without the final event") {
		t.Errorf("cut: %+v", r)
	}
	if r := bySeq[2]; r.Tokens != 2 || !strings.Contains(r.Error, "server error event: 500 server_error: injected error after 2 tokens") {
		t.Errorf("error event: %+v", r)
	}
	if r := bySeq[3]; !r.OK() || r.Tokens != 6 {
		t.Errorf("healthy request after the faults: %+v", r)
	}
}

func TestStopAndTimeout(t *testing.T) {
	f, err := StartFake(FakeConfig{TTFT: time.Millisecond, ITL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := Start(context.Background(), Config{URL: f.URL, Clients: 2, Measured: 10, NPredict: 100, Prompt: prompt})
	time.AfterFunc(100*time.Millisecond, func() { a.StopCause(errors.New("llama-server exited: crashed")); a.Stop() })
	start := time.Now()
	rs := collect(a)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("stop took %v", d)
	}
	if len(rs) != 10 {
		t.Fatalf("%d results, want every request accounted for", len(rs))
	}
	notSent := 0
	for _, r := range rs {
		if r.OK() {
			t.Fatalf("a 5 s request finished: %+v", r)
		}
		if !strings.Contains(r.Error, "llama-server exited: crashed") {
			t.Errorf("error %q lacks the cause", r.Error)
		}
		if r.NotSent {
			notSent++
		}
		if r.End < r.Send {
			t.Errorf("end before send: %+v", r)
		}
	}
	if notSent != 8 {
		t.Errorf("%d not sent, want 8", notSent)
	}

	rs = collect(Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: 1, NPredict: 100, Prompt: prompt, Timeout: 80 * time.Millisecond}))
	if r := rs[0]; r.OK() || !strings.Contains(r.Error, "timed out after 80ms (the per-request limit)") || !r.HasFirstToken {
		t.Errorf("timeout: %+v", r)
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "http://10.1.2.3:8080", Clients: 1, Measured: 2, NPredict: 4, Prompt: prompt}, "not on this machine's loopback"},
		{Config{URL: "http://127.0.0.1:1", Clients: 0, Measured: 2, NPredict: 4, Prompt: prompt}, "clients 0"},
		{Config{URL: "127.0.0.1:1", Clients: 1, Measured: 2, NPredict: 4, Prompt: prompt}, "want http://127.0.0.1:PORT"},
	} {
		rs := collect(Start(context.Background(), tc.cfg))
		if len(rs) != 2 || !rs[0].NotSent || !strings.Contains(rs[0].Error, tc.want) {
			t.Errorf("%+v: %+v", tc.cfg, rs)
		}
	}
	// Nothing listens: a connection error, HTTP status 0.
	rs := collect(Start(context.Background(), Config{URL: "http://127.0.0.1:1", Clients: 1, Measured: 1, NPredict: 4, Prompt: prompt}))
	if r := rs[0]; r.HTTPStatus != 0 || !strings.Contains(r.Error, "connection refused") || r.NotSent {
		t.Errorf("refused: %+v", r)
	}
}

func TestPromptPlan(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	data := `{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"Say hi."}`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	p, sum, err := LoadPromptPlan(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Prompt(12) != "Request 12. Say hi." || len(sum) != 64 {
		t.Fatalf("%q %s", p.Prompt(12), sum)
	}
	if _, _, err := LoadPromptPlan(path, strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Fatalf("checksum mismatch: %v", err)
	}
	for _, bad := range []string{`{"schema":"sparkbench.prompts/v1","prefix":"Hi ","body":"x"}`,
		`{"schema":"x","prefix":"{n}","body":"x"}`, `{"schema":"sparkbench.prompts/v1","prefix":"{n}","body":"x","typo":1}`, ``} {
		if _, err := DecodePromptPlan("p.json", []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	// The seed fixture's prompt plan is in this format.
	if _, _, err := LoadPromptPlan(filepath.Join("..", "..", "app", "capacity", "testdata", "seed", "prompt-plan.json"),
		"dc56eff33ade04d0a18d2e203c5c21bf252091456ba9a916273bfc2e957f7475"); err != nil {
		t.Fatal(err)
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: x\r\n\r\n: c\nevent: e\ndata: y"))
	f.Add([]byte("data: {\"index\":0,\"content\":\"g\",\"tokens\":[106],\"stop\":false,\"tokens_predicted\":1}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sr := newSSEReader(bytes.NewReader(b), 16)
		for range len(b) + 2 {
			data, err := sr.next()
			if err != nil {
				return
			}
			_, _ = parseEvent(data)
		}
		t.Fatal("the reader did not end")
	})
}

// llama-server closes many connections right after a streamed response although it
// advertises keep-alive; the client must resend such requests, not count them as failures.
func TestStaleKeepAliveConnections(t *testing.T) {
	f, err := StartFake(FakeConfig{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, CloseAfterResponse: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs := collect(Start(context.Background(), Config{URL: f.URL, Clients: 2, Warmups: 2, Measured: 40, NPredict: 4, Prompt: prompt}))
	retries := 0
	for _, r := range rs {
		if !r.OK() || r.Tokens != 4 {
			t.Fatalf("request %+v", r)
		}
		retries += r.Retries
	}
	t.Logf("%d requests, %d resent after a stale connection, %d requests served", len(rs), retries, f.Requests())
	if f.Requests() != len(rs) {
		t.Errorf("the fake served %d requests for %d results: a resend reached the server twice", f.Requests(), len(rs))
	}
}
