package benchfmt

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"sparkbench/runner/jsonlex"
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

// scanner reads llama-bench's objects with the project's JSON lexer; the grammar is
// jsonlex's, the fields, messages and interning are this package's.
type scanner struct {
	jsonlex.Lexer
	intern map[string]string // nil: only the package's common values are shared
}

func (s *scanner) errf(format string, a ...any) error {
	return &offsetError{off: s.Pos, msg: fmt.Sprintf(format, a...)}
}

// lexErr turns the lexer's latest failure into an offsetError; a missing number or boolean
// names the field f being read (none when f is NumFields).
func (s *scanner) lexErr(f Field) error {
	e := s.Err()
	msg := e.Error()
	if (e.Reason == jsonlex.ExpectedNumber || e.Reason == jsonlex.ExpectedBool) && f < NumFields {
		msg = f.Name() + ": " + msg
	}
	return &offsetError{off: e.Off, msg: msg}
}

func (s *scanner) describe() string { return jsonlex.Describe(s.Data, s.Pos) }

// listOpen starts reading an array's elements, its '[' consumed: false for an empty array
// (its ']' consumed too).
func (s *scanner) listOpen() bool {
	s.SkipSpace()
	if s.Peek() == ']' {
		s.Pos++
		return false
	}
	return true
}

// listNext reads what follows an element: ',' (true: another one comes) or ']' (false: the
// end); anything else is refused as "[FIELD: ]expected ',' or ']' WHERE, found …".
func (s *scanner) listNext(field, where string) (bool, error) {
	s.SkipSpace()
	switch s.Peek() {
	case ',':
		s.Pos++
		return true, nil
	case ']':
		s.Pos++
		return false, nil
	}
	if field != "" {
		field += ": "
	}
	return false, s.errf("%sexpected ',' or ']' %s, found %s", field, where, s.describe())
}

// parseObject reads one JSON object at s.Pos into r (fields not in the object are left alone).
func (s *scanner) parseObject(r *Result) error {
	s.SkipSpace()
	if s.Peek() != '{' {
		return s.errf("expected '{' to start a result object, found %s", s.describe())
	}
	s.Pos++
	s.SkipSpace()
	if s.Peek() == '}' {
		s.Pos++
		return nil
	}
	for {
		s.SkipSpace()
		if s.Peek() != '"' {
			return s.errf("expected a quoted field name, found %s", s.describe())
		}
		keyStart := s.Pos
		content, plain, err := s.stringTok()
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
			if key, err = decodeJSONString(s.Data[keyStart:s.Pos]); err != nil {
				return &offsetError{off: keyStart, msg: "bad field name: " + err.Error()}
			}
			f, known = fieldByName[key]
		}
		s.SkipSpace()
		if s.Peek() != ':' {
			return s.errf("expected ':' after field name, found %s", s.describe())
		}
		s.Pos++
		s.SkipSpace()
		if known {
			if err := s.parseField(r, f); err != nil {
				return err
			}
		} else {
			start := s.Pos
			if !s.SkipValue(maxNesting) {
				return s.lexErr(NumFields)
			}
			if r.Extra == nil {
				r.Extra = make(map[string]json.RawMessage, 2)
			}
			raw := make(json.RawMessage, s.Pos-start)
			copy(raw, s.Data[start:s.Pos])
			r.Extra[key] = raw
		}
		s.SkipSpace()
		switch s.Peek() {
		case ',':
			s.Pos++
		case '}':
			s.Pos++
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
// Long on purpose: a table-driven parser, one case per field type, on the hot path (no closures).
func (s *scanner) parseField(r *Result, f Field) error {
	if s.Peek() == 'n' {
		if !s.ScanNull() {
			return s.lexErr(NumFields)
		}
		return nil
	}
	start := s.Pos
	switch fields[f].typ {
	case tString:
		if s.Peek() != '"' {
			return s.errf("%s: expected a string, found %s", f.Name(), s.describe())
		}
		content, plain, err := s.stringTok()
		if err != nil {
			return err
		}
		var v string
		if plain {
			v = s.str(content)
		} else if v, err = decodeJSONString(s.Data[start:s.Pos]); err != nil {
			return &offsetError{off: start, msg: f.Name() + ": " + err.Error()}
		}
		r.setString(f, v)
	case tInt:
		switch s.Peek() {
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
		tok, err := s.number(f)
		if err != nil {
			return err
		}
		n, err := parseIntToken(tok)
		if err != nil {
			return &offsetError{off: start, msg: f.Name() + ": " + err.Error()}
		}
		r.setInt(f, n)
	case tBool:
		switch s.Peek() {
		case 't', 'f':
			v, err := s.boolLit(f)
			if err != nil {
				return err
			}
			r.setBool(f, v)
		default:
			tok, err := s.number(f)
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
		tok, err := s.number(f)
		if err != nil {
			return err
		}
		v, err := parseFloatToken(tok)
		if err != nil {
			return &offsetError{off: start, msg: f.Name() + ": " + err.Error()}
		}
		r.setFloat(f, v)
	case tIntList, tFloatList:
		if s.Peek() != '[' {
			return s.errf("%s: expected a list of numbers, found %s", f.Name(), s.describe())
		}
		s.Pos++
		n := s.countListItems()
		var ints []int64
		var floats []float64
		if fields[f].typ == tIntList {
			ints = make([]int64, 0, n)
		} else {
			floats = make([]float64, 0, n)
		}
		for more := s.listOpen(); more; {
			s.SkipSpace()
			tokStart := s.Pos
			tok, err := s.number(f)
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
			if more, err = s.listNext(f.Name(), "in the list"); err != nil {
				return err
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

// countListItems estimates the number of items of a flat list starting at s.Pos (after '['),
// so the slice is allocated once.
func (s *scanner) countListItems() int {
	n := 1
	for j := s.Pos; j < len(s.Data); j++ {
		switch s.Data[j] {
		case ',':
			n++
		case ']':
			return n
		}
	}
	return n
}

func (s *scanner) boolLit(f Field) (bool, error) {
	v, ok := s.ScanBool()
	if !ok {
		return false, s.lexErr(f)
	}
	return v, nil
}

// stringTok reads the JSON string at s.Pos ('"'). content excludes the quotes; plain says the
// content needs no decoding (no escapes, valid UTF-8).
func (s *scanner) stringTok() (content []byte, plain bool, err error) {
	content, flags, ok := s.ScanString()
	if !ok {
		return nil, false, s.lexErr(NumFields)
	}
	return content, jsonlex.Plain(content, flags), nil
}

// number reads the JSON number at s.Pos, the value of f (NumFields: of no field).
func (s *scanner) number(f Field) ([]byte, error) {
	tok, ok := s.ScanNumber()
	if !ok {
		return nil, s.lexErr(f)
	}
	return tok, nil
}

// decodeJSONString decodes a quoted JSON string with escapes or non-UTF-8 bytes (the rare
// path; kept apart so the common path's variables stay on the stack).
func decodeJSONString(quoted []byte) (string, error) {
	var v string
	err := json.Unmarshal(quoted, &v)
	return v, err
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
