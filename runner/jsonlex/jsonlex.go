// Package jsonlex is the one JSON lexer of the project: the RFC 8259 grammar of whitespace,
// literals, strings, numbers and nested values, written once, over a []byte and an index,
// without allocating.
//
// It is used by the two hand-written JSON readers of the hot paths, which keep their own
// semantic layers on top of it: runner/benchfmt (llama-bench result objects: exact error
// messages at byte offsets, built from Error) and runner/loadgen (llama-server stream
// events: only ok or not, falling back to encoding/json on anything it does not vouch for).
package jsonlex

import (
	"fmt"
	"unicode/utf8"
)

// Lexer scans the JSON text in Data from Pos. Its methods move Pos past what they accept
// and report success; on failure they leave Pos at the offset of the problem and Err
// describes it. A Lexer with only Data set is ready to use.
type Lexer struct {
	Data []byte // the text scanned
	Pos  int    // the offset of the next byte to scan

	// The latest failure (kept small: the Lexer lives on its callers' stacks).
	errOff int
	reason Reason
}

// Reason says why a scan failed.
type Reason uint8

// The reasons of Error; the comment of each is its message (see Error.Error).
const (
	NoError            Reason = iota // no failure
	UnterminatedString               // unterminated string
	ShortUEscape                     // short \u escape
	BadUEscape                       // bad \u escape
	BadEscape                        // bad escape \<found> in string
	ControlChar                      // control character 0x<found> in string
	ExpectedString                   // expected a string, found <found>
	ExpectedNumber                   // expected a number, found <found>
	DigitAfterPoint                  // digit expected after decimal point
	DigitInExponent                  // digit expected in exponent
	ExpectedTrue                     // expected true, found <found>
	ExpectedFalse                    // expected false, found <found>
	ExpectedNull                     // expected null, found <found>
	ExpectedBool                     // expected true or false, found <found>
	ExpectedValue                    // expected a value, found <found>
	ExpectedName                     // expected a quoted name, found <found>
	ExpectedColon                    // expected ':', found <found>
	ExpectedObjectEnd                // expected ',' or '}', found <found>
	ExpectedArrayEnd                 // expected ',' or ']', found <found>
	TooDeep                          // nested too deeply
)

// Error is a failure of a scan: where and why. Its value implements error.
type Error struct {
	Off    int    // the byte offset in Data of the problem
	Reason Reason // why
	Found  int    // the byte at Off, or -1 at the end of Data
}

// Error returns the message of the failure, without its offset.
func (e Error) Error() string {
	switch e.Reason {
	case NoError:
		return "no error"
	case UnterminatedString:
		return "unterminated string"
	case ShortUEscape:
		return "short \\u escape"
	case BadUEscape:
		return "bad \\u escape"
	case BadEscape:
		return fmt.Sprintf("bad escape \\%c in string", byte(e.Found))
	case ControlChar:
		return fmt.Sprintf("control character 0x%02x in string", byte(e.Found))
	case ExpectedString:
		return "expected a string, found " + describe(e.Found)
	case ExpectedNumber:
		return "expected a number, found " + describe(e.Found)
	case DigitAfterPoint:
		return "digit expected after decimal point"
	case DigitInExponent:
		return "digit expected in exponent"
	case ExpectedTrue:
		return "expected true, found " + describe(e.Found)
	case ExpectedFalse:
		return "expected false, found " + describe(e.Found)
	case ExpectedNull:
		return "expected null, found " + describe(e.Found)
	case ExpectedBool:
		return "expected true or false, found " + describe(e.Found)
	case ExpectedValue:
		return "expected a value, found " + describe(e.Found)
	case ExpectedName:
		return "expected a quoted name, found " + describe(e.Found)
	case ExpectedColon:
		return "expected ':', found " + describe(e.Found)
	case ExpectedObjectEnd:
		return "expected ',' or '}', found " + describe(e.Found)
	case ExpectedArrayEnd:
		return "expected ',' or ']', found " + describe(e.Found)
	case TooDeep:
		return "nested too deeply"
	}
	return fmt.Sprintf("jsonlex reason %d", e.Reason)
}

