package jsonlex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// StrictKind says what a strict decode refused.
type StrictKind int

const (
	StrictEmpty     StrictKind = iota + 1 // no JSON value at all
	StrictSyntax                          // not JSON (Err is the *json.SyntaxError)
	StrictType                            // a value of the wrong type (Err is the *json.UnmarshalTypeError)
	StrictUnclosed                        // the data ends inside the value
	StrictUnknown                         // a key no field takes (Field is it, quoted)
	StrictTrailing                        // more after the one value
	StrictOther                           // anything else the decoder said (Err)
	StrictDuplicate                       // a key its object already has (Field is it, quoted; First where the earlier one is)
	StrictUTF8                            // bytes that are not UTF-8
	StrictBOM                             // a UTF-8 byte order mark before the value
)

// Check is a refusal DecodeStrict makes only when asked: encoding/json accepts both silently
// (the last of two keys wins; a byte that is not UTF-8 becomes U+FFFD).
type Check uint8

const (
	// NoDuplicateKeys refuses an object key given twice, or two spellings of one struct field
	// (encoding/json matches names regardless of case).
	NoDuplicateKeys Check = 1 << iota
	// ValidUTF8 refuses bytes that are not UTF-8, and a UTF-8 byte order mark (EF BB BF) at
	// the start, which JSON does not allow (RFC 8259 §8.1) and encoding/json calls an
	// "invalid character 'ï'".
	ValidUTF8
	// Input is every check: for the files a person writes and gives sparkbench (plans, hosts
	// lists, fleets). Files sparkbench wrote itself (bundles, journal payloads) are decoded
	// without it, so those written before the checks existed still read and verify.
	Input = NoDuplicateKeys | ValidUTF8
)

// StrictError is why DecodeStrict refused data: the kind, where (a byte offset: of the
// problem itself, an unknown or duplicate key's opening quote included), and the decoder's own
// error.
type StrictError struct {
	Kind   StrictKind
	Offset int64
	Field  string
	First  int64 // StrictDuplicate: where the key's first occurrence begins
	Err    error
}

func (e *StrictError) Error() string {
	switch e.Kind {
	case StrictEmpty:
		return "empty: no JSON value"
	case StrictTrailing:
		return "trailing data after the JSON value"
	case StrictDuplicate:
		return "key " + e.Field + " given twice in one object"
	case StrictUTF8:
		return "invalid UTF-8"
	case StrictBOM:
		return "a UTF-8 byte order mark before the JSON value"
	}
	return e.Err.Error()
}

// Detail words a syntax or type refusal as sparkbench's files say it ("invalid JSON: …",
// "FIELD: want TYPE, got JSON VALUE"), and any other refusal as the decoder did.
func (e *StrictError) Detail() string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case e.Kind == StrictSyntax && errors.As(e.Err, &syn):
		return "invalid JSON: " + syn.Error()
	case e.Kind == StrictType && errors.As(e.Err, &typ):
		return fmt.Sprintf("%s: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)
	}
	return e.Error()
}

