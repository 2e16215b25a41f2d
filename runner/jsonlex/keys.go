package jsonlex

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// The key walk: the tokens of one JSON value with the Go type it decodes into alongside, to
// place what encoding/json reports without a place (an unknown field) and to find what it
// accepts silently (a key given twice: the last one wins).

// UnknownKeyOffset finds where the key that strict decoding of data into a value of type t
// refused begins: the first object key, in document order, that names no field of the struct
// it sits in (the key encoding/json reports with DisallowUnknownFields). It walks the tokens
// with the type alongside, so a key that is unknown in one object but a field elsewhere
// ("slots" inside "limits") is found where it is wrong. ok is false when no such key is found
// (data that does not tokenise, or a type the walk cannot follow).
func UnknownKeyOffset(data []byte, t reflect.Type) (off int64, key string, ok bool) {
	w := walkKeys(data, t, false)
	return w.unknownOff, w.unknownKey, w.unknownFound
}

// duplicateKey finds the first object key, in document order, that its object already has:
// the same key, or (in an object decoded into a struct) another spelling of the same field, as
// encoding/json matches names regardless of case. first is where the earlier one begins.
func duplicateKey(data []byte, t reflect.Type) (off, first int64, key string, ok bool) {
	w := walkKeys(data, t, true)
	return w.dupOff, w.dupFirst, w.dupKey, w.dupFound
}

type keyWalker struct {
	dec        *json.Decoder
	data       []byte
	dups       bool // look for keys given twice (and stop at the first); else for unknown keys
	err        bool
	unknownOff int64
	unknownKey string

	unknownFound, dupFound bool
	dupOff, dupFirst       int64
	dupKey                 string
}

func walkKeys(data []byte, t reflect.Type, dups bool) *keyWalker {
	w := &keyWalker{dec: json.NewDecoder(bytes.NewReader(data)), data: data, dups: dups}
	func() {
		defer func() {
			if recover() != nil { // a malformed document: no location rather than a crash
				w.unknownFound, w.dupFound, w.unknownKey = false, false, ""
			}
		}()
		w.value(t)
	}()
	return w
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value walks one JSON value of type t (nil: any); it reports whether the walk found what it
// looks for.
func (w *keyWalker) value(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)) {
		t = nil // decoded by its own method: any key may be fine
	}
	tok, err := w.dec.Token()
	if err != nil {
		w.err = true
		return false
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return false // a scalar
	}
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for w.dec.More() {
			if w.value(elem) {
				return true
			}
			if w.err {
				return false
			}
		}
		_, err := w.dec.Token() // ]
		w.err = err != nil
		return false
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		isStruct := t != nil && t.Kind() == reflect.Struct
		if isStruct {
			fields = JSONFields(t)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		seen := map[string]int64{}
		for w.dec.More() {
			before := w.dec.InputOffset()
			tok, err := w.dec.Token()
			if err != nil {
				w.err = true
				return false
			}
			k, _ := tok.(string)
			at := keyStart(w.data, before)
			ft, name := elem, k
			if isStruct {
				f, fname, known := lookupField(fields, k)
				if !known && !w.dups {
					w.unknownOff, w.unknownKey, w.unknownFound = at, k, true
					return true
				}
				ft = f
				if known {
					name = fname
				}
			}
			if w.dups {
				if first, again := seen[name]; again {
					w.dupOff, w.dupFirst, w.dupKey, w.dupFound = at, first, k, true
					return true
				}
				seen[name] = at
			}
			if w.value(ft) {
				return true
			}
			if w.err {
				return false
			}
		}
		_, err := w.dec.Token() // }
		w.err = err != nil
		return false
	}
	return false
}

// keyStart skips the separators between the end of the previous token and a key's quote.
func keyStart(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// JSONFields maps a struct's JSON names (as encoding/json reads them) to their types.
func JSONFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					add(et)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := out[name]; !dup {
				out[name] = ft
			}
		}
	}
	add(t)
	return out
}

// lookupField matches a key as encoding/json does: exactly, else ignoring case. name is the
// field's JSON name.
func lookupField(fields map[string]reflect.Type, k string) (reflect.Type, string, bool) {
	if ft, ok := fields[k]; ok {
		return ft, k, true
	}
	for name, ft := range fields {
		if strings.EqualFold(name, k) {
			return ft, name, true
		}
	}
	return nil, "", false
}
