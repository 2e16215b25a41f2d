package textsafe

import (
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		s, want, wantLine string
	}{
		{"plain text, café ✓", "", ""},
		{"two\nlines\twith a tab", "", "finding text contains the control character U+000A (LF, newline) at byte 4; remove it (it is one line: no tab or newline either)"},
		{"abcd\x1b[2J", "finding text contains the control character U+001B (ESC) at byte 5; remove it (tabs and newlines are allowed)", ""},
		{"dos\r\n", "finding text contains the control character U+000D (CR, carriage return) at byte 4; remove it (tabs and newlines are allowed)", ""},
		{"\x00", "finding text contains the control character U+0000 (NUL) at byte 1; remove it (tabs and newlines are allowed)", ""},
		{"bell\x07", "finding text contains the control character U+0007 (BEL) at byte 5; remove it (tabs and newlines are allowed)", ""},
		{"del\x7f", "finding text contains the control character U+007F (DEL) at byte 4; remove it (tabs and newlines are allowed)", ""},
		{"é\u009b31m", "finding text contains the control character U+009B (CSI) at byte 3; remove it (tabs and newlines are allowed)", ""},
		{"ok\xff", "finding text is not valid UTF-8: byte 3 is 0xff; write it as UTF-8 text", ""},
	} {
		got := ""
		if err := Check("finding text", c.s); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("Check(%q) = %q, want %q", c.s, got, c.want)
		}
		wantLine := c.wantLine
		if wantLine == "" && c.want != "" {
			wantLine = c.want[:len(c.want)-len("(tabs and newlines are allowed)")] + "(it is one line: no tab or newline either)"
			if c.want[len(c.want)-1] != ')' {
				wantLine = c.want
			}
		}
		got = ""
		if err := CheckLine("finding text", c.s); err != nil {
			got = err.Error()
		}
		if got != wantLine {
			t.Errorf("CheckLine(%q) = %q, want %q", c.s, got, wantLine)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain | text, café ✓ \\x1b typed", "plain | text, café ✓ \\x1b typed"},
		{"tab\tand\nnewline kept", "tab\tand\nnewline kept"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"cr\r bell\x07 del\x7f nul\x00", `cr\x0d bell\x07 del\x7f nul\x00`},
		{"c1 \u009b2J \u0085", `c1 \u009b2J \u0085`},
		{"bad \xff\xfe utf8 \xc2", `bad \xff\xfe utf8 \xc2`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if Clean(c.in) != (c.in == c.want) {
			t.Errorf("Clean(%q) = %v", c.in, Clean(c.in))
		}
		// What Escape writes passes Check: nothing raw is left.
		if err := Check("x", Escape(c.in)); err != nil {
			t.Errorf("Escape(%q) still holds a control character: %v", c.in, err)
		}
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("a\x1bb\u009b\xff\t\n")
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		if err := Check("x", e); err != nil {
			t.Fatalf("Escape(%q) = %q: %v", s, e, err)
		}
		if Check("x", s) == nil && e != s {
			t.Fatalf("clean %q changed to %q", s, e)
		}
	})
}
