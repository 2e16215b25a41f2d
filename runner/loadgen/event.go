package loadgen

import (
	"bytes"
	"strconv"

	"sparkbench/runner/jsonlex"
)

// event is what the load generator takes from one llama-server /completion event: exactly
// what it used to take from encoding/json's decoding of the event into streamEvent.
type event struct {
	content   bool           // generated content: content or tokens non-empty
	stop      bool           // the final event
	predicted int            // tokens_predicted (0 when absent)
	stopType  string         // stop_type
	timings   *ServerTimings // timings (nil when absent)
	err       *serverError   // error (nil when absent)
}

func (ev streamEvent) event() event {
	return event{content: ev.Content != "" || len(ev.Tokens) > 0, stop: ev.Stop, predicted: ev.TokensPredicted,
		stopType: ev.StopType, timings: ev.Timings, err: ev.Error}
}

// parseEvent reads one event's data: by scanEvent when it can vouch for the result, else by
// encoding/json (the reference, and the source of every error message).
func parseEvent(data []byte) (event, error) {
	if ev, ok := scanEvent(data); ok {
		return ev, nil
	}
	ev, err := decodeEvent(data)
	if err != nil {
		return event{}, err
	}
	return ev.event(), nil
}

// Keys of the fields scanEvent reads, and of the ones it leaves to encoding/json.
const (
	kContent = 1 << iota
	kTokens
	kStop
	kPredicted
	kStopType
	kTimings
)

// eventKeys are streamEvent's JSON names: encoding/json also matches them case-insensitively,
// so a key that folds to one of them without being it is left to encoding/json.
var eventKeys = [...]string{"content", "tokens", "stop", "tokens_predicted", "stop_type", "timings", "error"}

var timingKeys = [...]string{"prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_second", "cache_n"}

// maxScanDepth bounds the nesting scanEvent follows: a value inside more arrays and objects
// than this, the event's own object counted, sends the event to encoding/json (which allows
// 10000).
const maxScanDepth = 64

// scanEvent is the hot path of the stream: one pass over the event that validates it as
// JSON and takes the fields streamEvent holds, without reflection or allocation (the final
// event allocates its timings). ok is false whenever the result might differ from
// encoding/json's decoding into streamEvent, which then decides: anything but an object; a
// syntax error anywhere; an error field; a key with escapes or non-ASCII bytes, or one that
// equals a field's name only case-insensitively; a field seen twice; a field of an
// unexpected type, null included; a number encoding/json would refuse for an int (fraction,
// exponent, more than 18 digits) or a float (out of range); stop_type with escapes or bytes
// that are not UTF-8; nesting deeper than maxScanDepth.
func scanEvent(data []byte) (ev event, ok bool) {
	s := scanner{jsonlex.Lexer{Data: data}}
	s.SkipSpace()
	if !s.Consume('{') {
		return event{}, false
	}
	var seen, hasContent, hasTokens int
	s.SkipSpace()
	if !s.Consume('}') {
		for {
			s.SkipSpace()
			key, ok := s.key()
			if !ok {
				return event{}, false
			}
			var k int
			switch string(key) {
			case "content":
				k = kContent
				raw, _, ok := s.ScanString()
				if !ok {
					return event{}, false
				}
				// Every escape decodes to at least one byte, and encoding/json keeps invalid
				// UTF-8 as U+FFFD: the decoded text is empty exactly when the raw one is.
				hasContent = len(raw)
			case "tokens":
				k = kTokens
				if hasTokens, ok = s.intArray(); !ok {
					return event{}, false
				}
			case "stop":
				k = kStop
				if ev.stop, ok = s.ScanBool(); !ok {
					return event{}, false
				}
			case "tokens_predicted":
				k = kPredicted
				if ev.predicted, ok = s.int(); !ok {
					return event{}, false
				}
			case "stop_type":
				k = kStopType
				// Escapes and invalid UTF-8 (U+FFFD to encoding/json) are left to encoding/json.
				raw, flags, ok := s.ScanString()
				if !ok || !jsonlex.Plain(raw, flags) {
					return event{}, false
				}
				ev.stopType = stopTypeString(raw)
			case "timings":
				k = kTimings
				if ev.timings, ok = s.timings(); !ok {
					return event{}, false
				}
			default:
				if foldsToAny(key, eventKeys[:]) || !s.SkipValue(maxScanDepth-1) {
					return event{}, false
				}
			}
			if seen&k != 0 {
				return event{}, false
			}
			seen |= k
			s.SkipSpace()
			if s.Consume(',') {
				continue
			}
			if s.Consume('}') {
				break
			}
			return event{}, false
		}
	}
	s.SkipSpace()
	if s.Pos != len(s.Data) {
		return event{}, false
	}
	ev.content = hasContent > 0 || hasTokens > 0
	return ev, true
}