// Describe names the byte of data at off for an error message: a quoted character, a byte
// in hex, or end of input.
func Describe(data []byte, off int) string {
	if off < 0 || off >= len(data) {
		return describe(-1)
	}
	return describe(int(data[off]))
}

func describe(c int) string {
	switch {
	case c < 0:
		return "end of input"
	case c >= 0x20 && c < 0x7f:
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// Err describes the latest failure of l's methods (Reason NoError if none failed).
func (l *Lexer) Err() Error {
	found := -1
	if l.errOff < len(l.Data) {
		found = int(l.Data[l.errOff])
	}
	return Error{Off: l.errOff, Reason: l.reason, Found: found}
}

// fail records a failure at off and leaves Pos there.
func (l *Lexer) fail(off int, r Reason) {
	l.errOff, l.reason, l.Pos = off, r, off
}

// SkipSpace moves past JSON whitespace (space, tab, newline, carriage return).
func (l *Lexer) SkipSpace() {
	for l.Pos < len(l.Data) && isSpace[l.Data[l.Pos]] {
		l.Pos++
	}
}

// Peek returns the byte at Pos, or 0 at the end of Data.
func (l *Lexer) Peek() byte {
	if l.Pos < len(l.Data) {
		return l.Data[l.Pos]
	}
	return 0
}

// Consume moves past c if it is the byte at Pos, and says whether it was (a miss is not
// recorded as a failure).
func (l *Lexer) Consume(c byte) bool {
	if l.Pos < len(l.Data) && l.Data[l.Pos] == c {
		l.Pos++
		return true
	}
	return false
}

// literal moves past w if it is next; else it fails with r at Pos.
func (l *Lexer) literal(w string, r Reason) bool {
	if len(l.Data)-l.Pos >= len(w) && string(l.Data[l.Pos:l.Pos+len(w)]) == w {
		l.Pos += len(w)
		return true
	}
	l.fail(l.Pos, r)
	return false
}

// ScanNull moves past the literal null at Pos; else it fails with ExpectedNull at Pos.
func (l *Lexer) ScanNull() bool { return l.literal("null", ExpectedNull) }

// ScanBool moves past the literal true or false at Pos and returns its value. It fails at
// Pos with ExpectedTrue or ExpectedFalse when the literal its first byte starts is
// misspelt, and with ExpectedBool when that byte starts neither.
func (l *Lexer) ScanBool() (v, ok bool) {
	switch l.Peek() {
	case 't':
		ok = l.literal("true", ExpectedTrue)
		return ok, ok
	case 'f':
		return false, l.literal("false", ExpectedFalse)
	}
	l.fail(l.Pos, ExpectedBool)
	return false, false
}

// StrFlags says what a string's raw content holds.
type StrFlags uint8

// The flags of ScanString.
const (
	Escaped  StrFlags = 1 << iota // backslash escapes
	NonASCII                      // bytes >= 0x80 (not necessarily valid UTF-8)
)

// Plain says whether a string's raw content, with its flags from ScanString, is its decoded
// value as it is: no escapes, and valid UTF-8 (encoding/json turns invalid bytes into
// U+FFFD).
func Plain(content []byte, f StrFlags) bool {
	return f == 0 || f == NonASCII && utf8.Valid(content)
}

// Byte classes inside a string: 0 for the bytes that are just content.
const (
	cPlain = iota
	cQuote
	cBackslash
	cControl
	cHigh
)

var strClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = cControl
	}
	t['"'], t['\\'] = cQuote, cBackslash
	for c := 0x80; c < 0x100; c++ {
		t[c] = cHigh
	}
	return t
}()

