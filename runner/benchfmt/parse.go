package benchfmt

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"

	"sparkbench/runner/jsonlex"
)

// Format is one of llama-bench's -o output formats.
type Format string

// The formats ParseFile reads.
const (
	FormatJSONL Format = "jsonl"
	FormatJSON  Format = "json"
	FormatCSV   Format = "csv"
	FormatMD    Format = "md"
	FormatSQL   Format = "sql"
)

// ParseError is a refusal with the place it happened: file:line[:col]: message.
type ParseError struct {
	File string
	Line int // 1-based; 0 when the problem is the file as a whole
	Col  int // 1-based byte column; 0 when unknown
	Msg  string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("<input>")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// ParseJSONLLine parses one line of `llama-bench -o jsonl` (one result object). Leading and
// trailing whitespace, including the \r a pty adds, is ignored. A *ParseError (Line 0) with the
// column is returned for malformed input.
func ParseJSONLLine(line []byte) (Result, error) {
	s := scanner{Lexer: jsonlex.Lexer{Data: line}}
	var r Result
	err := s.parseLine(&r)
	return r, err
}

// Parser parses jsonl lines of one stream, sharing repeated strings (model, build, CPU …)
// between rows so a live leg allocates little per row. The zero value is ready to use; a
// Parser is not safe for concurrent use.
type Parser struct {
	intern map[string]string
}

// ParseLine is ParseJSONLLine with string interning.
func (p *Parser) ParseLine(line []byte) (Result, error) {
	if p.intern == nil {
		p.intern = make(map[string]string, 32)
	}
	s := scanner{Lexer: jsonlex.Lexer{Data: line}, intern: p.intern}
	var r Result
	err := s.parseLine(&r)
	return r, err
}

func (s *scanner) parseLine(r *Result) error {
	if err := s.parseObject(r); err != nil {
		return lineErr(err, s.Data)
	}
	s.SkipSpace()
	if s.Pos != len(s.Data) {
		return lineErr(s.errf("unexpected %s after the result object", s.describe()), s.Data)
	}
	return nil
}

func lineErr(err error, b []byte) error {
	var oe *offsetError
	if errors.As(err, &oe) {
		return &ParseError{Col: oe.off + 1, Msg: oe.msg}
	}
	return &ParseError{Msg: err.Error()}
}

// ParseFile reads a whole file of llama-bench output and says which format it was.
//
// The format is recognised from the content (a file name extension only breaks ties): a JSON
// array is -o json, objects one per line are -o jsonl, a header line of llama-bench field
// names separated by commas is -o csv, CREATE TABLE / INSERT INTO statements are -o sql (the
// table named test or llama_bench), and pipe tables with test and t/s columns (or n_prompt,
// n_gen and t/s, as in 2023) are -o md, also pasted as a "> " blockquote or copied from a
// rendered page without outer pipes. Lines of llama.cpp's own logging (`name: message`,
// "Device 0: …", as in a captured stderr) between jsonl rows, sql statements and md table
// rows are skipped; text outside md tables is ignored. A fork's split prompt/generation rates
// (avg_prompt_ts, avg_gen_ts) stand in for avg_ts, see foldSplitRates. Anything else is
// refused with a *ParseError naming the file and line, and no rows are returned.
func ParseFile(name string, data []byte) ([]Result, Format, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	format, err := sniff(name, data)
	if err != nil {
		return nil, "", err
	}
	var rows []Result
	switch format {
	case FormatJSONL:
		rows, err = parseJSONLFile(name, data)
	case FormatJSON:
		rows, err = parseJSONFile(name, data)
	case FormatCSV:
		rows, err = parseCSVFile(name, data)
	case FormatMD:
		rows, err = parseMDFile(name, data)
	case FormatSQL:
		rows, err = parseSQLFile(name, data)
	}
	if err == nil {
		for i := range rows {
			foldSplitRates(&rows[i])
		}
	}
	if err != nil {
		return nil, format, err
	}
	if len(rows) == 0 {
		return nil, format, &ParseError{File: name, Msg: fmt.Sprintf("no llama-bench results in this %s file", format)}
	}
	return rows, format, nil
}

// sniff decides the format from the first significant line.
func sniff(name string, data []byte) (Format, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", &ParseError{File: name, Line: 1, Msg: "empty file: expected llama-bench output (-o jsonl, json, csv, sql or md)"}
	}
	hasPipeTable := false
	firstOther := 0
	var prev []byte // the previous non-blank line
	for lineNo, line := range numberedLines(data) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		if firstOther == 0 && isSQLStart(t) {
			return FormatSQL, nil
		}
		if q := bytes.TrimSpace(unquote(t)); len(q) > 0 && (q[0] == '|' || isBareSeparator(prev, q)) {
			hasPipeTable = true
		}
		prev = t
		switch t[0] {
		case '[':
			if firstOther == 0 {
				return FormatJSON, nil
			}
		case '{':
			if firstOther == 0 {
				return FormatJSONL, nil
			}
		case '|':
			hasPipeTable = true
		}
		if hasPipeTable {
			break
		}
		if firstOther == 0 && isCSVHeader(t) {
			return FormatCSV, nil
		}
		if isLogLine(t) {
			continue
		}
		if firstOther == 0 {
			firstOther = lineNo
		}
	}
	if hasPipeTable {
		return FormatMD, nil
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown":
		return FormatMD, nil
	}
	if firstOther == 0 {
		firstOther = 1
	}
	return "", &ParseError{File: name, Line: firstOther,
		Msg: "not llama-bench output: expected -o jsonl (one {…} per line), -o json ([…]), -o csv (a header of field names), -o sql (CREATE TABLE, INSERT INTO) or -o md (a | table |)"}
}

