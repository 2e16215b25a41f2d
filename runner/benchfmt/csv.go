package benchfmt

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// isCSVHeader recognises llama-bench's -o csv header: field names separated by commas,
// including at least the test shape and the measured rate.
func isCSVHeader(t []byte) bool {
	if bytes.IndexByte(t, ',') < 0 {
		return false
	}
	var hasPrompt, hasRate bool
	for _, c := range bytes.Split(t, []byte(",")) {
		c = bytes.Trim(bytes.TrimSpace(c), `"`)
		switch string(c) {
		case "n_prompt":
			hasPrompt = true
		case "avg_ts", "avg_ns", "avg_prompt_ts", "avg_gen_ts": // the last two: see foldSplitRates
			hasRate = true
		}
	}
	return hasPrompt && hasRate
}

func parseCSVFile(name string, data []byte) ([]Result, error) {
	// Skip llama.cpp log lines before the header (a captured stderr).
	skipped := 0
	start := 0
	for rest := data; len(rest) > 0; {
		line, next := nextLine(rest)
		t := bytes.TrimSpace(line)
		if len(t) > 0 && !isLogLine(t) {
			break
		}
		skipped++
		start += len(rest) - len(next)
		rest = next
	}
	cr := csv.NewReader(bytes.NewReader(data[start:]))
	cr.ReuseRecord = false
	cr.FieldsPerRecord = -1 // counted below, to say how many
	header, err := cr.Read()
	if err != nil {
		return nil, csvErr(name, skipped, err)
	}
	type column struct {
		field Field
		known bool
		name  string
	}
	cols := make([]column, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if seen[h] {
			return nil, &ParseError{File: name, Line: skipped + 1, Msg: fmt.Sprintf("column %q appears twice in the csv header", h)}
		}
		seen[h] = true
		f, ok := fieldByName[h]
		cols[i] = column{field: f, known: ok, name: h}
	}
	if !seen["n_prompt"] || !seen["n_gen"] || !(seen["avg_ts"] || seen["avg_ns"] || seen["avg_prompt_ts"] || seen["avg_gen_ts"]) {
		return nil, &ParseError{File: name, Line: skipped + 1, Msg: "csv header lacks n_prompt, n_gen or avg_ts: not llama-bench -o csv"}
	}
	missingAt := -1
	for i, c := range cols {
		if !c.known && c.name == missingColumn {
			missingAt = i
		}
	}
	intern := map[string]string{}
	var rows []Result
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(name, skipped, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, &ParseError{File: name, Line: skipped + line, Col: 1,
				Msg: fmt.Sprintf("csv: row has %d fields, the header has %d", len(rec), len(header))}
		}
		r := Result{Line: skipped + line}
		for i, v := range rec {
			c := cols[i]
			if !c.known && c.name == missingColumn {
				continue
			}
			if !c.known {
				if r.Extra == nil {
					r.Extra = map[string]json.RawMessage{}
				}
				r.Extra[c.name] = json.RawMessage(appendJSONString(nil, v))
				continue
			}
			if err := setFromText(&r, c.field, v, intern); err != nil {
				l, col := cr.FieldPos(i)
				return nil, &ParseError{File: name, Line: skipped + l, Col: col, Msg: err.Error()}
			}
		}
		if missingAt >= 0 {
			for _, name := range strings.Fields(rec[missingAt]) {
				if f, ok := fieldByName[name]; ok {
					r.clear(f)
				}
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// missingColumn is the column of sparkbench's own csv export that lists the fields the
// original source did not carry (an empty cell cannot tell "unknown" from "empty string").
const missingColumn = "missing"

// clear makes a field unknown again (zero value).
func (r *Result) clear(f Field) {
	switch fields[f].typ {
	case tString:
		r.setString(f, "")
	case tInt:
		r.setInt(f, 0)
	case tBool:
		r.setBool(f, false)
	case tFloat:
		r.setFloat(f, 0)
	case tIntList:
		r.SamplesNs = nil
	case tFloatList:
		r.SamplesTs = nil
	}
	r.Known &^= 1 << f
}

func csvErr(name string, skipped int, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ParseError{File: name, Line: skipped + pe.Line, Col: pe.Column, Msg: "csv: " + pe.Err.Error()}
	}
	return &ParseError{File: name, Line: skipped + 1, Msg: "csv: " + err.Error()}
}

// setFromText sets a known field from its text form (a csv or md cell). An empty cell leaves
// a non-string field unknown.
func setFromText(r *Result, f Field, v string, intern map[string]string) error {
	typ := fields[f].typ
	if typ == tString {
		if iv, ok := commonValues[v]; ok {
			v = iv
		} else if iv, ok := intern[v]; ok {
			v = iv
		} else if len(intern) < maxInterned {
			intern[v] = v
		}
		r.setString(f, v)
		return nil
	}
	t := strings.TrimSpace(v)
	if t == "" {
		return nil
	}
	switch typ {
	case tInt:
		switch strings.ToLower(t) {
		case "true", "on", "yes":
			r.setInt(f, 1)
			return nil
		case "false", "off", "no":
			r.setInt(f, 0)
			return nil
		case "auto":
			if f == FFlashAttn {
				r.setInt(f, -1)
				return nil
			}
		}
		n, err := parseIntToken([]byte(t))
		if err != nil {
			return fmt.Errorf("%s: %v", f.Name(), err)
		}
		r.setInt(f, n)
	case tBool:
		switch strings.ToLower(t) {
		case "1", "true", "yes", "on":
			r.setBool(f, true)
		case "0", "false", "no", "off":
			r.setBool(f, false)
		default:
			return fmt.Errorf("%s: %q is not a boolean (0/1, true/false)", f.Name(), t)
		}
	case tFloat:
		x, err := parseFloatToken([]byte(t))
		if err != nil {
			return fmt.Errorf("%s: %v", f.Name(), err)
		}
		r.setFloat(f, x)
	case tIntList, tFloatList:
		items := splitList(t)
		if typ == tIntList {
			out := make([]int64, 0, len(items))
			for _, it := range items {
				n, err := parseIntToken([]byte(it))
				if err != nil {
					return fmt.Errorf("%s: %v", f.Name(), err)
				}
				out = append(out, n)
			}
			r.SamplesNs = out
		} else {
			out := make([]float64, 0, len(items))
			for _, it := range items {
				x, err := parseFloatToken([]byte(it))
				if err != nil {
					return fmt.Errorf("%s: %v", f.Name(), err)
				}
				out = append(out, x)
			}
			r.SamplesTs = out
		}
		r.Known = r.Known.With(f)
	}
	return nil
}

// splitList reads "[1, 2]", "1;2" or "1 2" into items.
func splitList(t string) []string {
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(t), "["), "]"))
	if t == "" {
		return nil
	}
	return strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
}
