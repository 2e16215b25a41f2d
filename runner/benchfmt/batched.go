package benchfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// llama-batched-bench: one row per (PP, TG, B) of prompt tokens per sequence, generated tokens
// per sequence and parallel sequences, measured once (no repetitions). Its Markdown output is a
// settings line and a table:
//
//	llama_batched_bench: n_kv_max = 1024, n_batch = 2048, n_ubatch = 512, flash_attn = -1, is_pp_shared = 0, …
//
//	|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
//	|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
//	|    32 |      8 |    1 |     40 |    0.002 | 14035.09 |    0.000 | 18348.62 |    0.003 | 14727.54 |
//
// (the settings line begins "main:" in builds of 2023–2025; the 2023 README shows the table
// alone). With --output-format jsonl each row is one object carrying the settings too:
// {"n_kv_max": 1024, …, "pp": 32, "tg": 8, "pl": 1, "n_kv": 40, "t_pp": 0.002395,
// "speed_pp": 13361.168945, "t_tg": …, "speed_tg": …, "t": …, "speed": …}.

// The formats ParseBatchedFile reads.
const (
	FormatBatchedMD    Format = "batched-md"
	FormatBatchedJSONL Format = "batched-jsonl"
)

// BatchedSettings are the settings llama-batched-bench prints once (md) or on every row
// (jsonl). A nil field was not printed by the source.
type BatchedSettings struct {
	NKVMax        *int64 `json:"n_kv_max,omitempty"`
	NBatch        *int64 `json:"n_batch,omitempty"`
	NUbatch       *int64 `json:"n_ubatch,omitempty"`
	FlashAttn     *int64 `json:"flash_attn,omitempty"` // -1 auto, 0 off, 1 on
	IsPPShared    *int64 `json:"is_pp_shared,omitempty"`
	IsTGSeparate  *int64 `json:"is_tg_separate,omitempty"`
	NGPULayers    *int64 `json:"n_gpu_layers,omitempty"`
	NThreads      *int64 `json:"n_threads,omitempty"`
	NThreadsBatch *int64 `json:"n_threads_batch,omitempty"`
}

// BatchedSettingNames are the settings' names as llama-batched-bench prints them, in the
// order of BatchedSettings.Fields.
var BatchedSettingNames = []string{"n_kv_max", "n_batch", "n_ubatch", "flash_attn", "is_pp_shared",
	"is_tg_separate", "n_gpu_layers", "n_threads", "n_threads_batch"}

// Fields are pointers to the settings in the order of BatchedSettingNames.
func (s *BatchedSettings) Fields() []**int64 {
	return []**int64{&s.NKVMax, &s.NBatch, &s.NUbatch, &s.FlashAttn, &s.IsPPShared, &s.IsTGSeparate,
		&s.NGPULayers, &s.NThreads, &s.NThreadsBatch}
}

func (s *BatchedSettings) field(name string) **int64 {
	for i, n := range BatchedSettingNames {
		if n == name {
			return s.Fields()[i]
		}
	}
	return nil
}

// BatchedResult is one llama-batched-bench row. Times are seconds, rates tokens per second
// as the tool computed them: S_PP = B×PP / T_PP (PP / T_PP when the prompt is shared),
// S_TG = B×TG / T_TG, S = N_KV / T.
type BatchedResult struct {
	BatchedSettings
	PP  int64 `json:"pp"`   // prompt tokens per sequence
	TG  int64 `json:"tg"`   // generated tokens per sequence
	B   int64 `json:"pl"`   // parallel sequences (the tool's "pl", the table's "B")
	NKV int64 `json:"n_kv"` // KV cells used: B×(PP+TG), or PP+B×TG with a shared prompt

	TPP float64 `json:"t_pp"`
	SPP float64 `json:"speed_pp"`
	TTG float64 `json:"t_tg"`
	STG float64 `json:"speed_tg"`
	T   float64 `json:"t"`
	S   float64 `json:"speed"`

	// Extra holds settings or fields this build does not know (a newer tool), as text.
	Extra map[string]string `json:"extra,omitempty"`
	// Line is the row's line in its source (1-based; 0 when unknown).
	Line int `json:"-"`
}

// Label names the row's test: "pp512+tg32 B8".
func (r *BatchedResult) Label() string {
	return "pp" + strconv.FormatInt(r.PP, 10) + "+tg" + strconv.FormatInt(r.TG, 10) + " B" + strconv.FormatInt(r.B, 10)
}

