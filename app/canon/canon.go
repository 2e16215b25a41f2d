// Package canon writes canonical JSON: the byte form whose SHA-256 identifies a plan, a
// prediction or a notebook journal entry. It depends on the standard library only, so that
// app (plans) and store (the journal's hash chain) hash the same bytes.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marshal encodes v (any value encoding/json accepts, or JSON bytes as []byte /
// json.RawMessage) in the notebook's canonical form, the bytes that get hashed:
//
//   - object keys sorted by their UTF-8 bytes, each key once;
//   - no whitespace outside strings;
//   - strings escaped minimally: \" \\ \b \f \n \r \t, other control characters as \u00XX,
//     everything else (including <, >, & and non-ASCII) written as UTF-8; invalid UTF-8 is
//     refused;
//   - integers (no fraction, no exponent) written as plain decimal digits, "-0" as "0";
//     other numbers converted to float64 and written as ECMAScript (and encoding/json) do:
//     the shortest digits that round-trip, exponent form outside [1e-6, 1e21).
//
// The same value always gives the same bytes, whatever the input's key order or spacing.
func Marshal(v any) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("canonical JSON: %w", err)
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var tree any
	if err := d.Decode(&tree); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if d.More() {
		return nil, fmt.Errorf("canonical JSON: more than one value")
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("canonical JSON: invalid UTF-8")
	}
	return appendCanonical(nil, tree)
}

func appendCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return AppendString(b, x), nil
	case json.Number:
		return appendCanonicalNumber(b, string(x))
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("canonical JSON: unexpected %T", v)
}

func appendCanonicalNumber(b []byte, s string) ([]byte, error) {
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			return append(b, '0'), nil
		}
		return append(b, s...), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonical JSON: number %s out of range", s)
	}
	return AppendFloat(b, f), nil
}

// AppendFloat appends f the way encoding/json (and ECMAScript) does.
func AppendFloat(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendString appends s as a canonical JSON string.
func AppendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// SHA256Hex is the lower-case hex SHA-256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Canonicalize rewrites a JSON document into canonical form.
func Canonicalize(raw []byte) ([]byte, error) { return Marshal(json.RawMessage(raw)) }

// SHA256 is the hex SHA-256 of the canonical JSON of v, and those bytes.
func SHA256(v any) (string, []byte, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", nil, err
	}
	return SHA256Hex(b), b, nil
}
