package capacity

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/study"
)

// SchemaRequests identifies version 1 of the request record format (docs/requests.md): JSON
// lines, a header line then one line per request, one file per server lifetime
// (pass, candidate, slots) holding every client level that server measured.
const SchemaRequests = "sparkbench.requests/v1"

// Request phases.
const (
	PhaseWarmup   = "warmup"
	PhaseMeasured = "measured"
)

// RequestHeader is the first line of a request file: which server lifetime it measured.
type RequestHeader struct {
	Schema    string `json:"schema"`
	Pass      string `json:"pass"`
	Candidate string `json:"candidate"`
	Slots     int    `json:"slots"`
	// PlanSHA256, when present, must be the SHA-256 of the plan being assembled.
	PlanSHA256 string `json:"plan_sha256,omitempty"`
}

// Key is the server lifetime the header names.
func (h RequestHeader) Key() LifetimeKey {
	return LifetimeKey{Pass: h.Pass, Candidate: h.Candidate, Slots: h.Slots}
}

// Timings are llama-server's own timings of a request (its final streamed event).
type Timings struct {
	PromptN     int     `json:"prompt_n"`
	PromptMs    float64 `json:"prompt_ms"`
	PredictedN  int     `json:"predicted_n"`
	PredictedMs float64 `json:"predicted_ms"`
}

// RequestRecord is one request as the client measured it. Times are milliseconds on one
// monotonic clock per pass (their origin is arbitrary; only differences are used).
type RequestRecord struct {
	Clients int     `json:"clients"` // the client level C this request belongs to
	Phase   string  `json:"phase"`   // warmup or measured
	Seq     int     `json:"seq"`     // 0-based, unique within (clients, phase)
	SendMs  float64 `json:"send_ms"` // request bytes written
	// FirstTokenMs is the first SSE event carrying generated content; null when none arrived.
	FirstTokenMs *float64 `json:"first_token_ms"`
	// EndMs is the final event (stop: true), or the moment the request failed.
	EndMs      float64  `json:"end_ms"`
	Tokens     int      `json:"tokens"`      // server-reported tokens_predicted (0 when unknown)
	HTTPStatus int      `json:"http_status"` // 0: no HTTP response (connection error)
	Error      string   `json:"error,omitempty"`
	Timings    *Timings `json:"timings"` // null when the server sent none

	Line int `json:"-"` // line in its file, set by the reader
}

// Completed says whether the request counts as completed: HTTP 200, no error, and exactly
// n_predict generated tokens.
func (r RequestRecord) Completed(nPredict int) bool {
	return r.HTTPStatus == 200 && r.Error == "" && r.Tokens == nPredict
}

// TTFTMs is first token - send; ok is false when no token arrived.
func (r RequestRecord) TTFTMs() (float64, bool) {
	if r.FirstTokenMs == nil {
		return 0, false
	}
	return *r.FirstTokenMs - r.SendMs, true
}

// E2EMs is end - send.
func (r RequestRecord) E2EMs() float64 { return r.EndMs - r.SendMs }

// ITLMs is the inter-token latency (end - first token) / (tokens - 1), with the end event
// standing in for the last token; ok is false with fewer than two tokens or no first token.
func (r RequestRecord) ITLMs() (float64, bool) {
	if r.FirstTokenMs == nil || r.Tokens < 2 {
		return 0, false
	}
	return (r.EndMs - *r.FirstTokenMs) / float64(r.Tokens-1), true
}

// RequestFile is a parsed request file.
type RequestFile struct {
	Header  RequestHeader
	Records []RequestRecord // in file order
}

// rawRecord has pointers where a field is required, to tell absent from zero.
type rawRecord struct {
	Clients      *int     `json:"clients"`
	Phase        *string  `json:"phase"`
	Seq          *int     `json:"seq"`
	SendMs       *float64 `json:"send_ms"`
	FirstTokenMs *float64 `json:"first_token_ms"`
	EndMs        *float64 `json:"end_ms"`
	Tokens       *int     `json:"tokens"`
	HTTPStatus   *int     `json:"http_status"`
	Error        string   `json:"error"`
	Timings      *Timings `json:"timings"`
}

