package benchfmt

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// A hand-written scanner for llama-bench's JSON objects: one pass, no reflection, and no
// allocation beyond the strings and sample slices the Result keeps (strings seen before are
// interned when a Parser is reused, so a live leg's rows cost two slices each).

// offsetError is a parse error at a byte offset of the scanned buffer.
type offsetError struct {
	off int
	msg string
}

func (e *offsetError) Error() string { return e.msg }

const maxNesting = 256

type scanner struct {
	b      []byte
	i      int
	intern map[string]string // nil: only the package's common values are shared
}

func (s *scanner) errf(format string, a ...any) error {
	return &offsetError{off: s.i, msg: fmt.Sprintf(format, a...)}
}

func (s *scanner) skipWS() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) describe() string {
	if s.i >= len(s.b) {
		return "end of input"
	}
	c := s.b[s.i]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// parseObject reads one JSON object at s.i into r (fields not in the object are left alone).
func (s *scanner) parseObject(r *Result) error {
	s.skipWS()
	if s.peek() != '{' {
		return s.errf("expected '{' to start a result object, found %s", s.describe())
	}
	s.i++
	s.skipWS()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.skipWS()
		if s.peek() != '"' {
			return s.errf("expected a quoted field name, found %s", s.describe())
		}
		keyStart := s.i
		content, plain, err := s.scanString()
		if err != nil {
			return err
		}
		var key string
		var f Field
		var known bool
		if plain {
			f, known = fieldByName[string(content)] // no allocation for the lookup
			if !known {
				key = string(content)
			}
		} else {
			var err error
			if key, err = decodeJSONString(s.b[keyStart:s.i]); err != nil {
				return &offsetError{off: keyStart, msg: "bad field name: " + err.Error()}
			}
			f, known = fieldByName[key]
		}
		s.skipWS()
		if s.peek() != ':' {
			return s.errf("expected ':' after field name, found %s", s.describe())
		}
		s.i++
		s.skipWS()
		if known {
			if err := s.parseField(r, f); err != nil {
				return err
			}
		} else {
			start := s.i
			if err := s.skipValue(0); err != nil {
				return err
			}
			if r.Extra == nil {
				r.Extra = make(map[string]json.RawMessage, 2)
			}
			raw := make(json.RawMessage, s.i-start)
			copy(raw, s.b[start:s.i])
			r.Extra[key] = raw
		}
		s.skipWS()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errf("expected ',' or '}' after the value of %q, found %s", fieldOrKey(f, known, key), s.describe())
		}
	}
}

func fieldOrKey(f Field, known bool, key string) string {
	if known {
		return f.Name()
	}
	return key
}

