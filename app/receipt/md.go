package receipt

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"sparkbench/app/textsafe"
)

// mdWriter builds GitHub Markdown. Tables always have the header's column count in every row;
// cells are escaped so that a '|' or a newline in recorded text cannot break a row.
type mdWriter struct{ b strings.Builder }

func (w *mdWriter) line(format string, a ...any) {
	if len(a) == 0 {
		w.b.WriteString(format)
	} else {
		fmt.Fprintf(&w.b, format, a...)
	}
	w.b.WriteByte('\n')
}

func (w *mdWriter) blank() { w.b.WriteByte('\n') }

func (w *mdWriter) heading(level int, text string) {
	w.line("%s %s", strings.Repeat("#", level), inline(text))
	w.blank()
}

// table writes a table; align has one entry per column: "l" (---) or "r" (---:).
func (w *mdWriter) table(header []string, align string, rows [][]string) {
	cells := func(cs []string) {
		w.b.WriteString("|")
		for i := range header {
			c := ""
			if i < len(cs) {
				c = cs[i]
			}
			w.b.WriteString(" ")
			w.b.WriteString(c)
			w.b.WriteString(" |")
		}
		w.b.WriteByte('\n')
	}
	hs := make([]string, len(header))
	for i, h := range header {
		hs[i] = cell(h)
	}
	cells(hs)
	w.b.WriteString("|")
	for i := range header {
		if i < len(align) && align[i] == 'r' {
			w.b.WriteString(" ---: |")
		} else {
			w.b.WriteString(" --- |")
		}
	}
	w.b.WriteByte('\n')
	for _, r := range rows {
		cells(r)
	}
	w.blank()
}

// bytes is the document with every control character but tab and newline escaped
// (textsafe.Escape: `\x1b`, plain text in Markdown), wherever recorded text was written —
// a cell, a line, a code span or block —, so a receipt never carries one raw, even for text
// stored by an older version or imported. A document without one is unchanged.
func (w *mdWriter) bytes() []byte { return []byte(textsafe.Escape(w.b.String())) }

// cell escapes recorded text for a table cell: pipes, newlines and Markdown emphasis or HTML
// that would change the meaning.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(inline(s), "|", `\|`)
}

// inline escapes recorded text outside code: backslashes, emphasis and code markers, link
// brackets, and a '<' that could open an HTML tag.
func inline(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "*", "\\*", "_", "\\_", "`", "\\`", "[", "\\[", "]", "\\]")
	s = r.Replace(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '<' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '!' || s[i+1] == '?' || s[i+1] >= 'a' && s[i+1] <= 'z' || s[i+1] >= 'A' && s[i+1] <= 'Z') {
			b.WriteString("&lt;")
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// code is s as an inline code span (a pipe escaped so that it cannot end a table cell).
func code(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if s == "" {
		return "` `"
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// Number formats. Every number a receipt prints outside code comes from study.json and is
// printed with a fixed number of decimals (or these fixed rules), so a test can find it there.

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// pct is a fraction as a percentage with one decimal: 0.013 → "1.3%".
func pct(x float64) string { return f1(x*100) + "%" }

// spct is a signed percentage: 1.42 → "+142.0%".
func spct(x float64) string {
	s := f1(x * 100)
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s + "%"
}

// num is a figure with at most four significant digits, never in exponent form, without
// trailing zeros: 106.0637 → "106.1", 21240.55 → "21241", 2 → "2", 0.000123 → "0.000123".
func num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case x == 0:
		return "0"
	}
	mag := int(math.Floor(math.Log10(math.Abs(x))))
	dec := 3 - mag
	if dec < 0 {
		dec = 0
	}
	if dec > 12 {
		dec = 12
	}
	s := strconv.FormatFloat(x, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func fp(p *float64, f func(float64) string) string {
	if p == nil {
		return "n/a"
	}
	return f(*p)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
