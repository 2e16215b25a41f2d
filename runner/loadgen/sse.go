package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
)

// sseReader splits a text/event-stream into events (hand-written: one bufio.Reader, no SSE
// library). Only the data field matters to llama-server's stream; comments and the event, id
// and retry fields are skipped. An event is dispatched by a blank line; an event cut off by the
// end of the stream is discarded, as the SSE specification says.
type sseReader struct {
	br   *bufio.Reader
	data []byte // the current event's data (reused)
	long []byte // a line longer than the reader's buffer, assembled
}

func newSSEReader(r io.Reader, size int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, size), data: make([]byte, 0, 512)}
}

// Readers are pooled: clearing a fresh buffer per request costs more than parsing its events.
var sseReaders = sync.Pool{New: func() any { return newSSEReader(nil, DefaultReadBuffer) }}

func getSSEReader(r io.Reader) *sseReader {
	sr := sseReaders.Get().(*sseReader)
	sr.br.Reset(r)
	return sr
}

func putSSEReader(sr *sseReader) {
	sr.br.Reset(nil)
	if cap(sr.long) > 1<<20 {
		sr.long = nil
	}
	sseReaders.Put(sr)
}

// next returns the data of the next event. The slice is valid until the following call. At the
// end of the stream it returns io.EOF (clean end between events) or io.ErrUnexpectedEOF (the
// stream ended inside an event), or the transport's error.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if has || len(line) > 0 {
					return nil, io.ErrUnexpectedEOF
				}
				return nil, io.EOF
			}
			return nil, err
		}
		if len(line) == 0 { // blank line: dispatch
			if has {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' { // comment
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) == "data" {
			if has {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			has = true
		}
	}
}

// readLine returns one line without its line ending (\n, \r\n). At the end of the stream it
// returns what is left with io.EOF.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.br.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil {
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// streamEvent is what the load generator needs from one llama-server /completion event.
type streamEvent struct {
	Content         string         `json:"content"`
	Tokens          []int          `json:"tokens"`
	Stop            bool           `json:"stop"`
	TokensPredicted int            `json:"tokens_predicted"`
	StopType        string         `json:"stop_type"`
	Timings         *ServerTimings `json:"timings"`
	Error           *serverError   `json:"error"`
}

type serverError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

func (e *serverError) String() string {
	s := e.Message
	if e.Type != "" {
		s = e.Type + ": " + s
	}
	if e.Code != 0 {
		s = strconv.Itoa(e.Code) + " " + s
	}
	return s
}

// ServerTimings are llama-server's own timings of a request, from its final event.
type ServerTimings struct {
	PromptN            int     `json:"prompt_n"`
	PromptMs           float64 `json:"prompt_ms"`
	PredictedN         int     `json:"predicted_n"`
	PredictedMs        float64 `json:"predicted_ms"`
	PredictedPerSecond float64 `json:"predicted_per_second"`
	CacheN             int     `json:"cache_n"`
}

func decodeEvent(data []byte) (streamEvent, error) {
	var ev streamEvent
	err := json.Unmarshal(data, &ev)
	return ev, err
}
