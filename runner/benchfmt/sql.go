package benchfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// llama-bench -o sql writes a CREATE TABLE statement and one INSERT per test:
//
//	CREATE TABLE IF NOT EXISTS llama_bench (
//	  build_commit TEXT,
//	  …
//	);
//	INSERT INTO llama_bench (build_commit, …) VALUES ('b1f6a2c4', …);
//
// Builds before mid-2025 name the table "test". Every value is a single-quoted string, even
// for INTEGER and REAL columns. The reader takes the statements as sqlite3 would load them and
// refuses what sqlite3 refuses (an INSERT with more or fewer values than columns, a column
// the CREATE TABLE does not have) at the statement's line.

// isSQLStart recognises the first statement of -o sql.
func isSQLStart(t []byte) bool {
	u := strings.ToUpper(string(t[:min(len(t), 32)]))
	return strings.HasPrefix(u, "CREATE TABLE") || strings.HasPrefix(u, "INSERT INTO")
}

// sqlLexer walks SQL text, keeping the line number.
type sqlLexer struct {
	data []byte
	pos  int
	line int
}

func (l *sqlLexer) skipSpace() {
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		switch {
		case c == '\n':
			l.line++
			l.pos++
		case c == ' ' || c == '\t' || c == '\r':
			l.pos++
		case c == '-' && l.pos+1 < len(l.data) && l.data[l.pos+1] == '-': // -- comment
			for l.pos < len(l.data) && l.data[l.pos] != '\n' {
				l.pos++
			}
		default:
			return
		}
	}
}

// word reads a bare identifier or number ([A-Za-z0-9_.+-]); "" when there is none.
func (l *sqlLexer) word() string {
	l.skipSpace()
	start := l.pos
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '+' || c == '-' {
			l.pos++
			continue
		}
		break
	}
	return string(l.data[start:l.pos])
}

// ident reads an identifier, bare or double-quoted.
func (l *sqlLexer) ident() string {
	l.skipSpace()
	if l.pos < len(l.data) && (l.data[l.pos] == '"' || l.data[l.pos] == '`') {
		q := l.data[l.pos]
		end := bytes.IndexByte(l.data[l.pos+1:], q)
		if end < 0 {
			return ""
		}
		w := string(l.data[l.pos+1 : l.pos+1+end])
		l.pos += end + 2
		return w
	}
	return l.word()
}

func (l *sqlLexer) peek() byte {
	l.skipSpace()
	if l.pos < len(l.data) {
		return l.data[l.pos]
	}
	return 0
}

func (l *sqlLexer) expect(c byte) bool {
	if l.peek() != c {
		return false
	}
	l.pos++
	return true
}

// keywords reads the given keywords in order, case-insensitively.
func (l *sqlLexer) keywords(ws ...string) bool {
	for _, w := range ws {
		if !strings.EqualFold(l.word(), w) {
			return false
		}
	}
	return true
}

func (l *sqlLexer) describe() string {
	l.skipSpace()
	if l.pos >= len(l.data) {
		return "the end of the file"
	}
	end := l.pos + 20
	if end > len(l.data) {
		end = len(l.data)
	}
	s := string(l.data[l.pos:end])
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return fmt.Sprintf("%q", s)
}

// sqlValue is one value of an INSERT: a quoted string, a bare number, or NULL.
type sqlValue struct {
	text string
	null bool
}

func (l *sqlLexer) value() (sqlValue, bool) {
	if l.peek() == '\'' {
		l.pos++
		var b strings.Builder
		for l.pos < len(l.data) {
			c := l.data[l.pos]
			if c == '\'' {
				if l.pos+1 < len(l.data) && l.data[l.pos+1] == '\'' {
					b.WriteByte('\'')
					l.pos += 2
					continue
				}
				l.pos++
				return sqlValue{text: b.String()}, true
			}
			if c == '\n' {
				l.line++
			}
			b.WriteByte(c)
			l.pos++
		}
		return sqlValue{}, false
	}
	w := l.word()
	if w == "" {
		return sqlValue{}, false
	}
	if strings.EqualFold(w, "NULL") {
		return sqlValue{null: true}, true
	}
	return sqlValue{text: w}, true
}

// list reads "( item, item, … )" with read for each item.
func (l *sqlLexer) list(read func() bool) bool {
	if !l.expect('(') {
		return false
	}
	if l.expect(')') {
		return true
	}
	for {
		if !read() {
			return false
		}
		if l.expect(',') {
			continue
		}
		return l.expect(')')
	}
}

