package loadgen

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestTokenizeAndOwnLengths: /tokenize gives the server's count (the fake: one token a word),
// a non-loopback URL is refused, and NPredictOf gives each request its own n_predict (the
// fake streams as many tokens as a request asks for).
func TestTokenizeAndOwnLengths(t *testing.T) {
	f, err := StartFake(FakeConfig{WordTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := Tokenize(context.Background(), &http.Client{}, f.URL, "one two three")
	if err != nil || n != 3 {
		t.Fatalf("tokenize: %d, %v; want 3", n, err)
	}
	if _, err := Tokenize(context.Background(), &http.Client{}, "http://192.0.2.1:80", "x"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a remote URL: %v", err)
	}
	own := []int{3, 5, 2, 4}
	rs := collect(Start(context.Background(), Config{URL: f.URL, Clients: 1, Warmups: 1, Measured: 3, NPredict: 9, Prompt: func(i int) string { return "p" },
		NPredictOf: func(i int) int { return own[i] }}))
	for _, r := range rs {
		if !r.OK() || r.Tokens != own[r.Index] {
			t.Errorf("request %d: ok %v, %d tokens; want %d", r.Index, r.OK(), r.Tokens, own[r.Index])
		}
	}
	if len(rs) != len(own) {
		t.Errorf("%d results, want %d", len(rs), len(own))
	}
	a := Start(context.Background(), Config{URL: f.URL, Clients: 1, Measured: 1, NPredict: 9, Prompt: func(int) string { return "p" }, NPredictOf: func(int) int { return 0 }})
	if rs := collect(a); len(rs) != 1 || !strings.Contains(rs[0].Error, "n_predict 0 of request 0") {
		t.Errorf("n_predict 0 from NPredictOf: %+v", rs)
	}
}
