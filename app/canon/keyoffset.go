package canon

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// UnknownKeyOffset finds where the key that strict decoding of data into a value of type t
// refused begins: the first object key, in document order, that names no field of the struct
// it sits in (the key encoding/json reports with DisallowUnknownFields). It walks the tokens
// with the type alongside, so a key that is unknown in one object but a field elsewhere
// ("slots" inside "limits") is found where it is wrong. ok is false when no such key is found
// (data that does not tokenise, or a type the walk cannot follow).
func UnknownKeyOffset(data []byte, t reflect.Type) (off int64, key string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	w := &keyWalker{dec: dec, data: data}
	defer func() {
		if recover() != nil { // a malformed document: no location rather than a crash
			ok = false
		}
	}()
	if w.value(t) {
		return w.off, w.key, true
	}
	return 0, "", false
}

type keyWalker struct {
	dec  *json.Decoder
	data []byte
	off  int64
	key  string
	err  bool
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value walks one JSON value of type t (nil: any); it reports whether it found the key.
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
		for w.dec.More() {
			before := w.dec.InputOffset()
			tok, err := w.dec.Token()
			if err != nil {
				w.err = true
				return false
			}
			k, _ := tok.(string)
			ft := elem
			if isStruct {
				f, known := lookupField(fields, k)
				if !known {
					w.off, w.key = keyStart(w.data, before), k
					return true
				}
				ft = f
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

// lookupField matches a key as encoding/json does: exactly, else ignoring case.
func lookupField(fields map[string]reflect.Type, k string) (reflect.Type, bool) {
	if ft, ok := fields[k]; ok {
		return ft, true
	}
	for name, ft := range fields {
		if strings.EqualFold(name, k) {
			return ft, true
		}
	}
	return nil, false
}
