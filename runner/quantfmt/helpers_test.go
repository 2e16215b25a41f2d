package quantfmt

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixture returns a captured transcript (testdata/NAME.txt) and its lines, numbered from 1
// as the parsers number them (lines[0] is line 1).
func fixture(t testing.TB, name string) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), splitLines(string(b))
}

// traces checks that a figure names a raw line that prints its value.
func traces(t testing.TB, lines []string, what string, f Figure) {
	t.Helper()
	if f.Line < 1 || f.Line > len(lines) {
		t.Errorf("%s: line %d outside the output's %d lines", what, f.Line, len(lines))
		return
	}
	raw := lines[f.Line-1]
	for _, v := range []float64{f.Value, f.PM} {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if v == 0 {
			s = "0"
		}
		if !strings.Contains(raw, s) {
			t.Errorf("%s %v: line %d does not print %s: %q", what, f, f.Line, s, raw)
		}
		if !f.HasPM {
			break
		}
	}
}
