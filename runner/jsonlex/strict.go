package jsonlex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// StrictKind says what a strict decode refused.
type StrictKind int

const (
	StrictEmpty    StrictKind = iota + 1 // no JSON value at all
	StrictSyntax                         // not JSON (Err is the *json.SyntaxError)
	StrictType                           // a value of the wrong type (Err is the *json.UnmarshalTypeError)
	StrictUnclosed                       // the data ends inside the value
	StrictUnknown                        // a key no field takes (Field is it, quoted)
	StrictTrailing                       // more after the one value
	StrictOther                          // anything else the decoder said (Err)
)

// StrictError is why DecodeStrict refused data: the kind, where (a byte offset; the decoder's
// position for an unknown key, which callers may refine), and the decoder's own error.
type StrictError struct {
	Kind   StrictKind
	Offset int64
	Field  string
	Err    error
}

func (e *StrictError) Error() string {
	switch e.Kind {
	case StrictEmpty:
		return "empty: no JSON value"
	case StrictTrailing:
		return "trailing data after the JSON value"
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
// unknown fields and trailing data refused. Callers word the refusal for their file (plans,
// prompt plans, case lists, bundle records), from the StrictError it returns.
func DecodeStrict(data []byte, v any) *StrictError {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return &StrictError{Kind: StrictSyntax, Offset: syn.Offset, Err: err}
		case errors.As(err, &typ):
			return &StrictError{Kind: StrictType, Offset: typ.Offset, Err: err}
		case errors.Is(err, io.EOF):
			return &StrictError{Kind: StrictEmpty, Err: err}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return &StrictError{Kind: StrictUnclosed, Offset: int64(len(data)), Err: err}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return &StrictError{Kind: StrictUnknown, Offset: dec.InputOffset(), Field: strings.TrimPrefix(err.Error(), "json: unknown field "), Err: err}
		}
		return &StrictError{Kind: StrictOther, Offset: dec.InputOffset(), Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &StrictError{Kind: StrictTrailing, Offset: dec.InputOffset()}
	}
	return nil
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
