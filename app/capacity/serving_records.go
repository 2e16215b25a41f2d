package capacity

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
)

// SchemaServingRequests identifies the open-loop request records of one server lifetime
// (docs/serving.md): JSON lines, a header (the request file's) then one line per request of
// every probe, warmups included. Version 2 files are judged by the sustain rule (each probe's
// window long enough, completions keeping up with arrivals, the sweep stopping at saturation);
// version 1 files, written before it, are assembled as they were, so their bundles verify.
const (
	SchemaServingRequests   = "sparkbench.serving-requests/v2"
	SchemaServingRequestsV1 = "sparkbench.serving-requests/v1"
)

// Serving rules: which judgement a serving file's probes get (by its schema).
const (
	ServingRulesV1      = 1
	ServingRulesSustain = 2
)

// Rules is the judgement this file's probes get: ServingRulesSustain for version 2 files.
func (f *ServingFile) Rules() int {
	if f.Header.Schema == SchemaServingRequestsV1 {
		return ServingRulesV1
	}
	return ServingRulesSustain
}

// Probe kinds: a rate of the sweep, or one the max-rate search chose.
const (
	ProbeSweep  = "sweep"
	ProbeSearch = "search"
)

// ServingTimings are llama-server's timings of an open-loop request, cache_n included.
type ServingTimings struct {
	PromptN     int     `json:"prompt_n"`
	PromptMs    float64 `json:"prompt_ms"`
	PredictedN  int     `json:"predicted_n"`
	PredictedMs float64 `json:"predicted_ms"`
	CacheN      int     `json:"cache_n"`
}

// ServingRecord is one open-loop request. Times are ms on the pass's monotonic clock; a
// measured request's latencies start at ScheduledMs (when it was due), not at SendMs.
type ServingRecord struct {
	Probe        int             `json:"probe"` // 0-based, in the order the probes ran
	Rate         float64         `json:"rate"`  // the probe's offered rate (req/s)
	Phase        string          `json:"phase"`
	Seq          int             `json:"seq"`          // 0-based within (probe, phase)
	ScheduledMs  *float64        `json:"scheduled_ms"` // null for warmups (sent closed-loop)
	SendMs       float64         `json:"send_ms"`
	FirstTokenMs *float64        `json:"first_token_ms"`
	EndMs        float64         `json:"end_ms"`
	Tokens       int             `json:"tokens"`         // the server's tokens_predicted
	Events       int             `json:"content_events"` // events that carried generated content
	HTTPStatus   int             `json:"http_status"`
	Error        string          `json:"error,omitempty"`
	Timings      *ServingTimings `json:"timings"`
	// PromptTokens is the prompt's length by the server's own /tokenize (workload plans only).
	PromptTokens int `json:"prompt_tokens,omitempty"`
	// NPredict is the tokens this request asked for, when the workload sets its own.
	NPredict int `json:"n_predict,omitempty"`
	// Conversation, Turn (1-based) and Turns place a multi_turn request in its conversation.
	Conversation int `json:"conversation,omitempty"`
	Turn         int `json:"turn,omitempty"`
	Turns        int `json:"turns,omitempty"`
	// LeadTokens is the conversation header's length by /tokenize: with caching on, a first
	// turn may take at most that much from the cache (docs/serving.md).
	LeadTokens int `json:"lead_tokens,omitempty"`

	Line int `json:"-"`
}

// ServingFile is a parsed serving request file.
type ServingFile struct {
	Header  RequestHeader
	Records []ServingRecord
}

// ServingWriter writes a serving request file, one canonical JSON line per record.
type ServingWriter struct{ rw *RequestWriter }

// NewServingWriter writes the header line.
func NewServingWriter(w io.Writer, h RequestHeader) (*ServingWriter, error) {
	h.Schema = SchemaServingRequests
	if msg := checkServingHeader(h); msg != "" {
		return nil, fmt.Errorf("serving file header: %s", msg)
	}
	rw := &RequestWriter{w: w}
	return &ServingWriter{rw}, rw.line(h)
}