var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// ScanString moves past the JSON string at Pos and returns its raw content (between the
// quotes, not decoded) and what it holds. It fails with ExpectedString when Pos is not at a
// quote; UnterminatedString at the opening quote when no closing one follows, or at the end
// of Data after a final backslash; ShortUEscape at the u of a \u with fewer than four bytes
// after it; BadUEscape at the first of them that is not hex; BadEscape at the byte after a
// backslash that starts no escape; ControlChar at a byte below 0x20.
func (l *Lexer) ScanString() (content []byte, flags StrFlags, ok bool) {
	b := l.Data
	start := l.Pos
	if start >= len(b) || b[start] != '"' {
		l.fail(start, ExpectedString)
		return nil, 0, false
	}
	i := start + 1
	for i < len(b) {
		c := b[i]
		if strClass[c] == cPlain {
			i++
			continue
		}
		switch strClass[c] {
		case cQuote:
			l.Pos = i + 1
			return b[start+1 : i], flags, true
		case cBackslash:
			flags |= Escaped
			i++
			if i >= len(b) {
				l.fail(i, UnterminatedString)
				return nil, 0, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(b)-i < 5 {
					l.fail(i, ShortUEscape)
					return nil, 0, false
				}
				for k := 1; k <= 4; k++ {
					if !isHex(b[i+k]) {
						l.fail(i+k, BadUEscape)
						return nil, 0, false
					}
				}
				i += 5
			default:
				l.fail(i, BadEscape)
				return nil, 0, false
			}
		case cControl:
			l.fail(i, ControlChar)
			return nil, 0, false
		default:
			flags |= NonASCII
			i++
		}
	}
	l.fail(start, UnterminatedString)
	return nil, 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// ScanNumber moves past the JSON number at Pos (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?
// ([eE][+-]?[0-9]+)?) and returns its bytes. It fails with ExpectedNumber where the integer
// part should start (after a minus), DigitAfterPoint at the byte after the point, and
// DigitInExponent where the exponent's digits should start.
func (l *Lexer) ScanNumber() ([]byte, bool) {
	b, i := l.Data, l.Pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i++
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		l.fail(i, ExpectedNumber)
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			l.fail(i, DigitAfterPoint)
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
			l.fail(i, DigitInExponent)
			return nil, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	n := b[l.Pos:i]
	l.Pos = i
	return n, true
}

// SkipValue moves past the JSON value at Pos, checking its syntax. A value inside more than
// maxDepth arrays and objects of the skipped one fails with TooDeep at its offset (so 0
// allows scalars and empty containers only). Besides the failures of ScanString,
// ScanNumber, ScanBool and ScanNull, it fails with ExpectedValue where no value starts, ExpectedName
// where an object's member should start, ExpectedColon after a member's name, and
// ExpectedObjectEnd or ExpectedArrayEnd after a member or element.
func (l *Lexer) SkipValue(maxDepth int) bool {
	return l.skip(0, maxDepth)
}

// skipSeq skips an object's members or an array's elements, the opening byte at l.Pos: item
// skips one (from its first byte), then a ',' continues and end closes; anything else fails
// with endErr.
func (l *Lexer) skipSeq(end byte, endErr Reason, item func() bool) bool {
	l.Pos++
	l.SkipSpace()
	if l.Consume(end) {
		return true
	}
	for {
		l.SkipSpace()
		if !item() {
			return false
		}
		l.SkipSpace()
		if l.Consume(',') {
			continue
		}
		if l.Consume(end) {
			return true
		}
		l.fail(l.Pos, endErr)
		return false
	}
}

func (l *Lexer) skip(depth, maxDepth int) bool {
	if depth > maxDepth {
		l.fail(l.Pos, TooDeep)
		return false
	}
	switch c := l.Peek(); {
	case c == '"':
		_, _, ok := l.ScanString()
		return ok
	case c == '{':
		return l.skipSeq('}', ExpectedObjectEnd, func() bool {
			if l.Peek() != '"' {
				l.fail(l.Pos, ExpectedName)
				return false
			}
			if _, _, ok := l.ScanString(); !ok {
				return false
			}
			l.SkipSpace()
			if !l.Consume(':') {
				l.fail(l.Pos, ExpectedColon)
				return false
			}
			l.SkipSpace()
			return l.skip(depth+1, maxDepth)
		})
	case c == '[':
		return l.skipSeq(']', ExpectedArrayEnd, func() bool { return l.skip(depth+1, maxDepth) })
	case c == 't':
		return l.literal("true", ExpectedTrue)
	case c == 'f':
		return l.literal("false", ExpectedFalse)
	case c == 'n':
		return l.ScanNull()
	case c == '-' || isDigit(c):
		_, ok := l.ScanNumber()
		return ok
	}
	l.fail(l.Pos, ExpectedValue)
	return false
}
