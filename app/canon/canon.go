// Package canon writes canonical JSON: the byte form whose SHA-256 identifies a plan, a
// prediction or a journal entry. Rules: object keys sorted by their UTF-8 bytes, no
// insignificant whitespace, numbers as written by encoding/json for float64 and integers
// (integers beyond 2^53 keep their digits), strings escaped by encoding/json without HTML
// escaping, arrays in order. It has no dependencies beyond the standard library so that both
// app and store can use it.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// Marshal returns the canonical JSON of v (any value encoding/json can marshal).
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw)
}

// Canonicalize rewrites a JSON document into canonical form.
func Canonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("canonical JSON: trailing data after the document")
	}
	var buf bytes.Buffer
	if err := write(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SHA256 is the hex SHA-256 of the canonical JSON of v.
func SHA256(v any) (string, []byte, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), b, nil
}

func write(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		buf.WriteString(normalizeNumber(x))
	case string:
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode adds a newline
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := write(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := write(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := write(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonical JSON: unexpected %T", v)
	}
	return nil
}

// normalizeNumber keeps integers as written and rewrites other numbers the way encoding/json
// prints a float64, so 1.50, 1.5 and 15e-1 hash alike.
func normalizeNumber(n json.Number) string {
	s := n.String()
	if _, err := n.Int64(); err == nil {
		return s
	}
	isInt := true
	for i, c := range s {
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			isInt = false
			break
		}
	}
	if isInt {
		return s // a big integer: keep every digit
	}
	f, err := n.Float64()
	if err != nil {
		return s
	}
	b, _ := json.Marshal(f)
	return string(b)
}