// Write appends one record; it refuses a record the reader would refuse.
func (sw *ServingWriter) Write(r ServingRecord) error {
	if msg := checkServingRecord(r); msg != "" {
		return fmt.Errorf("serving record: %s", msg)
	}
	return sw.rw.line(r)
}

func checkServingHeader(h RequestHeader) string {
	if h.Schema != SchemaServingRequests && h.Schema != SchemaServingRequestsV1 {
		return fmt.Sprintf("header schema %q: want %q on the first line (see docs/serving.md)", h.Schema, SchemaServingRequests)
	}
	h.Schema = SchemaRequests
	return checkHeader(h)
}

func checkServingRecord(r ServingRecord) string {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }
	switch {
	case r.Probe < 0:
		return fmt.Sprintf("probe %d: want the 0-based probe number", r.Probe)
	case !(r.Rate > 0) || math.IsInf(r.Rate, 0):
		return fmt.Sprintf("rate %g: want the probe's offered rate (req/s > 0)", r.Rate)
	case r.Events < 0:
		return fmt.Sprintf("content_events %d: want a count", r.Events)
	case r.Phase == PhaseMeasured && r.ScheduledMs == nil:
		return "a measured request needs scheduled_ms (when it was due)"
	case r.Phase == PhaseWarmup && r.ScheduledMs != nil:
		return "a warmup has no scheduled_ms (warmups are closed-loop)"
	}
	if s := r.ScheduledMs; s != nil && (!finite(*s) || *s > r.SendMs) {
		return fmt.Sprintf("scheduled_ms %s: want a time at or before send_ms %s", ms(*s), ms(r.SendMs))
	}
	if r.PromptTokens < 0 || r.NPredict < 0 {
		return "prompt_tokens and n_predict must be non-negative"
	}
	if msg := checkTurnFields(r); msg != "" {
		return msg
	}
	if t := r.Timings; t != nil && (t.CacheN < 0 || t.PromptN < 0 || t.PredictedN < 0 || !finite(t.PromptMs) || !finite(t.PredictedMs)) {
		return "timings: counts and milliseconds must be non-negative numbers"
	}
	var tm *Timings
	if t := r.Timings; t != nil {
		tm = &Timings{}
	}
	return checkRecord(RequestRecord{Clients: 1, Phase: r.Phase, Seq: r.Seq, SendMs: r.SendMs, FirstTokenMs: r.FirstTokenMs,
		EndMs: r.EndMs, Tokens: r.Tokens, HTTPStatus: r.HTTPStatus, Timings: tm})
}

// ReadServing parses a serving request file strictly, with file:line in every error.
func ReadServing(name string, data []byte) (*ServingFile, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &LineError{name, 1, "empty file; a serving file starts with a header line {\"schema\":\"" + SchemaServingRequests + "\",…} (see docs/serving.md)"}
	}
	f := &ServingFile{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, &LineError{name, n, "blank line; a serving file has one JSON object on every line"}
		}
		if n == 1 {
			if err := decodeLine(name, n, line, &f.Header); err != nil {
				return nil, err
			}
			if msg := checkServingHeader(f.Header); msg != "" {
				return nil, &LineError{name, n, msg}
			}
			continue
		}
		var r ServingRecord
		if err := decodeLine(name, n, line, &r); err != nil {
			return nil, err
		}
		if msg := checkServingRecord(r); msg != "" {
			return nil, &LineError{name, n, msg}
		}
		k := fmt.Sprintf("%d/%s/%d", r.Probe, r.Phase, r.Seq)
		if first, dup := seen[k]; dup {
			return nil, &LineError{name, n, fmt.Sprintf("probe %d %s seq %d repeats line %d", r.Probe, r.Phase, r.Seq, first)}
		}
		seen[k] = n
		r.Line = n
		f.Records = append(f.Records, r)
	}
	if err := sc.Err(); err != nil {
		return nil, &LineError{name, len(f.Records) + 2, err.Error()}
	}
	return f, nil
}
