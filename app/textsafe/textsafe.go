// Package textsafe keeps control characters out of what sparkbench stores and prints: Check
// refuses them in free text a user gives (a finding, a verdict's rationale, an amendment's
// reason, an author), Escape writes them visibly (`\x1b`) in every text the terminal or a
// receipt shows, so that text stored by an older version, or imported, never reaches a
// terminal raw.
//
// A control character is a C0 control (U+0000–U+001F), DEL (U+007F) or a C1 control
// (U+0080–U+009F, e.g. U+009B, CSI). Prose fields (Check) allow tab and newline; one-line
// fields (CheckLine) allow none. Text must be UTF-8: a byte that is not is refused, and
// escaped as `\xNN`.
package textsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Error says which field holds which character, where.
type Error struct {
	Field  string
	Rune   rune // utf8.RuneError with Byte set: not UTF-8
	Byte   byte // the offending byte when the text is not UTF-8
	Offset int  // 0-based byte offset; the message counts from 1
	Line   bool // the field is one line (no tab or newline either)
}

func (e *Error) Error() string {
	if e.Rune == utf8.RuneError {
		return fmt.Sprintf("%s is not valid UTF-8: byte %d is 0x%02x; write it as UTF-8 text", e.Field, e.Offset+1, e.Byte)
	}
	allowed := "tabs and newlines are allowed"
	if e.Line {
		allowed = "it is one line: no tab or newline either"
	}
	return fmt.Sprintf("%s contains the control character %s at byte %d; remove it (%s)", e.Field, Name(e.Rune), e.Offset+1, allowed)
}

// Check refuses a control character other than tab and newline, or text that is not UTF-8,
// in a prose field; field names it in the message ("finding text").
func Check(field, s string) error { return check(field, s, false) }

// CheckLine is Check for a one-line field (an author, a name): tab and newline are refused too.
func CheckLine(field, s string) error { return check(field, s, true) }

func check(field, s string, line bool) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return &Error{Field: field, Rune: utf8.RuneError, Byte: s[i], Offset: i, Line: line}
		}
		if IsControl(r) && (line || r != '\t' && r != '\n') {
			return &Error{Field: field, Rune: r, Offset: i, Line: line}
		}
		i += size
	}
	return nil
}

// IsControl reports whether r is a C0 control, DEL or a C1 control.
func IsControl(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }

// Clean reports whether Escape would leave s as it is.
func Clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' || c >= 0x7f {
			return cleanSlow(s)
		}
	}
	return true
}

func cleanSlow(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || IsControl(r) && r != '\t' && r != '\n' {
			return false
		}
		i += size
	}
	return true
}

// Escape writes every control character but tab and newline as a visible escape, `\x1b` (C0
// and DEL) or `\u009b` (C1), and every byte that is not UTF-8 as `\xNN`; all else is kept
// byte for byte (text without control characters comes back unchanged). The escapes are
// plain text in Markdown (a backslash before a letter is no Markdown escape). A backslash
// already in the text is kept, so `\x1b` typed as four characters reads the same: the
// escape shows what was there, it is not meant to be decoded.
func Escape(s string) string {
	if Clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x80 && IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

var c0Names = [...]string{"NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS, backspace", "HT, tab", "LF, newline",
	"VT", "FF", "CR, carriage return", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB",
	"ESC", "FS", "GS", "RS", "US"}

var c1Names = [...]string{"PAD", "HOP", "BPH", "NBH", "IND", "NEL", "SSA", "ESA", "HTS", "HTJ", "VTS", "PLD", "PLU", "RI",
	"SS2", "SS3", "DCS", "PU1", "PU2", "STS", "CCH", "MW", "SPA", "EPA", "SOS", "SGCI", "SCI", "CSI", "ST", "OSC", "PM", "APC"}

// Name is a control character as a message names it: "U+001B (ESC)".
func Name(r rune) string {
	n := ""
	switch {
	case r >= 0 && r < 0x20:
		n = c0Names[r]
	case r == 0x7f:
		n = "DEL"
	case r >= 0x80 && r <= 0x9f:
		n = c1Names[r-0x80]
	}
	if n == "" {
		return fmt.Sprintf("U+%04X", r)
	}
	return fmt.Sprintf("U+%04X (%s)", r, n)
}

// Buffered buffers what a report writes and writes it to w through Escape when flushed:
// recorded text (a finding, a rationale, a reason, a model name from imported rows) cannot
// reach a terminal with a raw control character, whatever version stored it. Text without
// control characters is written unchanged.
func Buffered(w io.Writer) (io.Writer, func()) {
	var b strings.Builder
	return &b, func() { _, _ = io.WriteString(w, Escape(b.String())) }
}

// ByteSize is a byte count as the CLI's reports print it: "1.5 MiB", "2.00 GiB", "512 bytes".
func ByteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
