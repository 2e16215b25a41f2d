package benchfmt

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// MarshalJSON writes the row as llama-bench does (known fields present in the source, in
// llama-bench's order, then Extra sorted by key), so ParseJSONLLine reads it back unchanged.
func (r Result) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the row's JSON object (see MarshalJSON) to b.
func (r *Result) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	first := true
	sep := func() {
		if !first {
			b = append(b, ',')
		}
		first = false
	}
	for f := Field(0); f < NumFields; f++ {
		if !r.Known.Has(f) {
			continue
		}
		sep()
		b = appendJSONString(b, fields[f].name)
		b = append(b, ':')
		v, _ := r.Value(f)
		switch x := v.(type) {
		case string:
			b = appendJSONString(b, x)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case bool:
			b = strconv.AppendBool(b, x)
		case float64:
			var err error
			if b, err = appendJSONFloat(b, x, f); err != nil {
				return nil, err
			}
		case []int64:
			b = append(b, '[')
			for i, n := range x {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, n, 10)
			}
			b = append(b, ']')
		case []float64:
			b = append(b, '[')
			for i, n := range x {
				if i > 0 {
					b = append(b, ',')
				}
				var err error
				if b, err = appendJSONFloat(b, n, f); err != nil {
					return nil, err
				}
			}
			b = append(b, ']')
		}
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := r.Extra[k]
		if !json.Valid(raw) {
			return nil, fmt.Errorf("benchfmt: extra field %q holds invalid JSON", k)
		}
		sep()
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = append(b, raw...)
	}
	return append(b, '}'), nil
}

func appendJSONFloat(b []byte, v float64, f Field) ([]byte, error) {
	if v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308 {
		return nil, fmt.Errorf("benchfmt: %s is %v, which JSON cannot hold", f.Name(), v)
	}
	// The shortest representation that round-trips, as encoding/json writes it.
	nb, _ := json.Marshal(v)
	return append(b, nb...), nil
}

// appendJSONString writes s as a JSON string without HTML escaping; invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