// GenRate is the generated tokens over the whole measurement, B×TG / T (tokens per second):
// generation with the prompts' processing included, the batched-bench counterpart of a
// server cell's generation rate. 0 when T is 0.
func (r *BatchedResult) GenRate() float64 {
	if !(r.T > 0) {
		return 0
	}
	return float64(r.B*r.TG) / r.T
}

// Check refuses a row that cannot be a llama-batched-bench measurement: counts below their
// minimum, an N_KV the tool could not have printed for PP, TG and B, a time or rate that is
// negative or not finite, or a rate of zero where tokens were processed.
func (r *BatchedResult) Check() error {
	switch {
	case r.PP < 0 || r.TG < 0:
		return fmt.Errorf("PP %d and TG %d must not be negative", r.PP, r.TG)
	case r.B < 1:
		return fmt.Errorf("B (parallel sequences) is %d, must be at least 1", r.B)
	case r.PP+r.TG == 0:
		return errors.New("PP and TG are both 0: the row measured nothing")
	}
	sep, shared := r.B*(r.PP+r.TG), r.PP+r.B*r.TG
	if r.NKV != sep && r.NKV != shared {
		return fmt.Errorf("N_KV %d is neither B×(PP+TG) = %d nor PP+B×TG = %d (shared prompt): the columns are not llama-batched-bench's", r.NKV, sep, shared)
	}
	for _, v := range []struct {
		name   string
		x      float64
		tokens int64
		rate   bool
	}{{"T_PP", r.TPP, r.PP, false}, {"S_PP", r.SPP, r.PP, true}, {"T_TG", r.TTG, r.TG, false},
		{"S_TG", r.STG, r.TG, true}, {"T", r.T, r.NKV, false}, {"S", r.S, r.NKV, true}} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x < 0 {
			return fmt.Errorf("%s is %v: times and rates must be finite and not negative", v.name, v.x)
		}
		if v.rate && v.tokens > 0 && v.x == 0 {
			return fmt.Errorf("%s is 0 with %d tokens processed: not a measured rate", v.name, v.tokens)
		}
	}
	return nil
}

// IsBatchedOutput says whether data is llama-batched-bench output rather than llama-bench's:
// its first jsonl object has the batched fields (pl, n_kv, speed_pp), or it has a batched-bench
// table (| PP | TG | B | N_KV | …) and no llama-bench table. (A document holding both kinds of
// tables is llama-bench output whose batched-bench tables ParseFile skips.)
func IsBatchedOutput(data []byte) bool {
	batched, bench := false, false
	for _, l := range numberedLines(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))) {
		t := bytes.TrimSpace(unquote(l))
		if len(t) == 0 {
			continue
		}
		if t[0] == '{' {
			var m map[string]json.RawMessage
			if json.Unmarshal(t, &m) != nil {
				return false
			}
			_, pl := m["pl"]
			_, kv := m["n_kv"]
			_, spp := m["speed_pp"]
			return pl && kv && spp
		}
		if !bytes.Contains(t, []byte("|")) {
			continue
		}
		cells := splitRow(string(t))
		switch {
		case isBatchedBenchHeader(cells):
			batched = true
		case isBenchHeader(cells):
			bench = true
		}
	}
	return batched && !bench
}

// ParseBatchedFile reads a whole file of llama-batched-bench output: Markdown tables (each
// taking the settings of the nearest settings line above it; the 2023 table without one) or
// --output-format jsonl. Text outside the tables and llama.cpp's log lines are skipped. A
// malformed row or a file without any row is refused with a *ParseError at its line.
func ParseBatchedFile(name string, data []byte) ([]BatchedResult, Format, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for _, l := range numberedLines(data) {
		t := bytes.TrimSpace(unquote(l))
		if len(t) == 0 {
			continue
		}
		if t[0] == '{' {
			rows, err := parseBatchedJSONL(name, data)
			return rows, FormatBatchedJSONL, err
		}
		if bytes.HasPrefix(t, []byte("|")) {
			break
		}
	}
	rows, err := parseBatchedMD(name, data, false)
	return rows, FormatBatchedMD, err
}

// ParseBatchedTables reads the llama-batched-bench tables of a document that holds llama-bench
// tables too (a published report, whose llama-bench rows ParseFile reads): each row with the
// settings line above its table in the same section, and in Extra["md_heading"] the nearest
// Markdown heading above the table (the report's section, which names the model it measured;
// the rows do not). A document without such a table gives no rows and no error; a malformed
// row, or a header without rows, is refused with a *ParseError at its line.
func ParseBatchedTables(name string, data []byte) ([]BatchedResult, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	has := false
	for _, l := range mdLines(data) {
		if strings.HasPrefix(l.text, "|") && isBatchedBenchHeader(splitRow(l.text)) {
			has = true
			break
		}
	}
	if !has {
		return nil, nil
	}
	return parseBatchedMD(name, data, true)
}

