package study

import (
	"fmt"
	"reflect"
	"regexp"

	"sparkbench/app/canon"
	"sparkbench/runner/jsonlex"
)

// DecodeFileStrict decodes exactly one JSON value into v with unknown fields refused (the one
// strict decoder, jsonlex.DecodeStrict, with checks: jsonlex.Input for a file a person wrote,
// such as a plan), worded for the file: oneValue says what the file holds, doc where its format
// is described.
func DecodeFileStrict(name string, data []byte, v any, oneValue, doc string, checks ...jsonlex.Check) error {
	e := jsonlex.DecodeStrict(data, v, checks...)
	if e == nil {
		return nil
	}
	if msg, ok := jsonlex.InputDetail(data, e); ok {
		l, c := jsonlex.LineCol(data, e.Offset)
		return &DecodeError{File: name, Line: l, Col: c, Msg: msg}
	}
	at := func(off int64, msg string) error {
		l, c := jsonlex.LineCol(data, off)
		return &DecodeError{File: name, Line: l, Col: c, Msg: msg}
	}
	switch e.Kind {
	case jsonlex.StrictEmpty:
		return &DecodeError{File: name, Line: 1, Col: 1, Msg: "empty file; want a JSON object (see " + doc + ")"}
	case jsonlex.StrictUnclosed:
		return at(e.Offset, "the JSON ends before the object is closed")
	case jsonlex.StrictUnknown:
		// The decoder reports neither the key's place nor its object: walk the tokens with
		// the type to the first key no field takes, where the decoder refused it.
		off := e.Offset
		if o, key, ok := canon.UnknownKeyOffset(data, reflect.TypeOf(v)); ok && fmt.Sprintf("%q", key) == e.Field {
			off = o
		} else if loc := regexp.MustCompile(regexp.QuoteMeta(e.Field) + `\s*:`).FindIndex(data); loc != nil {
			off = int64(loc[0]) // fallback: the first occurrence of the key
		}
		return at(off, "unknown field "+e.Field+"; check its spelling against "+doc)
	case jsonlex.StrictTrailing:
		return at(e.Offset, "trailing data after the JSON object; "+oneValue)
	}
	return at(e.Offset, e.Detail())
}