// parseSQLFile reads llama-bench's -o sql output (CREATE TABLE, then INSERT rows).
// Long on purpose: a table-driven parser of the statements, one case per token, read top to bottom.
func parseSQLFile(name string, data []byte) ([]Result, error) {
	l := &sqlLexer{data: data, line: 1}
	fail := func(line int, format string, a ...any) error {
		return &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	tables := map[string]map[string]bool{} // CREATE TABLE name -> its columns
	intern := map[string]string{}
	var rows []Result
	for {
		l.skipSpace()
		if l.pos >= len(l.data) {
			break
		}
		line := l.line
		// llama.cpp's log lines (a captured stderr) between the statements are skipped.
		lineEnd := bytes.IndexByte(l.data[l.pos:], '\n')
		if lineEnd < 0 {
			lineEnd = len(l.data) - l.pos
		}
		if text := bytes.TrimSpace(l.data[l.pos : l.pos+lineEnd]); !isSQLStart(text) && isLogLine(text) {
			l.pos += lineEnd
			continue
		}
		save := l.pos
		verb := strings.ToUpper(l.word())
		switch verb {
		case "CREATE":
			if !l.keywords("TABLE") {
				return nil, fail(line, "expected CREATE TABLE: llama-bench -o sql has only CREATE TABLE and INSERT INTO statements")
			}
			table := l.ident()
			if strings.EqualFold(table, "IF") {
				if !l.keywords("NOT", "EXISTS") {
					return nil, fail(line, "expected CREATE TABLE IF NOT EXISTS name (…)")
				}
				table = l.ident()
			}
			if table == "" {
				return nil, fail(line, "CREATE TABLE without a table name")
			}
			cols := map[string]bool{}
			ok := l.list(func() bool {
				c := l.ident()
				if c == "" {
					return false
				}
				cols[c] = true
				for l.peek() != ',' && l.peek() != ')' && l.peek() != 0 { // the column's type
					if l.word() == "" {
						return false
					}
				}
				return true
			})
			if !ok {
				return nil, fail(l.line, "CREATE TABLE %s: expected (column TYPE, …), found %s", table, l.describe())
			}
			tables[table] = cols
		case "INSERT":
			if !l.keywords("INTO") {
				return nil, fail(line, "expected INSERT INTO")
			}
			table := l.ident()
			if table == "" {
				return nil, fail(line, "INSERT INTO without a table name")
			}
			var cols []string
			if !l.list(func() bool {
				c := l.ident()
				cols = append(cols, c)
				return c != ""
			}) {
				return nil, fail(l.line, "INSERT INTO %s: expected (column, …), found %s", table, l.describe())
			}
			if !l.keywords("VALUES") {
				return nil, fail(l.line, "INSERT INTO %s: expected VALUES (…), found %s", table, l.describe())
			}
			var vals []sqlValue
			if !l.list(func() bool {
				v, ok := l.value()
				vals = append(vals, v)
				return ok
			}) {
				return nil, fail(l.line, "INSERT INTO %s: expected ('value', …), found %s", table, l.describe())
			}
			if len(vals) != len(cols) {
				return nil, fail(line, "INSERT INTO %s has %d values for %d columns", table, len(vals), len(cols))
			}
			if known, ok := tables[table]; ok {
				for _, c := range cols {
					if !known[c] {
						return nil, fail(line, "INSERT INTO %s names column %s, which its CREATE TABLE does not have", table, c)
					}
				}
			} else if len(tables) > 0 {
				return nil, fail(line, "INSERT INTO %s: the file creates no table %s", table, table)
			}
			r := Result{Line: line}
			seen := map[string]bool{}
			for i, c := range cols {
				if seen[c] {
					return nil, fail(line, "INSERT INTO %s names column %s twice", table, c)
				}
				seen[c] = true
				v := vals[i]
				if v.null {
					continue
				}
				f, ok := fieldByName[c]
				if !ok {
					if r.Extra == nil {
						r.Extra = map[string]json.RawMessage{}
					}
					r.Extra[c] = json.RawMessage(appendJSONString(nil, v.text))
					continue
				}
				if err := setFromText(&r, f, v.text, intern); err != nil {
					return nil, fail(line, "%v", err)
				}
			}
			rows = append(rows, r)
		default:
			l.pos = save
			return nil, fail(line, "expected CREATE TABLE or INSERT INTO (llama-bench -o sql), found %s", l.describe())
		}
		if !l.expect(';') {
			return nil, fail(l.line, "expected ';' after the %s statement, found %s", verb, l.describe())
		}
	}
	return rows, nil
}