// mdHeading is a Markdown heading's text ("## ggml-org/gpt-oss-20b-GGUF" → the name), false
// for any other line.
func mdHeading(t string) (string, bool) {
	level := len(t) - len(strings.TrimLeft(t, "#"))
	if level == 0 || level > 6 || len(t) == level || t[level] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[level:]), "#")), true
}

func parseBatchedJSONL(name string, data []byte) ([]BatchedResult, error) {
	var rows []BatchedResult
	for no, l := range numberedLines(data) {
		t := bytes.TrimSpace(l)
		if len(t) == 0 || isLogLine(t) {
			continue
		}
		r, err := ParseBatchedJSONLLine(t)
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				pe.File, pe.Line = name, no
				return nil, pe
			}
			return nil, &ParseError{File: name, Line: no, Msg: err.Error()}
		}
		r.Line = no
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, &ParseError{File: name, Line: 1, Msg: "no llama-batched-bench rows in the file"}
	}
	return rows, nil
}

// ParseBatchedJSONLLine parses one line of `llama-batched-bench --output-format jsonl` and
// checks it (BatchedResult.Check). Errors are *ParseError with Line 0 (and the column for
// malformed JSON).
func ParseBatchedJSONLLine(line []byte) (BatchedResult, error) {
	var r BatchedResult
	line = bytes.TrimSpace(line)
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return r, &ParseError{Col: int(se.Offset), Msg: "not a JSON object: " + se.Error()}
		}
		return r, &ParseError{Msg: "not a JSON object: " + err.Error()}
	}
	if dec.More() || dec.InputOffset() != int64(len(line)) {
		return r, &ParseError{Col: int(dec.InputOffset()) + 1, Msg: "unexpected text after the row object"}
	}
	if m == nil {
		return r, &ParseError{Msg: "null is not a llama-batched-bench row"}
	}
	for _, k := range []string{"pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed"} {
		if _, ok := m[k]; !ok {
			return r, &ParseError{Msg: fmt.Sprintf("no %q: not a llama-batched-bench row (expected pp, tg, pl, n_kv, t_pp, speed_pp, t_tg, speed_tg, t, speed)", k)}
		}
	}
	ints := map[string]*int64{"pp": &r.PP, "tg": &r.TG, "pl": &r.B, "n_kv": &r.NKV}
	floats := map[string]*float64{"t_pp": &r.TPP, "speed_pp": &r.SPP, "t_tg": &r.TTG, "speed_tg": &r.STG, "t": &r.T, "speed": &r.S}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := m[k]
		if p, ok := ints[k]; ok {
			v, err := jsonInt(raw)
			if err != nil {
				return r, &ParseError{Msg: fmt.Sprintf("%q: %v", k, err)}
			}
			*p = v
			continue
		}
		if p, ok := floats[k]; ok {
			var n json.Number
			if err := json.Unmarshal(raw, &n); err != nil {
				return r, &ParseError{Msg: fmt.Sprintf("%q is %s, expected a number", k, raw)}
			}
			v, err := n.Float64()
			if err != nil {
				return r, &ParseError{Msg: fmt.Sprintf("%q is %s, expected a number", k, raw)}
			}
			*p = v
			continue
		}
		if f := r.field(k); f != nil {
			v, err := jsonInt(raw)
			if err != nil {
				return r, &ParseError{Msg: fmt.Sprintf("%q: %v", k, err)}
			}
			*f = &v
			continue
		}
		if r.Extra == nil {
			r.Extra = map[string]string{}
		}
		r.Extra[k] = string(raw)
	}
	if err := r.Check(); err != nil {
		return r, &ParseError{Msg: err.Error()}
	}
	return r, nil
}

func jsonInt(raw json.RawMessage) (int64, error) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("%s is not an integer", raw)
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer", raw)
	}
	return v, nil
}

// ParseBatchedSettings reads the settings line ("main: n_kv_max = 2048, n_batch = 2048, …",
// "llama_batched_bench: …"): every "name = integer" pair after the first colon. ok is false
// for any other line.
func ParseBatchedSettings(line string) (s BatchedSettings, extra map[string]string, ok bool) {
	_, rest, found := strings.Cut(strings.TrimSpace(line), ":")
	if !found || !strings.Contains(rest, "n_kv_max") {
		return s, nil, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, found := strings.Cut(part, "=")
		if !found {
			return BatchedSettings{}, nil, false
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if f := s.field(k); f != nil {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return BatchedSettings{}, nil, false
			}
			*f = &n
			continue
		}
		if k == "" {
			return BatchedSettings{}, nil, false
		}
		if extra == nil {
			extra = map[string]string{}
		}
		extra[k] = v // e.g. mmq (2023)
	}
	return s, extra, s.NKVMax != nil
}

