package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Completion is one request's generated text, for checks of what a model answers (the
// quality guard) rather than how fast.
type Completion struct {
	Text       string         `json:"text"`
	Tokens     int            `json:"tokens"` // the server's tokens_predicted
	StopType   string         `json:"stop_type,omitempty"`
	HTTPStatus int            `json:"http_status"`
	Timings    *ServerTimings `json:"timings,omitempty"`
}

// MaxCompletionText bounds the text Complete collects: a server that streams without end
// cannot grow the client's memory without end.
const MaxCompletionText = 1 << 20

// Complete sends one streamed /completion request (greedy, seeded, no prompt cache,
// ignore_eos as the load does) and collects the generated text. An error says why no final
// event came; the Completion then holds what arrived.
func Complete(ctx context.Context, client *http.Client, baseURL, prompt string, nPredict int, seed int64) (Completion, error) {
	var c Completion
	url := strings.TrimRight(baseURL, "/") + "/completion"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(CompletionBody(prompt, nPredict, seed)))
	if err != nil {
		return c, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	c.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return c, fmt.Errorf("%s", httpError(resp.StatusCode, body))
	}
	sr := getSSEReader(resp.Body)
	defer putSSEReader(sr)
	var text strings.Builder
	for {
		data, err := sr.next()
		if err != nil {
			c.Text = text.String()
			return c, fmt.Errorf("%s", streamError(ctx, err, c.Tokens))
		}
		ev, err := decodeEvent(data)
		if err != nil {
			c.Text = text.String()
			return c, fmt.Errorf("malformed event: %v", err)
		}
		if ev.Error != nil {
			c.Text = text.String()
			return c, fmt.Errorf("server error event: %s", ev.Error)
		}
		if text.Len()+len(ev.Content) > MaxCompletionText {
			c.Text = text.String()
			return c, fmt.Errorf("the answer passed %d bytes without its final event; a quality case answers in a few tokens (check n_predict and the server)", MaxCompletionText)
		}
		text.WriteString(ev.Content)
		if ev.TokensPredicted > 0 || ev.Stop {
			c.Tokens = ev.TokensPredicted
		}
		if ev.Stop {
			c.Text, c.StopType, c.Timings = text.String(), ev.StopType, ev.Timings
			return c, nil
		}
	}
}
