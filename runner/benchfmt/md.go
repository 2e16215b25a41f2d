package benchfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Markdown tables: llama-bench's own (-o md: model, size, params, backend, the columns of
// every non-default parameter, test, t/s) and hand-written ones in a lab log's style, either
// long (a test column: "pp512 @ d8192", and a t/s column: "561.10 ± 6.78") or wide (one column
// per test, header "pp512 @ d8192", cells "561.10 ± 6.78"). Tables without any test column are
// someone else's table and are skipped; text outside tables is ignored.

// mdAliases maps md column headers (lower case) to fields: llama-bench's display names
// (ngl, sm, fa, …) and the plain field names.
var mdAliases = func() map[string]Field {
	m := map[string]Field{
		"model":   FModelType,
		"size":    FModelSize,
		"params":  FModelNParams,
		"backend": FBackends,
		"be":      FBackends,
		"ngl":     FNGPULayers,
		"ncmoe":   FNCPUMoE,
		"threads": FNThreads,
		"th":      FNThreads,
		"mg":      FMainGPU,
		"sm":      FSplitMode,
		"nkvo":    FNoKVOffload,
		"fa":      FFlashAttn,
		"dev":     FDevices,
		"ts":      FTensorSplit,
		"ot":      FTensorBuftOverrides,
		"embd":    FEmbeddings,
		"nopo":    FNoOpOffload,
		"noh":     FNoHost,
		"lm":      FLoadMode,
		"lzm":     FLazyMode,
		"fitt":    FFitTarget,
		"fitc":    FFitMinCtx,
		"ctk":     FTypeK,
		"ctv":     FTypeV,
		"b":       FNBatch,
		"ub":      FNUbatch,
	}
	for f := Field(0); f < NumFields; f++ {
		if _, ok := m[fields[f].name]; !ok {
			m[fields[f].name] = f
		}
	}
	return m
}()

func isRateHeader(h string) bool {
	switch h {
	case "t/s", "tok/s", "tokens/s", "t/s (mean ± sd)", "avg_ts":
		return true
	}
	return false
}

type mdLine struct {
	no   int
	text string // without the line end, trimmed
}

func parseMDFile(name string, data []byte) ([]Result, error) {
	lines := mdLines(data)
	intern := map[string]string{}
	var rows []Result
	emptyHeader := 0   // the first benchmark table's header line that had no rows
	batchedHeader := 0 // the first llama-batched-bench table's header line
	consumed := 0      // lines before this belong to an earlier table or its footer
	for i := 0; i < len(lines); {
		outer := strings.HasPrefix(lines[i].text, "|")
		if !outer && !isBareTableHeader(lines, i) {
			i++
			continue
		}
		tl, end := collectMDTable(lines, i, outer)
		got, err := parseMDTable(name, tl, intern)
		if err != nil {
			return nil, err
		}
		if got == nil && emptyHeader == 0 && isBenchHeader(splitRow(tl[0].text)) {
			emptyHeader = tl[0].no
		}
		if batchedHeader == 0 && isBatchedBenchHeader(splitRow(tl[0].text)) {
			batchedHeader = tl[0].no
		}
		// llama-bench prints "build: <commit> (<number>)" after a blank line; a wrapper
		// script or a paste may show it before the table instead.
		footer := -1
		for j := end; j < len(lines) && j <= end+2; j++ {
			if lines[j].text == "" {
				continue
			}
			if _, _, ok := parseBuildFooter(lines[j].text); ok {
				footer = j
			}
			break
		}
		if footer < 0 {
			for j := i - 1; j >= consumed && j >= i-3; j-- {
				if lines[j].text == "" {
					continue
				}
				if _, _, ok := parseBuildFooter(lines[j].text); ok {
					footer = j
				}
				break
			}
		}
		if footer >= 0 {
			commit, number, _ := parseBuildFooter(lines[footer].text)
			for k := range got {
				got[k].BuildCommit = commit
				got[k].Known = got[k].Known.With(FBuildCommit)
				if number >= 0 {
					got[k].BuildNumber = number
					got[k].Known = got[k].Known.With(FBuildNumber)
				}
			}
			if footer >= end {
				end = footer + 1
			}
		}
		rows = append(rows, got...)
		i, consumed = end, end
	}
	if len(rows) == 0 && emptyHeader == 0 && batchedHeader > 0 {
		return nil, &ParseError{File: name, Line: batchedHeader,
			Msg: "a llama-batched-bench table (PP, TG, B, N_KV, S_PP t/s …), not llama-bench output: read it with ParseBatchedFile (sparkbench import stores it as batched-bench rows)"}
	}
	if len(rows) == 0 && emptyHeader > 0 {
		return nil, &ParseError{File: name, Line: emptyHeader,
			Msg: "a llama-bench table header with no result rows after it (the output ends, or the run failed, before the first test finished)"}
	}
	return rows, nil
}