// DecodeStrict is sparkbench's one strict JSON decoder: exactly one value of data into v,
// unknown fields and trailing data refused, and what checks asks for (Input for a file a person
// wrote). Callers word the refusal for their file (plans, prompt plans, case lists, bundle
// records) from the StrictError it returns, or call DecodeFile, which does.
func DecodeStrict(data []byte, v any, checks ...Check) *StrictError {
	var want Check
	for _, c := range checks {
		want |= c
	}
	if want&ValidUTF8 != 0 && bytes.HasPrefix(data, utf8BOM) {
		return &StrictError{Kind: StrictBOM, Offset: 0, Err: errors.New("a UTF-8 byte order mark")}
	}
	if want&ValidUTF8 != 0 && !utf8.Valid(data) {
		return &StrictError{Kind: StrictUTF8, Offset: int64(firstInvalidUTF8(data)), Err: errors.New("invalid UTF-8")}
	}
	if want&NoDuplicateKeys != 0 {
		if off, first, key, ok := duplicateKey(data, reflect.TypeOf(v)); ok {
			return &StrictError{Kind: StrictDuplicate, Offset: off, First: first, Field: strconv.Quote(key)}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn): // Offset counts the bytes read, the offending one included
			return &StrictError{Kind: StrictSyntax, Offset: max(syn.Offset-1, 0), Err: err}
		case errors.As(err, &typ):
			return &StrictError{Kind: StrictType, Offset: typ.Offset, Err: err}
		case errors.Is(err, io.EOF):
			return &StrictError{Kind: StrictEmpty, Err: err}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return &StrictError{Kind: StrictUnclosed, Offset: int64(len(data)), Err: err}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			// encoding/json names the key but not its place: walk the tokens with the type to
			// the first key no field takes, where it refused it.
			field, off := strings.TrimPrefix(err.Error(), "json: unknown field "), dec.InputOffset()
			if o, key, ok := UnknownKeyOffset(data, reflect.TypeOf(v)); ok && strconv.Quote(key) == field {
				off = o
			}
			return &StrictError{Kind: StrictUnknown, Offset: off, Field: field, Err: err}
		}
		return &StrictError{Kind: StrictOther, Offset: dec.InputOffset(), Err: err}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		for end < int64(len(data)) && strings.IndexByte(" \t\r\n", data[end]) >= 0 {
			end++
		}
		return &StrictError{Kind: StrictTrailing, Offset: end} // where the trailing data begins
	}
	return nil
}

// utf8BOM is the UTF-8 byte order mark some editors write at the start of a file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// FileError is a refusal placed in a file: FILE:LINE:COL: what is wrong and what to do.
type FileError struct {
	File      string
	Line, Col int
	Msg       string
	Kind      StrictKind
}

func (e *FileError) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// DecodeFile decodes the file name's data (one JSON object, written by a person) into v with
// DecodeStrict and every Input check, and words a refusal as a *FileError at its line and
// column. what names the file for messages ("a hosts file"); doc is where its format is
// described ("docs/fleet.md").
func DecodeFile(name string, data []byte, v any, what, doc string) error {
	e := DecodeStrict(data, v, Input)
	if e == nil {
		return nil
	}
	at := func(off int64, msg string) error {
		l, c := LineCol(data, off)
		return &FileError{File: name, Line: l, Col: c, Msg: msg, Kind: e.Kind}
	}
	switch e.Kind {
	case StrictEmpty:
		return &FileError{File: name, Line: 1, Col: 1, Msg: "empty file; " + what + " is a JSON object (see " + doc + ")", Kind: e.Kind}
	case StrictUnclosed:
		return at(e.Offset, "the JSON ends before the object is closed; "+what+" is one JSON object (see "+doc+")")
	case StrictUnknown:
		return at(e.Offset, "unknown field "+e.Field+"; check its spelling against "+doc)
	case StrictTrailing:
		return at(e.Offset, "trailing data after the JSON object; "+what+" holds exactly one JSON object")
	case StrictDuplicate, StrictUTF8, StrictBOM:
		msg, _ := InputDetail(data, e)
		return at(e.Offset, msg)
	}
	return at(e.Offset, e.Detail())
}

// InputDetail words the refusals of the Input checks (a key given twice, bytes that are not
// UTF-8, a byte order mark) as every decoder of a person's file says them; ok is false for other refusals.
func InputDetail(data []byte, e *StrictError) (msg string, ok bool) {
	switch e.Kind {
	case StrictDuplicate:
		l, c := LineCol(data, e.First)
		return fmt.Sprintf("key %s given twice in one object (first at line %d, column %d); give it once", e.Field, l, c), true
	case StrictUTF8:
		return fmt.Sprintf("byte 0x%02x is not UTF-8; save the file as UTF-8", data[e.Offset]), true
	case StrictBOM:
		return "the file starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON does not allow; save it as UTF-8 without a BOM", true
	}
	return "", false
}

// LineCol is the 1-based line and column of byte offset off in data.
func LineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
