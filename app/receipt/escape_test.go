package receipt

import (
	"strings"
	"testing"
)

// TestMarkdownEscapesControlCharacters: recorded text with control characters (as an older
// version stored it, or an import brought it) reaches receipt.md escaped wherever it is
// written (a table cell, a line, a code span), and Markdown stays valid: the table keeps its
// columns. Text without them is written byte for byte as before.
func TestMarkdownEscapesControlCharacters(t *testing.T) {
	w := &mdWriter{}
	w.heading(2, "Findings")
	w.table([]string{"Finding", "Text"}, "ll", [][]string{{cell("F1"), cell("tg \x1b[2Jdrops\x07 | fast\u009b")}})
	w.line("%s", inline("description \x1b]0;title\x07 with\ttab"))
	w.line("- flags %s", code("--x \x1b[31m"))
	got := string(w.bytes())
	want := "## Findings\n\n| Finding | Text |\n| --- | --- |\n| F1 | tg \\x1b\\[2Jdrops\\x07 \\| fast\\u009b |\n\n" +
		"description \\x1b\\]0;title\\x07 with\ttab\n- flags `--x \\x1b[31m`\n"
	if got != want {
		t.Fatalf("receipt.md:\n%q\nwant\n%q", got, want)
	}
	clean := &mdWriter{}
	clean.line("%s", inline("plain | text, café ✓, a backslash \\x1b typed"))
	if g := string(clean.bytes()); g != clean.b.String() || strings.ContainsAny(g, "\x1b\x07") {
		t.Fatalf("clean text changed: %q", g)
	}
}