// LineError locates a problem in a line-oriented input file.
type LineError struct {
	File string
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ReadRequests parses a request file strictly: a header line, then one JSON object per line
// with every required field and no unknown one. Errors carry file:line (and column for JSON
// syntax). name is used in messages only.
func ReadRequests(name string, data []byte) (*RequestFile, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &LineError{name, 1, "empty file; a request file starts with a header line {\"schema\":\"" + SchemaRequests + "\",…} (see docs/requests.md)"}
	}
	f := &RequestFile{}
	type seqKey struct {
		clients int
		phase   string
		seq     int
	}
	seen := map[seqKey]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	n := 0
	sawHeader := false
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, &LineError{name, n, "blank line; a request file has one JSON object on every line"}
		}
		if !sawHeader {
			if err := decodeLine(name, n, line, &f.Header); err != nil {
				if de, ok := err.(*study.DecodeError); ok {
					de.Msg += "; the first line is the header {\"schema\":\"" + SchemaRequests + "\",\"pass\":…,\"candidate\":…,\"slots\":…}"
				}
				return nil, err
			}
			if err := checkHeader(f.Header); err != "" {
				return nil, &LineError{name, n, err}
			}
			sawHeader = true
			continue
		}
		var raw rawRecord
		if err := decodeLine(name, n, line, &raw); err != nil {
			return nil, err
		}
		r, msg := recordOf(raw)
		if msg != "" {
			return nil, &LineError{name, n, msg}
		}
		r.Line = n
		k := seqKey{r.Clients, r.Phase, r.Seq}
		if first, dup := seen[k]; dup {
			return nil, &LineError{name, n, fmt.Sprintf("clients %d %s seq %d repeats line %d; every request has its own seq", r.Clients, r.Phase, r.Seq, first)}
		}
		seen[k] = n
		f.Records = append(f.Records, r)
	}
	if err := sc.Err(); err != nil {
		return nil, &LineError{name, n + 1, err.Error()}
	}
	return f, nil
}

func decodeLine(name string, line int, b []byte, v any) error {
	err := study.DecodeFileStrict(name, b, v, "a request file has one JSON object per line", "docs/requests.md")
	if de, ok := err.(*study.DecodeError); ok {
		de.Line = line // the line within the file; Col stays the column within the line
		return de
	}
	return err
}

func checkHeader(h RequestHeader) string {
	switch {
	case h.Schema != SchemaRequests:
		return fmt.Sprintf("header schema %q: want %q on the first line (see docs/requests.md)", h.Schema, SchemaRequests)
	case h.Pass != PassForward && h.Pass != PassReverse:
		return fmt.Sprintf("header pass %q: want %q or %q", h.Pass, PassForward, PassReverse)
	case !idRE.MatchString(h.Candidate):
		return fmt.Sprintf("header candidate %q: want a candidate ID of the plan", h.Candidate)
	case h.Slots < 1:
		return fmt.Sprintf("header slots %d: want the server's --parallel (>= 1)", h.Slots)
	case h.PlanSHA256 != "" && !hexRE.MatchString(h.PlanSHA256):
		return fmt.Sprintf("header plan_sha256 %q: want 64 lowercase hex digits", h.PlanSHA256)
	}
	return ""
}

