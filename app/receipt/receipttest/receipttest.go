// Package receipttest checks receipts the way a reader would: every Markdown table is
// well-formed (the same column count in every row, a proper separator row), and every number
// printed outside code appears in study.json at the precision printed. Tests of app/receipt,
// app/bundle and cmd/sparkbench use it.
package receipttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Table is one parsed GitHub Markdown table.
type Table struct {
	Line   int        // 1-based line of the header
	Header []string   // cells, trimmed
	Rows   [][]string // cells, trimmed (escaped pipes kept as \|)
}

var sepCell = regexp.MustCompile(`^:?-{3,}:?$`)

// splitRow splits a table row on unescaped pipes. The row must start and end with '|'.
func splitRow(line string) ([]string, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 || strings.HasSuffix(line, `\|`) {
		return nil, false
	}
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		c := line[i]
		if c == '\\' && i+1 < len(line) {
			cur.WriteByte(c)
			cur.WriteByte(line[i+1])
			i++
			continue
		}
		if c == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return cells, true
}

// Tables parses every table of a Markdown document (outside fenced code) and reports each
// malformed one: a row whose cell count differs from the header's, a missing or malformed
// separator row, a row that does not start and end with '|'.
func Tables(md []byte) ([]Table, []string) {
	var tables []Table
	var problems []string
	lines := strings.Split(string(md), "\n")
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(l, "|") {
			continue
		}
		start := i
		var block []string
		for i < len(lines) && strings.HasPrefix(lines[i], "|") {
			block = append(block, lines[i])
			i++
		}
		t := Table{Line: start + 1}
		header, ok := splitRow(block[0])
		if !ok {
			problems = append(problems, fmt.Sprintf("line %d: header row does not start and end with '|'", start+1))
			continue
		}
		t.Header = header
		if len(block) < 2 {
			problems = append(problems, fmt.Sprintf("line %d: table without a separator row", start+1))
			continue
		}
		sep, ok := splitRow(block[1])
		if !ok || len(sep) != len(header) {
			problems = append(problems, fmt.Sprintf("line %d: separator row has %d cells, header %d", start+2, len(sep), len(header)))
			continue
		}
		for _, c := range sep {
			if !sepCell.MatchString(c) {
				problems = append(problems, fmt.Sprintf("line %d: separator cell %q is not ---, :--- or ---:", start+2, c))
			}
		}
		for k, row := range block[2:] {
			cells, ok := splitRow(row)
			if !ok {
				problems = append(problems, fmt.Sprintf("line %d: row does not start and end with '|'", start+3+k))
				continue
			}
			if len(cells) != len(header) {
				problems = append(problems, fmt.Sprintf("line %d: %d cells, the header has %d", start+3+k, len(cells), len(header)))
			}
			t.Rows = append(t.Rows, cells)
		}
		tables = append(tables, t)
		i--
	}
	return tables, problems
}

var (
	fenceRE  = regexp.MustCompile("(?ms)^```.*?^```[^\n]*$")
	tagRE    = regexp.MustCompile(`</?[a-z]+>`)
	linkRE   = regexp.MustCompile(`\]\([^)]*\)`)
	numberRE = regexp.MustCompile(`[+\-]?\d+(?:\.\d+)?%?`)
	anyNumRE = regexp.MustCompile(`-?\d+(?:\.\d+)?`)
)

// stripCode removes fenced blocks and inline code spans (verbatim identifiers, hashes and
// commands copied from files, not figures), HTML tags and link targets.
func stripCode(md string) string {
	md = fenceRE.ReplaceAllString(md, "")
	var b strings.Builder
	for i := 0; i < len(md); {
		if md[i] == '\\' && i+1 < len(md) {
			b.WriteByte(' ')
			i += 2
			continue
		}
		if md[i] != '`' {
			b.WriteByte(md[i])
			i++
			continue
		}
		n := 0
		for i+n < len(md) && md[i+n] == '`' {
			n++
		}
		fence := strings.Repeat("`", n)
		end := strings.Index(md[i+n:], fence)
		if end < 0 {
			b.WriteString(md[i:])
			break
		}
		b.WriteByte(' ')
		i += n + end + n
	}
	s := tagRE.ReplaceAllString(b.String(), " ")
	return linkRE.ReplaceAllString(s, "] ")
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
}

// Numbers lists the numbers a reader sees in md: outside code, not part of a word ("P4",
// "tg32", "d128", "p95" are names, not figures), with their sign and a trailing % kept.
func Numbers(md []byte) []string {
	s := stripCode(string(md))
	var out []string
	for _, loc := range numberRE.FindAllStringIndex(s, -1) {
		a, b := loc[0], loc[1]
		if a > 0 && (isWordByte(s[a-1]) || s[a-1] == '-' || s[a-1] == '+') {
			continue
		}
		if b < len(s) && (isWordByte(s[b]) && s[b] != '.' || s[b] == '.' && b+1 < len(s) && s[b+1] >= '0' && s[b+1] <= '9') {
			continue
		}
		out = append(out, s[a:b])
	}
	return out
}

// CrossCheck reports every number of md (Numbers) that study.json does not hold: a token with
// d decimals must equal some JSON number formatted with d decimals (a percentage: the number
// × 100), or a number written inside a JSON string (labels and verdict words copied as text).
func CrossCheck(md, studyJSON []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(studyJSON))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return []string{"study.json: " + err.Error()}
	}
	var values []float64
	texts := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case json.Number:
			if f, err := x.Float64(); err == nil {
				values = append(values, f)
			}
		case string:
			for _, t := range anyNumRE.FindAllString(x, -1) {
				texts[t] = true
				texts[strings.TrimPrefix(t, "-")] = true
				if f, err := strconv.ParseFloat(t, 64); err == nil {
					values = append(values, f)
				}
			}
		}
	}
	walk(tree)
	formatted := map[int]map[string]bool{}
	have := func(tok string, d int, pct bool) bool {
		key := d
		if pct {
			key += 100
		}
		set := formatted[key]
		if set == nil {
			set = map[string]bool{}
			for _, v := range values {
				if pct {
					v *= 100
				}
				if math.IsInf(v, 0) || math.IsNaN(v) {
					continue
				}
				s := strconv.FormatFloat(v, 'f', d, 64)
				if strings.Trim(s, "-0.") == "" {
					s = strings.TrimPrefix(s, "-")
				}
				set[s] = true
			}
			formatted[key] = set
		}
		return set[tok]
	}
	var problems []string
	for _, t := range Numbers(md) {
		pct := strings.HasSuffix(t, "%")
		n := strings.TrimPrefix(strings.TrimSuffix(t, "%"), "+")
		d := 0
		if i := strings.IndexByte(n, '.'); i >= 0 {
			d = len(n) - i - 1
		}
		if have(n, d, pct) || texts[strings.TrimPrefix(n, "-")] {
			continue
		}
		problems = append(problems, fmt.Sprintf("%q is not in study.json", t))
	}
	return problems
}