// unquote drops a Markdown blockquote prefix ("> ", repeated for nested quotes), as when
// llama-bench output is pasted into a reply that quotes it.
func unquote(l []byte) []byte {
	t := bytes.TrimLeft(l, " ")
	if len(t) == 0 || t[0] != '>' {
		return l
	}
	for len(t) > 0 && t[0] == '>' {
		t = bytes.TrimPrefix(t[1:], []byte(" "))
	}
	return t
}

// isBareTableHeader recognises a table without outer pipes (as GitHub's rendered view copies
// it: "model | size | … | t/s" over "-- | -- | …"): a line with a pipe over a separator row
// of as many cells.
func isBareTableHeader(lines []mdLine, i int) bool {
	if i+1 >= len(lines) || !strings.Contains(lines[i].text, "|") {
		return false
	}
	sep := splitRow(lines[i+1].text)
	return len(sep) > 1 && isSeparatorRow(sep) && len(sep) == len(splitRow(lines[i].text))
}

// isTableRow says whether a line continues a table: it starts with a pipe, or (a table
// without outer pipes) holds one.
func isTableRow(t string, outer bool) bool {
	if outer {
		return strings.HasPrefix(t, "|")
	}
	return t != "" && strings.Contains(t, "|")
}

// collectMDTable gathers the table starting at lines[start] and returns its lines and the
// index after it. llama.cpp log lines between the rows (llama-bench -v prints them between
// the header and each row) are skipped when the table goes on after them; a new header
// (a row over a separator) is a new table.
func collectMDTable(lines []mdLine, start int, outer bool) ([]mdLine, int) {
	tl := []mdLine{lines[start]}
	end := start + 1
	for end < len(lines) {
		if isTableRow(lines[end].text, outer) {
			tl = append(tl, lines[end])
			end++
			continue
		}
		j := end
		for j < len(lines) && lines[j].text != "" && !isTableRow(lines[j].text, outer) && isLogLine([]byte(lines[j].text)) {
			j++
		}
		if j == end || j >= len(lines) || !isTableRow(lines[j].text, outer) || len(tl) < 2 ||
			isSeparatorRow(splitRow(lines[j].text)) || j+1 < len(lines) && isSeparatorRow(splitRow(lines[j+1].text)) {
			break
		}
		end = j
	}
	return tl, end
}

// isBatchedBenchHeader recognises llama-batched-bench's table: | PP | TG | B | N_KV | T_PP s | S_PP t/s | ….
func isBatchedBenchHeader(header []string) bool {
	return len(header) >= 4 && header[0] == "PP" && header[1] == "TG" && header[2] == "B" && header[3] == "N_KV"
}

// isBenchHeader says whether a header row is one of a llama-bench table (one whose rows
// parseMDTable reads).
func isBenchHeader(header []string) bool {
	for _, h := range header {
		lh := strings.ToLower(cleanCell(h))
		if lh == "test" || isRateHeader(lh) {
			return true
		}
	}
	return false
}