// parseField reads the value of a known field. null leaves the field unknown.
func (s *scanner) parseField(r *Result, f Field) error {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	start := s.i
	switch fields[f].typ {
	case tString:
		if s.peek() != '"' {
			return s.errf("%s: expected a string, found %s", f.Name(), s.describe())
		}
		content, plain, err := s.scanString()
		if err != nil {
			return err
		}
		var v string
		if plain {
			v = s.str(content)
		} else if v, err = decodeJSONString(s.b[start:s.i]); err != nil {
			return &offsetError{off: start, msg: f.Name() + ": " + err.Error()}
		}
		r.setString(f, v)
	case tInt:
		switch s.peek() {
		case 't', 'f': // older builds wrote flash_attn and friends as booleans
			v, err := s.boolLit(f)
			if err != nil {
				return err
			}
			var n int64
			if v {
				n = 1
			}
			r.setInt(f, n)
			return nil
		}
		tok, err := s.scanNumber(f)
		if err != nil {
			return err
		}
		n, err := parseIntToken(tok)
		if err != nil {
			return &offsetError{off: start, msg: f.Name() + ": " + err.Error()}
		}
		r.setInt(f, n)
	case tBool:
		switch s.peek() {
		case 't', 'f':
			v, err := s.boolLit(f)
			if err != nil {
				return err
			}
			r.setBool(f, v)
		default:
			tok, err := s.scanNumber(f)
			if err != nil {
				return err
			}
			switch string(tok) {
			case "0":
				r.setBool(f, false)
			case "1":
				r.setBool(f, true)
			default:
				return &offsetError{off: start, msg: fmt.Sprintf("%s: expected true, false, 0 or 1, found %s", f.Name(), tok)}
			}
		}
	case tFloat:
		tok, err := s.scanNumber(f)
		if err != nil {
			return err
		}
		v, err := parseFloatToken(tok)
		if err != nil {
			return &offsetError{off: start, msg: f.Name() + ": " + err.Error()}
		}
		r.setFloat(f, v)
	case tIntList, tFloatList:
		if s.peek() != '[' {
			return s.errf("%s: expected a list of numbers, found %s", f.Name(), s.describe())
		}
		s.i++
		n := s.countListItems()
		var ints []int64
		var floats []float64
		if fields[f].typ == tIntList {
			ints = make([]int64, 0, n)
		} else {
			floats = make([]float64, 0, n)
		}
		s.skipWS()
		if s.peek() == ']' {
			s.i++
		} else {
			for {
				s.skipWS()
				tokStart := s.i
				tok, err := s.scanNumber(f)
				if err != nil {
					return err
				}
				if ints != nil {
					v, err := parseIntToken(tok)
					if err != nil {
						return &offsetError{off: tokStart, msg: f.Name() + ": " + err.Error()}
					}
					ints = append(ints, v)
				} else {
					v, err := parseFloatToken(tok)
					if err != nil {
						return &offsetError{off: tokStart, msg: f.Name() + ": " + err.Error()}
					}
					floats = append(floats, v)
				}
				s.skipWS()
				if s.peek() == ',' {
					s.i++
					continue
				}
				if s.peek() == ']' {
					s.i++
					break
				}
				return s.errf("%s: expected ',' or ']' in the list, found %s", f.Name(), s.describe())
			}
		}
		if ints != nil {
			r.SamplesNs = ints
		} else {
			r.SamplesTs = floats
		}
		r.Known = r.Known.With(f)
	}
	return nil
}

// countListItems estimates the number of items of a flat list starting at s.i (after '['),
// so the slice is allocated once.
func (s *scanner) countListItems() int {
	n := 1
	for j := s.i; j < len(s.b); j++ {
		switch s.b[j] {
		case ',':
			n++
		case ']':
			return n
		}
	}
	return n
}

func (s *scanner) boolLit(f Field) (bool, error) {
	if s.peek() == 't' {
		return true, s.literal("true")
	}
	if s.peek() == 'f' {
		return false, s.literal("false")
	}
	return false, s.errf("%s: expected true or false, found %s", f.Name(), s.describe())
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return nil
	}
	return s.errf("expected %s, found %s", lit, s.describe())
}

// scanString reads a JSON string at s.i ('"'). content excludes the quotes; plain says the
// content needs no decoding (no escapes, valid UTF-8).
func (s *scanner) scanString() (content []byte, plain bool, err error) {
	start := s.i
	s.i++ // opening quote
	plain = true
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			content = s.b[start+1 : s.i]
			s.i++
			if !ascii && !utf8.Valid(content) {
				plain = false // encoding/json turns invalid bytes into U+FFFD
			}
			return content, plain, nil
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.b) {
				return nil, false, s.errf("unterminated string")
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return nil, false, s.errf("short \\u escape")
				}
				for k := 1; k <= 4; k++ {
					if !isHex(s.b[s.i+k]) {
						s.i += k
						return nil, false, s.errf("bad \\u escape")
					}
				}
				s.i += 5
			default:
				return nil, false, s.errf("bad escape \\%c in string", s.b[s.i])
			}
		case c < 0x20:
			return nil, false, s.errf("control character 0x%02x in string", c)
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			s.i++
		}
	}
	s.i = start
	return nil, false, s.errf("unterminated string")
}