func recordOf(raw rawRecord) (RequestRecord, string) {
	missing := []string{}
	if raw.Clients == nil {
		missing = append(missing, "clients")
	}
	if raw.Phase == nil {
		missing = append(missing, "phase")
	}
	if raw.Seq == nil {
		missing = append(missing, "seq")
	}
	if raw.SendMs == nil {
		missing = append(missing, "send_ms")
	}
	if raw.EndMs == nil {
		missing = append(missing, "end_ms")
	}
	if raw.Tokens == nil {
		missing = append(missing, "tokens")
	}
	if raw.HTTPStatus == nil {
		missing = append(missing, "http_status")
	}
	if len(missing) > 0 {
		return RequestRecord{}, "missing " + strings.Join(missing, ", ") + " (see docs/requests.md)"
	}
	r := RequestRecord{Clients: *raw.Clients, Phase: *raw.Phase, Seq: *raw.Seq, SendMs: *raw.SendMs,
		FirstTokenMs: raw.FirstTokenMs, EndMs: *raw.EndMs, Tokens: *raw.Tokens, HTTPStatus: *raw.HTTPStatus,
		Error: raw.Error, Timings: raw.Timings}
	return r, checkRecord(r)
}

func checkRecord(r RequestRecord) string {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }
	switch {
	case r.Clients < 1:
		return fmt.Sprintf("clients %d: want the client level (>= 1)", r.Clients)
	case r.Phase != PhaseWarmup && r.Phase != PhaseMeasured:
		return fmt.Sprintf("phase %q: want %q or %q", r.Phase, PhaseWarmup, PhaseMeasured)
	case r.Seq < 0:
		return fmt.Sprintf("seq %d: want a 0-based sequence number", r.Seq)
	case !finite(r.SendMs) || !finite(r.EndMs):
		return "send_ms and end_ms must be non-negative milliseconds"
	case r.EndMs < r.SendMs:
		return fmt.Sprintf("end_ms %s is before send_ms %s; both come from one monotonic clock", ms(r.EndMs), ms(r.SendMs))
	case r.Tokens < 0:
		return fmt.Sprintf("tokens %d: want the server's tokens_predicted (>= 0)", r.Tokens)
	case r.HTTPStatus != 0 && (r.HTTPStatus < 100 || r.HTTPStatus > 599):
		return fmt.Sprintf("http_status %d: want an HTTP status, or 0 when no response came", r.HTTPStatus)
	}
	if ft := r.FirstTokenMs; ft != nil {
		switch {
		case !finite(*ft):
			return "first_token_ms must be non-negative milliseconds or null"
		case *ft < r.SendMs || *ft > r.EndMs:
			return fmt.Sprintf("first_token_ms %s is outside [send_ms %s, end_ms %s]", ms(*ft), ms(r.SendMs), ms(r.EndMs))
		case r.Tokens >= 2 && *ft == r.EndMs:
			return fmt.Sprintf("%d tokens but first_token_ms equals end_ms: the inter-token latency is undefined", r.Tokens)
		}
	} else if r.Tokens > 0 {
		return fmt.Sprintf("%d tokens but first_token_ms is null: record when the first token arrived", r.Tokens)
	}
	if t := r.Timings; t != nil {
		if t.PromptN < 0 || t.PredictedN < 0 || !finite(t.PromptMs) || !finite(t.PredictedMs) {
			return "timings: counts and milliseconds must be non-negative numbers"
		}
	}
	return ""
}

func ms(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// RequestWriter writes a request file: the header on creation, then one canonical JSON line
// per record. It is what the load generator uses, so the reader's format has one writer.
type RequestWriter struct {
	w io.Writer
}

// NewRequestWriter writes the header line (schema is filled in when empty).
func NewRequestWriter(w io.Writer, h RequestHeader) (*RequestWriter, error) {
	if h.Schema == "" {
		h.Schema = SchemaRequests
	}
	if msg := checkHeader(h); msg != "" {
		return nil, fmt.Errorf("request file header: %s", msg)
	}
	rw := &RequestWriter{w: w}
	return rw, rw.line(h)
}

// Write appends one record; it refuses a record the reader would refuse.
func (rw *RequestWriter) Write(r RequestRecord) error {
	if msg := checkRecord(r); msg != "" {
		return fmt.Errorf("request record: %s", msg)
	}
	return rw.line(r)
}

func (rw *RequestWriter) line(v any) error {
	b, err := canon.Marshal(v)
	if err != nil {
		return err
	}
	_, err = rw.w.Write(append(b, '\n'))
	return err
}
