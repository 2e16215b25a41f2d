package capacity

import (
	"fmt"
	"strconv"
	"strings"
)

// LifetimeKey names one server lifetime: a pass, a candidate and a slot count. Its text form,
// "forward/q8-generic/p4", is what the CLI's --requests, --rss and --server-log flags take.
type LifetimeKey struct {
	Pass      string
	Candidate string
	Slots     int
}

func (k LifetimeKey) String() string { return fmt.Sprintf("%s/%s/p%d", k.Pass, k.Candidate, k.Slots) }

// ParseLifetimeKey parses "PASS/CANDIDATE/pP".
func ParseLifetimeKey(s string) (LifetimeKey, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return LifetimeKey{}, fmt.Errorf("%q: want PASS/CANDIDATE/pP, e.g. forward/q8-generic/p4", s)
	}
	if parts[0] != PassForward && parts[0] != PassReverse {
		return LifetimeKey{}, fmt.Errorf("%q: pass %q: want %s or %s", s, parts[0], PassForward, PassReverse)
	}
	if !idRE.MatchString(parts[1]) {
		return LifetimeKey{}, fmt.Errorf("%q: candidate %q is not a candidate ID", s, parts[1])
	}
	p, err := parseSlots(parts[2])
	if err != nil {
		return LifetimeKey{}, fmt.Errorf("%q: %v", s, err)
	}
	return LifetimeKey{parts[0], parts[1], p}, nil
}

// QualityKey names one quality-guard run: a candidate at a slot count, "q8-generic/p4".
type QualityKey struct {
	Candidate string
	Slots     int
}

func (k QualityKey) String() string { return fmt.Sprintf("%s/p%d", k.Candidate, k.Slots) }

// ParseQualityKey parses "CANDIDATE/pP".
func ParseQualityKey(s string) (QualityKey, error) {
	cand, slots, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(slots, "/") {
		return QualityKey{}, fmt.Errorf("%q: want CANDIDATE/pP, e.g. q8-generic/p4", s)
	}
	if !idRE.MatchString(cand) {
		return QualityKey{}, fmt.Errorf("%q: candidate %q is not a candidate ID", s, cand)
	}
	p, err := parseSlots(slots)
	if err != nil {
		return QualityKey{}, fmt.Errorf("%q: %v", s, err)
	}
	return QualityKey{cand, p}, nil
}

func parseSlots(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "p"))
	if !strings.HasPrefix(s, "p") || err != nil || n < 1 || strconv.Itoa(n) != s[1:] {
		return 0, fmt.Errorf("slots %q: want p followed by the slot count, e.g. p4", s)
	}
	return n, nil
}

// MarshalText writes the key's text form.
func (k LifetimeKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses the key's text form.
func (k *LifetimeKey) UnmarshalText(b []byte) error {
	v, err := ParseLifetimeKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}