// decodeJSONString decodes a quoted JSON string with escapes or non-UTF-8 bytes (the rare
// path; kept apart so the common path's variables stay on the stack).
func decodeJSONString(quoted []byte) (string, error) {
	var v string
	err := json.Unmarshal(quoted, &v)
	return v, err
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber reads a JSON number (strict grammar) at s.i.
func (s *scanner) scanNumber(f Field) ([]byte, error) {
	start := s.i
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	switch {
	case j < len(s.b) && s.b[j] == '0':
		j++
	case j < len(s.b) && s.b[j] >= '1' && s.b[j] <= '9':
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
	default:
		s.i = j
		if f < NumFields {
			return nil, s.errf("%s: expected a number, found %s", f.Name(), s.describe())
		}
		return nil, s.errf("expected a number, found %s", s.describe())
	}
	if j < len(s.b) && s.b[j] == '.' {
		j++
		if j >= len(s.b) || s.b[j] < '0' || s.b[j] > '9' {
			s.i = j
			return nil, s.errf("digit expected after decimal point")
		}
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		if j >= len(s.b) || s.b[j] < '0' || s.b[j] > '9' {
			s.i = j
			return nil, s.errf("digit expected in exponent")
		}
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
	}
	s.i = j
	return s.b[start:j], nil
}

// parseIntToken converts a JSON number token to int64; integral values written with a
// fraction or exponent (2048.0, 1e3) are accepted.
func parseIntToken(tok []byte) (int64, error) {
	neg := false
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		neg = true
		digits = digits[1:]
	}
	simple := len(digits) > 0 && len(digits) <= 18
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			simple = false
			break
		}
		n = n*10 + int64(c-'0')
	}
	if simple {
		if neg {
			n = -n
		}
		return n, nil
	}
	if v, err := strconv.ParseInt(string(tok), 10, 64); err == nil {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || v != math.Trunc(v) || v < -9.223372036854775e18 || v >= 9.223372036854775e18 {
		return 0, fmt.Errorf("%s is not a 64-bit integer", tok)
	}
	return int64(v), nil
}

func parseFloatToken(tok []byte) (float64, error) {
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is out of range", tok)
	}
	return v, nil
}

// skipValue moves past any JSON value, checking its syntax.
func (s *scanner) skipValue(depth int) error {
	if depth > maxNesting {
		return s.errf("nested too deeply")
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.scanString()
		return err
	case c == '{':
		s.i++
		s.skipWS()
		if s.peek() == '}' {
			s.i++
			return nil
		}
		for {
			s.skipWS()
			if s.peek() != '"' {
				return s.errf("expected a quoted name, found %s", s.describe())
			}
			if _, _, err := s.scanString(); err != nil {
				return err
			}
			s.skipWS()
			if s.peek() != ':' {
				return s.errf("expected ':', found %s", s.describe())
			}
			s.i++
			s.skipWS()
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			s.skipWS()
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return nil
			default:
				return s.errf("expected ',' or '}', found %s", s.describe())
			}
		}
	case c == '[':
		s.i++
		s.skipWS()
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			s.skipWS()
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			s.skipWS()
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return s.errf("expected ',' or ']', found %s", s.describe())
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.scanNumber(NumFields)
		return err
	default:
		return s.errf("expected a value, found %s", s.describe())
	}
}

// commonValues are strings that recur in every row; sharing them saves allocations even
// without a Parser.
var commonValues = func() map[string]string {
	m := map[string]string{}
	for _, v := range []string{"", "CPU", "f16", "f32", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
		"iq4_nl", "layer", "row", "none", "tensor", "auto", "on", "off", "0x0", "0.00", "Debian",
		"mmap", "mlock", "dio", "Vulkan", "CUDA", "Metal", "ROCm", "BLAS", "SYCL"} {
		m[v] = v
	}
	return m
}()

const maxInterned = 512

func (s *scanner) str(b []byte) string {
	if v, ok := commonValues[string(b)]; ok {
		return v
	}
	if s.intern == nil {
		return string(b)
	}
	if v, ok := s.intern[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.intern) < maxInterned && len(v) <= 1024 {
		s.intern[v] = v
	}
	return v
}
