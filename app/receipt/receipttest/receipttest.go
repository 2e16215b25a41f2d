// Package receipttest checks receipts the way a reader would: every Markdown table is
// well-formed (the same column count in every row, a proper separator row), every number
// printed outside code appears in study.json at the precision printed, and the Methodology's
// values (code spans included) are the study.json fields they describe. Tests of app/receipt,
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
	return append(problems, methodology(md, tree, have, texts)...)
}

// A tie holds one line of a receipt's Methodology section to the study.json fields it prints:
// re matches the line and each of its groups must be the value at the matching path (dotted,
// from study.json's root), written as the receipt writes it (how). A needed tie's line is on
// every receipt of its kind: no line matching it means the wording changed and the tie no
// longer checks anything, which is reported too.
type tie struct {
	re    *regexp.Regexp
	paths []string
	how   string // "code": verbatim (a list joined with ", "); "pct": fraction as %.1f%%; "f1": %.1f; "num": at the printed decimals
	need  bool
	// plan says, for a needed tie, which plans' receipts have its line: "" every plan,
	// "fixed" those without adaptive repetitions, "adaptive" those with (plan.adaptive).
	plan string
}

// ties by the plan's schema (study.json's plan.schema). Each group is one value; code spans
// are matched by their content.
var capacityTies = []tie{
	{regexp.MustCompile("^- Server slots: `([^`]*)`\\.$"), []string{"plan.slots"}, "code", true, ""},
	{regexp.MustCompile("^- Simultaneous clients: `([^`]*)`\\.$"), []string{"plan.clients"}, "code", false, ""},
	{regexp.MustCompile("^- Simultaneous clients equal the server slots \\(the diagonal\\); arms vary `([^`]*)`\\.$"), []string{"plan.arm_axis"}, "code", false, ""},
	{regexp.MustCompile("^- Context is held at `([^`]*)` tokens per server slot"), []string{"plan.ctx_per_slot"}, "code", true, ""},
	{regexp.MustCompile("^- Every load request uses the checksummed fixed prompt plan \\(`([^`]*)`\\), `([^`]*)` output tokens .*seed `([^`]*)`; `([^`]*)` warmups are sent and discarded and `([^`]*)` measured requests"),
		[]string{"plan.prompt_plan.sha256", "plan.n_predict", "plan.seed", "plan.warmups", "plan.measured"}, "code", true, ""},
	{regexp.MustCompile("^- Gate limits: observed-p95 TTFT at most (\\S+) ms and E2E at most (\\S+) ms in every pass"),
		[]string{"plan.limits.ttft_ms_p95_max", "plan.limits.e2e_ms_p95_max"}, "f1", true, ""},
	{regexp.MustCompile("completion rate at least (\\S+%), generation-rate spread at most (\\S+%), observed-p95 E2E spread at most (\\S+%), peak RSS"),
		[]string{"plan.limits.completion_rate_min", "plan.limits.generation_rate_spread_max", "plan.limits.e2e_p95_spread_max"}, "pct", true, ""},
	{regexp.MustCompile("peak RSS at most (\\S+) MiB\\.$"), []string{"plan.limits.peak_rss_mib_max"}, "f1", true, ""},
}

var throughputTies = []tie{
	{regexp.MustCompile("^- Depths `([^`]*)`; prompt `([^`]*)` tokens; generation `([^`]*)` tokens; `([^`]*)` repetitions per test\\.$"),
		[]string{"plan.axes.depths", "plan.axes.n_prompt", "plan.axes.n_gen", "plan.axes.reps"}, "code", true, "fixed"},
	{regexp.MustCompile("^- Depths `([^`]*)`; prompt `([^`]*)` tokens; generation `([^`]*)` tokens; adaptive repetitions: `([^`]*)` to `([^`]*)` per test, in chunks \\(one llama-bench process each: the first `([^`]*)` repetitions, each later one `([^`]*)`\\)"),
		[]string{"plan.axes.depths", "plan.axes.n_prompt", "plan.axes.n_gen", "plan.adaptive.min_reps", "plan.adaptive.max_reps", "plan.adaptive.min_reps", "plan.adaptive.chunk_reps"}, "code", true, "adaptive"},
	{regexp.MustCompile("^- Held fixed: batch `([^`]*)`, micro-batch `([^`]*)`, flash attention `([^`]*)`, KV cache `[^`]*`, GPU layers `([^`]*)`"),
		[]string{"plan.axes.batch", "plan.axes.ubatch", "plan.axes.flash_attn", "plan.axes.ngl"}, "code", true, ""},
	{regexp.MustCompile("^- Held fixed: .*, threads `([^`]*)`"), []string{"plan.axes.threads"}, "code", false, ""},
	{regexp.MustCompile("^- Legs: split `([^`]*)`:"), []string{"plan.split"}, "code", true, ""},
	{regexp.MustCompile("^- CV gates: tg (\\S+%), pp at depth (\\S+%), pp at d0 (\\S+%);"),
		[]string{"plan.gates.cv_tg", "plan.gates.cv_pp_depth", "plan.gates.cv_pp_d0"}, "pct", true, "fixed"},
	{regexp.MustCompile("^- Canary: `([^`]*)`, a short bench \\(prompt `([^`]*)`, generation `([^`]*)`\\)"),
		[]string{"plan.canary.model", "plan.canary.n_prompt", "plan.canary.n_gen"}, "code", false, ""},
	{regexp.MustCompile("^- Canary: .* falls more than (\\S+%) below the baseline"), []string{"plan.canary.max_drop"}, "pct", false, ""},
	{regexp.MustCompile("^- Repeatability: leg `([^`]*)` again at `([^`]*)`\\.$"), []string{"plan.repeatability.leg", "plan.repeatability.at"}, "code", false, ""},
	{regexp.MustCompile("^- Memory bandwidth: (\\S+) GB/s entered in the plan"), []string{"plan.bandwidth.gbs"}, "num", false, ""},
}

