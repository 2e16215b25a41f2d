package store

import (
	"time"

	"sparkbench/app/canon"
)

// CanonicalJSON is the notebook's canonical form (the bytes that get hashed): see app/canon.
func CanonicalJSON(v any) ([]byte, error) { return canon.Marshal(v) }

func appendCanonicalString(b []byte, s string) []byte { return canon.AppendString(b, s) }

func appendFloat(b []byte, f float64) []byte { return canon.AppendFloat(b, f) }

// SHA256Hex is the lower-case hex SHA-256 of b.
func SHA256Hex(b []byte) string { return canon.SHA256Hex(b) }

// timeLayout is RFC 3339 in UTC with exactly nine fractional digits, so text order is time
// order.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// FormatTime writes t as the notebook stores timestamps.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// ParseTime reads a stored timestamp (any RFC 3339 form).
func ParseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

func mustParseTime(s string) time.Time {
	t, _ := ParseTime(s)
	return t
}