// batchedColumns are the table's headers and where each goes.
var batchedColumns = []string{"PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s"}

// parseBatchedMD reads the batched-bench tables of Markdown output. With headings (a document
// of sections, as a published report), each row records the heading its table stood under
// (Extra["md_heading"]), and a section's settings line is not carried into the next section.
func parseBatchedMD(name string, data []byte, headings bool) ([]BatchedResult, error) {
	lines := mdLines(data)
	var rows []BatchedResult
	var settings BatchedSettings
	var settingsExtra map[string]string
	heading, fenced := "", false
	for i := 0; i < len(lines); i++ {
		t := lines[i].text
		if headings {
			if strings.HasPrefix(t, "```") {
				fenced = !fenced // a code block's "# …" lines are not headings
				continue
			}
			if h, ok := mdHeading(t); ok && !fenced {
				heading, settings, settingsExtra = h, BatchedSettings{}, nil
				continue
			}
		}
		if s, extra, ok := ParseBatchedSettings(t); ok {
			settings, settingsExtra = s, extra
			continue
		}
		if !strings.HasPrefix(t, "|") || !isBatchedBenchHeader(splitRow(t)) {
			continue
		}
		header := splitRow(t)
		col := make([]int, len(batchedColumns)) // column index of each known header
		for k := range col {
			col[k] = -1
		}
		for j, h := range header {
			h = strings.TrimSpace(h)
			for k, want := range batchedColumns {
				if h == want {
					col[k] = j
				}
			}
		}
		for k, c := range col {
			if c < 0 {
				return nil, &ParseError{File: name, Line: lines[i].no,
					Msg: fmt.Sprintf("llama-batched-bench table without a %q column (expected %s)", batchedColumns[k], strings.Join(batchedColumns, ", "))}
			}
		}
		got := 0
		j := i + 1
		for ; j < len(lines); j++ {
			lt := lines[j].text
			if !strings.HasPrefix(lt, "|") {
				if lt != "" && isLogLine([]byte(lt)) && j+1 < len(lines) && strings.HasPrefix(lines[j+1].text, "|") {
					continue // a log line between the rows (stderr under a pty)
				}
				break
			}
			cells := splitRow(lt)
			if isSeparatorRow(cells) {
				continue
			}
			if len(cells) != len(header) {
				return nil, &ParseError{File: name, Line: lines[j].no,
					Msg: fmt.Sprintf("llama-batched-bench row has %d cells, the header has %d", len(cells), len(header))}
			}
			r := BatchedResult{BatchedSettings: settings, Line: lines[j].no}
			if len(settingsExtra) > 0 || heading != "" {
				r.Extra = make(map[string]string, len(settingsExtra)+1)
				for k, v := range settingsExtra {
					r.Extra[k] = v
				}
				if heading != "" {
					r.Extra["md_heading"] = heading
				}
			}
			ints := []*int64{&r.PP, &r.TG, &r.B, &r.NKV}
			floats := []*float64{&r.TPP, &r.SPP, &r.TTG, &r.STG, &r.T, &r.S}
			for k, c := range col {
				cell := strings.TrimSpace(cells[c])
				if k < len(ints) {
					v, err := strconv.ParseInt(cell, 10, 64)
					if err != nil {
						return nil, &ParseError{File: name, Line: lines[j].no, Msg: fmt.Sprintf("%s %q is not an integer", batchedColumns[k], cell)}
					}
					*ints[k] = v
					continue
				}
				v, err := strconv.ParseFloat(cell, 64)
				if err != nil {
					return nil, &ParseError{File: name, Line: lines[j].no, Msg: fmt.Sprintf("%s %q is not a number", batchedColumns[k], cell)}
				}
				*floats[k-len(ints)] = v
			}
			if err := r.Check(); err != nil {
				return nil, &ParseError{File: name, Line: lines[j].no, Msg: err.Error()}
			}
			rows = append(rows, r)
			got++
		}
		if got == 0 {
			return nil, &ParseError{File: name, Line: lines[i].no,
				Msg: "a llama-batched-bench table header with no rows after it (the output ends, or the run failed, before the first measurement)"}
		}
		i = j - 1
	}
	if len(rows) == 0 {
		return nil, &ParseError{File: name, Line: 1, Msg: "no llama-batched-bench table (| PP | TG | B | N_KV | …) or jsonl rows in the file"}
	}
	return rows, nil
}