// parseBuildFooter reads llama-bench's "build: 067de937 (6789)" line.
func parseBuildFooter(t string) (commit string, number int64, ok bool) {
	rest, found := strings.CutPrefix(t, "build:")
	if !found {
		return "", 0, false
	}
	rest = strings.TrimSpace(rest)
	number = -1
	if open := strings.LastIndexByte(rest, '('); open >= 0 && strings.HasSuffix(rest, ")") {
		if n, err := strconv.ParseInt(strings.TrimSpace(rest[open+1:len(rest)-1]), 10, 64); err == nil {
			number = n
			rest = strings.TrimSpace(rest[:open])
		}
	}
	if rest == "" {
		return "", 0, false
	}
	return rest, number, true
}

// splitRow splits "| a | b |" into trimmed cells; "\|" is a literal pipe.
func splitRow(t string) []string {
	t = strings.TrimSpace(t)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, `\|`) {
		t = t[:len(t)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == '\\' && i+1 < len(t) && t[i+1] == '|' {
			cur.WriteByte('|')
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
	return append(cells, strings.TrimSpace(cur.String()))
}

func isSeparatorRow(cells []string) bool {
	if len(cells) == 0 {
		return false
	}
	for _, c := range cells {
		c = strings.TrimSpace(c)
		c = strings.TrimPrefix(c, ":")
		c = strings.TrimSuffix(c, ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

// cleanCell removes markdown emphasis and code marks around a cell's text.
func cleanCell(c string) string {
	c = strings.TrimSpace(c)
	for _, m := range []string{"**", "__", "`", "*", "_"} {
		if len(c) > 2*len(m) && strings.HasPrefix(c, m) && strings.HasSuffix(c, m) {
			c = strings.TrimSpace(c[len(m) : len(c)-len(m)])
		}
	}
	return c
}

type mdColumn struct {
	header string
	field  Field
	known  bool
	test   bool  // the "test" column (long form)
	rate   bool  // the "t/s" column (long form)
	wide   bool  // a column whose header is a test name (wide form)
	nP, nG int64 // wide form: the test of this column
	nD     int64
}

func parseMDTable(name string, tl []mdLine, intern map[string]string) ([]Result, error) {
	header := splitRow(tl[0].text)
	cols := make([]mdColumn, len(header))
	hasTest, hasRate, hasWide := false, false, false
	for i, h := range header {
		h = cleanCell(h)
		lh := strings.ToLower(h)
		c := mdColumn{header: h}
		switch {
		case lh == "test":
			c.test, hasTest = true, true
		case isRateHeader(lh):
			c.rate, hasRate = true, true
		default:
			if f, ok := mdAliases[lh]; ok {
				c.field, c.known = f, true
			} else if p, g, d, err := ParseTestName(wideHeader(h)); err == nil {
				c.wide, hasWide = true, true
				c.nP, c.nG, c.nD = p, g, d
			}
		}
		cols[i] = c
	}
	if !hasTest && !hasRate && !hasWide {
		return nil, nil // not a benchmark table
	}
	if hasTest && !hasRate {
		return nil, &ParseError{File: name, Line: tl[0].no, Msg: "table has a test column but no t/s column: no rates to import"}
	}
	if hasRate && !hasTest && hasShapeColumns(cols) {
		// The 2023 tables: n_prompt and n_gen columns instead of a test column.
		hasTest = true
	}
	if hasRate && !hasTest {
		return nil, &ParseError{File: name, Line: tl[0].no, Msg: "table has a t/s column but no test column: cannot tell which test each rate belongs to"}
	}
	if len(tl) < 2 || !isSeparatorRow(splitRow(tl[1].text)) {
		line := tl[0].no + 1
		return nil, &ParseError{File: name, Line: line, Msg: "a table header must be followed by a separator row like | --- | --: |"}
	}
	if len(splitRow(tl[1].text)) != len(header) {
		return nil, &ParseError{File: name, Line: tl[1].no, Msg: fmt.Sprintf("separator row has %d cells, header has %d", len(splitRow(tl[1].text)), len(header))}
	}
	var out []Result
	for _, l := range tl[2:] {
		cells := splitRow(l.text)
		if len(cells) != len(header) {
			return nil, &ParseError{File: name, Line: l.no, Msg: fmt.Sprintf("row has %d cells, the table header has %d", len(cells), len(header))}
		}
		var base Result
		base.Line = l.no
		for i, c := range cols {
			if !c.known {
				continue
			}
			if err := setMDCell(&base, c, cleanCell(cells[i]), intern); err != nil {
				return nil, &ParseError{File: name, Line: l.no, Col: cellCol(l.text, i), Msg: err.Error()}
			}
		}
		for i, c := range cols {
			if c.known || c.test || c.rate || c.wide {
				continue
			}
			if base.Extra == nil {
				base.Extra = map[string]json.RawMessage{}
			}
			base.Extra[c.header] = json.RawMessage(appendJSONString(nil, cleanCell(cells[i])))
		}
		if hasTest {
			r := base
			for i, c := range cols {
				cell := cleanCell(cells[i])
				switch {
				case c.test:
					p, g, d, err := ParseTestName(cell)
					if err != nil {
						return nil, &ParseError{File: name, Line: l.no, Col: cellCol(l.text, i), Msg: err.Error()}
					}
					r.setInt(FNPrompt, p)
					r.setInt(FNGen, g)
					r.setInt(FNDepth, d)
				case c.rate:
					if err := setRate(&r, cell); err != nil {
						return nil, &ParseError{File: name, Line: l.no, Col: cellCol(l.text, i), Msg: err.Error()}
					}
				}
			}
			if !r.Known.Has(FAvgTs) {
				continue // "-" or "n/a": no measurement in this row
			}
			out = append(out, r)
			continue
		}
		for i, c := range cols {
			if !c.wide {
				continue
			}
			r := base
			if r.Extra != nil { // each row owns its map
				r.Extra = make(map[string]json.RawMessage, len(base.Extra))
				for k, v := range base.Extra {
					r.Extra[k] = v
				}
			}
			r.setInt(FNPrompt, c.nP)
			r.setInt(FNGen, c.nG)
			r.setInt(FNDepth, c.nD)
			if err := setRate(&r, cleanCell(cells[i])); err != nil {
				return nil, &ParseError{File: name, Line: l.no, Col: cellCol(l.text, i), Msg: fmt.Sprintf("%s: %v", c.header, err)}
			}
			if r.Known.Has(FAvgTs) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// hasShapeColumns says whether a table gives each test's shape in n_prompt and n_gen columns
// (llama-bench before the test column, 2023).
func hasShapeColumns(cols []mdColumn) bool {
	var p, g bool
	for _, c := range cols {
		p = p || c.known && c.field == FNPrompt
		g = g || c.known && c.field == FNGen
	}
	return p && g
}

// cellCol is the 1-based column where cell i of a row starts.
func cellCol(row string, i int) int {
	n := -1
	for j := 0; j < len(row); j++ {
		if row[j] == '|' && (j == 0 || row[j-1] != '\\') {
			n++
			if n == i {
				return j + 2
			}
		}
	}
	return 0
}

var sizeUnits = map[string]float64{
	"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

var countUnits = map[string]float64{"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}

// mdLines splits a Markdown paste into its lines, numbered from 1, trimmed and with a leading
// "> " quote removed.
func mdLines(data []byte) []mdLine {
	var lines []mdLine
	for no, l := range numberedLines(data) {
		lines = append(lines, mdLine{no, string(bytes.TrimSpace(unquote(l)))})
	}
	return lines
}
