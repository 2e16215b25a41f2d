package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxTokenizeBody bounds a /tokenize request or answer (a long prompt's token list).
const maxTokenizeBody = 64 << 20

// tokenizeTimeout bounds one /tokenize call.
const tokenizeTimeout = 30 * time.Second

// Tokenize asks the server at base (http://127.0.0.1:PORT, loopback only) how many tokens
// text is, through its own /tokenize endpoint (llama-server: without special tokens, so a
// cold request's timings.prompt_n is at least this count). The count is the server's, never a
// client-side guess.
func Tokenize(ctx context.Context, client *http.Client, base, text string) (int, error) {
	if err := checkURL(base, false); err != nil {
		return 0, err
	}
	body, err := json.Marshal(struct {
		Content string `json:"content"`
	}{text})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, tokenizeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeBody))
	if err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("tokenize: HTTP %d: %.200s", resp.StatusCode, data)
	}
	var out struct {
		Tokens *[]json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Tokens == nil {
		return 0, fmt.Errorf("tokenize: the answer has no token list: %.200s", data)
	}
	return len(*out.Tokens), nil
}
