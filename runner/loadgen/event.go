package loadgen

import (
	"bytes"
	"strconv"
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

// maxScanDepth bounds the nesting scanEvent follows (encoding/json allows 10000: deeper
// events go to it).
const maxScanDepth = 64

// scanEvent is the hot path of the stream: one pass over the event that validates it as
// JSON and takes the fields streamEvent holds, without reflection or allocation (the final
// event allocates its timings). ok is false whenever the result might differ from
// encoding/json's decoding into streamEvent, which then decides: anything but an object; a
// syntax error anywhere; an error field; a key with escapes or non-ASCII bytes, or one that
// equals a field's name only case-insensitively; a field seen twice; a field of an
// unexpected type, null included; a number encoding/json would refuse for an int (fraction,
// exponent, more than 18 digits) or a float (out of range); stop_type with escapes; nesting
// deeper than maxScanDepth.
func scanEvent(data []byte) (ev event, ok bool) {
	s := scanner{b: data}
	s.ws()
	if !s.eat('{') {
		return event{}, false
	}
	var seen, hasContent, hasTokens int
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			key, ok := s.key()
			if !ok {
				return event{}, false
			}
			var k int
			switch string(key) {
			case "content":
				k = kContent
				raw, _, ok := s.str()
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
				switch {
				case s.lit("true"):
					ev.stop = true
				case s.lit("false"):
					ev.stop = false
				default:
					return event{}, false
				}
			case "tokens_predicted":
				k = kPredicted
				if ev.predicted, ok = s.int(); !ok {
					return event{}, false
				}
			case "stop_type":
				k = kStopType
				raw, esc, ok := s.str()
				if !ok || esc {
					return event{}, false
				}
				ev.stopType = stopTypeString(raw)
			case "timings":
				k = kTimings
				if ev.timings, ok = s.timings(); !ok {
					return event{}, false
				}
			default:
				if foldsToAny(key, eventKeys[:]) || !s.skip(1) {
					return event{}, false
				}
			}
			if seen&k != 0 {
				return event{}, false
			}
			seen |= k
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return event{}, false
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return event{}, false
	}
	ev.content = hasContent > 0 || hasTokens > 0
	return ev, true
}

// timings scans the timings object into a new ServerTimings.
func (s *scanner) timings() (*ServerTimings, bool) {
	if !s.eat('{') {
		return nil, false
	}
	t := new(ServerTimings)
	seen := 0
	s.ws()
	if s.eat('}') {
		return t, true
	}
	for {
		s.ws()
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
			ok = !foldsToAny(key, timingKeys[:]) && s.skip(2)
		}
		if !ok || seen&k != 0 {
			return nil, false
		}
		seen |= k
		s.ws()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
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

// scanner walks one JSON text.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// lit consumes the literal w (true, false, null) if it is next.
func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// key scans an object key and the colon after it; ok is false for a key with escapes (left
// to encoding/json).
func (s *scanner) key() ([]byte, bool) {
	k, esc, ok := s.str()
	if !ok || esc {
		return nil, false
	}
	s.ws()
	if !s.eat(':') {
		return nil, false
	}
	s.ws()
	return k, true
}

// str scans a JSON string and returns its raw bytes between the quotes, and whether they hold
// escapes. ok is false for anything but a valid JSON string (a control character, a bad
// escape, no closing quote).
func (s *scanner) str() (raw []byte, esc, ok bool) {
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	for i := start; i < len(b); {
		if !strSpecial[b[i]] {
			i++
			continue
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return b[start:i], esc, true
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return nil, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, false, false
				}
				i += 6
			default:
				return nil, false, false
			}
		default: // a control character
			return nil, false, false
		}
	}
	return nil, false, false
}

// strSpecial marks the bytes that end a plain run inside a JSON string.
var strSpecial = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// num scans a JSON number (RFC 8259 grammar) and returns its bytes.
func (s *scanner) num() ([]byte, bool) {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return nil, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return nil, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	n := b[s.i:i]
	s.i = i
	return n, true
}

// int scans a number that encoding/json stores in an int without error, as it would: an
// integer of at most 18 digits (more may overflow; they go to encoding/json).
func (s *scanner) int() (int, bool) {
	n, ok := s.num()
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
		if !isDigit(c) { // a fraction or an exponent: encoding/json refuses it for an int
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
	n, ok := s.num()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// intArray scans an array of ints and returns its length.
func (s *scanner) intArray() (int, bool) {
	if !s.eat('[') {
		return 0, false
	}
	s.ws()
	if s.eat(']') {
		return 0, true
	}
	for n := 1; ; n++ {
		s.ws()
		if _, ok := s.int(); !ok {
			return 0, false
		}
		s.ws()
		if s.eat(',') {
			continue
		}
		return n, s.eat(']')
	}
}

// skip validates and skips any JSON value.
func (s *scanner) skip(depth int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{':
		if depth >= maxScanDepth {
			return false
		}
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			s.ws()
			if _, _, ok := s.str(); !ok {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case '[':
		if depth >= maxScanDepth {
			return false
		}
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	_, ok := s.num()
	return ok
}