// isBareSeparator says whether t is the separator row of a table without outer pipes whose
// header is prev ("model | … | t/s" over "-- | … | --").
func isBareSeparator(prev, t []byte) bool {
	if prev == nil || bytes.IndexByte(t, '|') < 0 {
		return false
	}
	sep := splitRow(string(t))
	return len(sep) > 1 && isSeparatorRow(sep) && len(sep) == len(splitRow(string(bytes.TrimSpace(unquote(prev)))))
}

// numberedLines yields data's lines, numbered from 1, each without its "\n" or "\r\n".
func numberedLines(data []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		no := 0
		for rest := data; len(rest) > 0; {
			var line []byte
			line, rest = nextLine(rest)
			no++
			if !yield(no, line) {
				return
			}
		}
	}
}

// nextLine splits off one line (without its \n or \r\n).
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		line, rest = b, nil
	} else {
		line, rest = b[:i], b[i+1:]
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, rest
}

// isLogLine recognises llama.cpp's log lines (`ggml_backend_load_best: …`,
// `llama-bench: benchmark 1/4: starting`, `~llama_context: …`) and progress dots.
func isLogLine(t []byte) bool {
	if len(t) > 0 && t[0] == '~' {
		t = t[1:]
	}
	if len(t) == 0 {
		return false
	}
	if bytes.Count(t, []byte(".")) == len(t) {
		return true
	}
	if isDeviceLine(t) {
		return true
	}
	i := 0
	for i < len(t) {
		c := t[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-' || c == '.' || i > 0 && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	return i > 0 && i < len(t) && t[i] == ':'
}

// isDeviceLine recognises the device list ggml's CUDA, ROCm and MUSA backends print at start
// ("  Device 0: NVIDIA GeForce RTX 4080, compute capability 8.9, VMM: yes").
func isDeviceLine(t []byte) bool {
	rest, ok := bytes.CutPrefix(t, []byte("Device "))
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && i < len(rest) && rest[i] == ':'
}

func parseJSONLFile(name string, data []byte) ([]Result, error) {
	var rows []Result
	p := Parser{}
	for lineNo, line := range numberedLines(data) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		if t[0] != '{' {
			if isLogLine(t) {
				continue
			}
			return nil, &ParseError{File: name, Line: lineNo, Col: 1 + bytes.Index(line, t[:1]),
				Msg: "expected a jsonl result object ({…}) or a llama.cpp log line"}
		}
		r, err := p.ParseLine(line)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				pe.File, pe.Line = name, lineNo
				return nil, pe
			}
			return nil, &ParseError{File: name, Line: lineNo, Msg: err.Error()}
		}
		r.Line = lineNo
		rows = append(rows, r)
	}
	return rows, nil
}

func parseJSONFile(name string, data []byte) ([]Result, error) {
	s := scanner{Lexer: jsonlex.Lexer{Data: data}, intern: make(map[string]string, 32)}
	fail := func(err error) error {
		off := s.Pos
		msg := err.Error()
		var oe *offsetError
		if errors.As(err, &oe) {
			off, msg = oe.off, oe.msg
		}
		line, col := lineCol(data, off)
		return &ParseError{File: name, Line: line, Col: col, Msg: msg}
	}
	s.SkipSpace()
	if s.Peek() != '[' {
		return nil, fail(s.errf("expected '[' to start the -o json array, found %s", s.describe()))
	}
	s.Pos++
	var rows []Result
	for more := s.listOpen(); more; {
		s.SkipSpace()
		start := s.Pos
		var r Result
		if err := s.parseObject(&r); err != nil {
			return nil, fail(err)
		}
		r.Line, _ = lineCol(data, start)
		rows = append(rows, r)
		var err error
		if more, err = s.listNext("", "after a result"); err != nil {
			return nil, fail(err)
		}
	}
	s.SkipSpace()
	if s.Pos != len(data) {
		return nil, fail(s.errf("unexpected %s after the -o json array", s.describe()))
	}
	return rows, nil
}

// lineCol converts a byte offset to a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