var tiesBySchema = map[string][]tie{
	"sparkbench.capacity/v1":    capacityTies,
	"sparkbench.concurrency/v1": capacityTies,
	"sparkbench.throughput/v1":  throughputTies,
}

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	numListRE  = regexp.MustCompile(`^-?\d+(?:\.\d+)?(?:, -?\d+(?:\.\d+)?)*$`)
)

// methodology checks the receipt's Methodology section: every number written in a code span
// there (warmups, measured requests, n_predict, seed, slots, depths, …, which Numbers leaves
// out with the other code) must be in study.json; and each line a tie knows must print the
// very field it names (a warmup count that equals some other number of the study is still
// caught).
func methodology(md []byte, tree any, have func(tok string, d int, pct bool) bool, texts map[string]bool) []string {
	s := string(md)
	start := strings.Index(s, "\n## Methodology\n")
	if start < 0 {
		return nil
	}
	sec := s[start+len("\n## Methodology\n"):]
	if end := strings.Index(sec, "\n## "); end >= 0 {
		sec = sec[:end]
	}
	lines := strings.Split(sec, "\n")
	var problems []string
	for _, m := range codeSpanRE.FindAllStringSubmatch(sec, -1) {
		if !numListRE.MatchString(m[1]) {
			continue
		}
		for _, n := range strings.Split(m[1], ", ") {
			d := 0
			if i := strings.IndexByte(n, '.'); i >= 0 {
				d = len(n) - i - 1
			}
			if !have(n, d, false) && !texts[strings.TrimPrefix(n, "-")] {
				problems = append(problems, fmt.Sprintf("Methodology: %q (in `%s`) is not in study.json", n, m[1]))
			}
		}
	}
	schema, _ := lookup(tree, "plan.schema")
	name, _ := schema.(string)
	for _, t := range tiesBySchema[name] {
		matched := false
		for _, l := range lines {
			g := t.re.FindStringSubmatch(l)
			if g == nil {
				continue
			}
			matched = true
			for i, path := range t.paths {
				v, ok := lookup(tree, path)
				if want := render(v, ok, t.how, g[i+1]); strings.TrimSpace(g[i+1]) != want {
					problems = append(problems, fmt.Sprintf("Methodology: %q where study.json's %s gives %q", g[i+1], path, want))
				}
			}
		}
		_, adaptive := lookup(tree, "plan.adaptive")
		need := t.need && (t.plan == "" || (t.plan == "adaptive") == adaptive)
		if need && !matched {
			problems = append(problems, fmt.Sprintf("Methodology: no line matches %q: the receipt's wording changed, so its values are no longer tied to study.json (update receipttest's ties)", t.re.String()))
		}
	}
	return problems
}

// lookup follows a dotted path of object keys from study.json's root.
func lookup(tree any, path string) (any, bool) {
	v := tree
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// render writes a study.json value as the receipt's methodology writes it. An absent value is
// Go's omitempty zero: "" for code, 0 for numbers.
func render(v any, ok bool, how, printed string) string {
	if how == "code" {
		if !ok || v == nil {
			return ""
		}
		one := func(x any) string {
			switch y := x.(type) {
			case json.Number:
				return y.String()
			case string:
				return y
			}
			b, _ := json.Marshal(x)
			return string(b)
		}
		if list, isList := v.([]any); isList {
			parts := make([]string, len(list))
			for i, x := range list {
				parts[i] = one(x)
			}
			return strings.Join(parts, ", ")
		}
		return one(v)
	}
	f := 0.0
	if ok {
		n, isNum := v.(json.Number)
		if !isNum {
			return fmt.Sprintf("(not a number: %v)", v)
		}
		var err error
		if f, err = n.Float64(); err != nil {
			return fmt.Sprintf("(not a number: %v)", v)
		}
	}
	switch how {
	case "pct":
		return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
	case "f1":
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	d := 0
	if i := strings.IndexByte(printed, '.'); i >= 0 {
		d = len(printed) - i - 1
	}
	return strconv.FormatFloat(f, 'f', d, 64)
}