// timings scans the timings object into a new ServerTimings.
func (s *scanner) timings() (*ServerTimings, bool) {
	if !s.Consume('{') {
		return nil, false
	}
	t := new(ServerTimings)
	seen := 0
	s.SkipSpace()
	if s.Consume('}') {
		return t, true
	}
	for {
		s.SkipSpace()
		key, ok := s.key()
		if !ok {
			return nil, false
		}
		var k int
		switch string(key) {
		case "prompt_n":
			k = 1 << 0
			t.PromptN, ok = s.int()
		case "prompt_ms":
			k = 1 << 1
			t.PromptMs, ok = s.float()
		case "predicted_n":
			k = 1 << 2
			t.PredictedN, ok = s.int()
		case "predicted_ms":
			k = 1 << 3
			t.PredictedMs, ok = s.float()
		case "predicted_per_second":
			k = 1 << 4
			t.PredictedPerSecond, ok = s.float()
		case "cache_n":
			k = 1 << 5
			t.CacheN, ok = s.int()
		default:
			ok = !foldsToAny(key, timingKeys[:]) && s.SkipValue(maxScanDepth-2)
		}
		if !ok || seen&k != 0 {
			return nil, false
		}
		seen |= k
		s.SkipSpace()
		if s.Consume(',') {
			continue
		}
		if s.Consume('}') {
			return t, true
		}
		return nil, false
	}
}

// stopTypeString returns llama-server's usual stop types without allocating.
func stopTypeString(b []byte) string {
	switch string(b) {
	case "limit":
		return "limit"
	case "eos":
		return "eos"
	case "word":
		return "word"
	case "none":
		return "none"
	case "":
		return ""
	}
	return string(b)
}

// foldsToAny says whether a key (raw, unescaped) may be matched by encoding/json to one of
// names by its case-insensitive rule: a non-ASCII key always may (Unicode folding: 'ſ' is
// 's', 'K' is 'k').
func foldsToAny(key []byte, names []string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	for _, n := range names {
		if len(n) == len(key) && bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// scanner walks one JSON text with the project's JSON lexer; the methods below are the
// event's semantic layer.
type scanner struct {
	jsonlex.Lexer
}

// key scans an object key and the colon after it; ok is false for a key with escapes (left
// to encoding/json).
func (s *scanner) key() ([]byte, bool) {
	k, flags, ok := s.ScanString()
	if !ok || flags&jsonlex.Escaped != 0 {
		return nil, false
	}
	s.SkipSpace()
	if !s.Consume(':') {
		return nil, false
	}
	s.SkipSpace()
	return k, true
}

// int scans a number that encoding/json stores in an int without error, as it would: an
// integer of at most 18 digits (more may overflow; they go to encoding/json).
func (s *scanner) int() (int, bool) {
	n, ok := s.ScanNumber()
	if !ok {
		return 0, false
	}
	neg := n[0] == '-'
	if neg {
		n = n[1:]
	}
	if len(n) > 18 {
		return 0, false
	}
	v := 0
	for _, c := range n {
		if c < '0' || c > '9' { // a fraction or an exponent: encoding/json refuses it for an int
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// float scans a number into a float64 as encoding/json does (strconv.ParseFloat); out of
// range goes to encoding/json.
func (s *scanner) float() (float64, bool) {
	n, ok := s.ScanNumber()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// intArray scans an array of ints and returns its length.
func (s *scanner) intArray() (int, bool) {
	if !s.Consume('[') {
		return 0, false
	}
	s.SkipSpace()
	if s.Consume(']') {
		return 0, true
	}
	for n := 1; ; n++ {
		s.SkipSpace()
		if _, ok := s.int(); !ok {
			return 0, false
		}
		s.SkipSpace()
		if s.Consume(',') {
			continue
		}
		return n, s.Consume(']')
	}
}
