package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A server that streams content without ever sending its final event cannot grow the client's
// memory without end: Complete stops at MaxCompletionText and says why.
func TestFaultsCompleteCapsAnEndlessAnswer(t *testing.T) {
	chunk := strings.Repeat("x", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 2*MaxCompletionText/len(chunk); i++ { // bounded: twice the cap, then stop
			if _, err := fmt.Fprintf(w, "data: {\"content\":%q,\"stop\":false}\n\n", chunk); err != nil || r.Context().Err() != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := Complete(context.Background(), srv.Client(), srv.URL, "p", 8, 1)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the answer passed %d bytes without its final event", MaxCompletionText)) {
		t.Fatalf("got %v", err)
	}
	if len(c.Text) > MaxCompletionText || len(c.Text) < MaxCompletionText-len(chunk) {
		t.Fatalf("kept %d bytes, want just under %d", len(c.Text), MaxCompletionText)
	}
}
