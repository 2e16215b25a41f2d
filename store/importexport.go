package store

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/fsread"
)

// DefaultImportStudy receives imports when no study is named.
const DefaultImportStudy = "imported"

// ImportFile is one file of llama-bench output.
type ImportFile struct {
	Name string // as the user gave it; recorded in the provenance
	Data []byte
}

// ImportRequest imports files into a throughput study (created with status imported if it
// does not exist).
type ImportRequest struct {
	Study string // name; "" = DefaultImportStudy
	Files []ImportFile
}

// ImportResult says what happened to one file.
type ImportResult struct {
	File    string
	Format  benchfmt.Format
	SHA256  string
	Rows    int
	Partial int // rows that lack fields (md and csv carry fewer than jsonl)
	// Batched is how many of Rows are llama-batched-bench rows, BatchedTests their tests
	// ("pp512+tg32 B=1,2,4"); Tests lists the llama-bench tests, then these.
	Batched      int
	BatchedTests []string
	Tests        []string
	StudyID      int64
	LegID        int64
	Duplicate    bool // the same bytes were already imported into this study (as LegID)
}

// MaxImportBytes bounds one imported file: it is held in memory with its rows while the
// import runs (a million-row -o jsonl file is about 1.5 GB, a real leg's a few KB).
const MaxImportBytes = 256 << 20

// ReadImportFile reads one file of llama-bench output for ImportBenchOutput. Only a regular
// file (or a link to one) of at most MaxImportBytes is read: a named pipe, socket or device
// is refused without blocking (*fsread.NotRegularError), a longer file with a
// *fsread.TooLargeError.
func ReadImportFile(path string) (ImportFile, error) {
	data, err := fsread.ReadFile(path, MaxImportBytes, "llama-bench output")
	if err != nil {
		return ImportFile{}, err
	}
	return ImportFile{Name: path, Data: data}, nil
}

// ParsedImport is one file parsed for import: llama-bench rows, or llama-batched-bench rows
// (Format batched-md or batched-jsonl), or both for a Markdown document holding both kinds of
// tables (Format md: a published report; its batched-bench rows name their section's heading).
type ParsedImport struct {
	Format  benchfmt.Format
	Bench   []benchfmt.Result
	Batched []benchfmt.BatchedResult
}

// Rows is the number of rows of either kind.
func (p ParsedImport) Rows() int { return len(p.Bench) + len(p.Batched) }

// ParseImport parses one file as ImportBenchOutput does. llama-batched-bench output
// (benchfmt.IsBatchedOutput: its Markdown tables or jsonl) goes to benchfmt.ParseBatchedFile,
// each row checked by BatchedResult.Check; anything else is llama-bench output, see
// ParseImportFile, and a Markdown document's llama-batched-bench tables beside its llama-bench
// tables are read too (benchfmt.ParseBatchedTables), never dropped. The first refusal is a
// *benchfmt.ParseError at its line, and no rows are returned.
func ParseImport(name string, data []byte) (ParsedImport, error) {
	if benchfmt.IsBatchedOutput(data) {
		rows, format, err := benchfmt.ParseBatchedFile(name, data)
		if err != nil {
			return ParsedImport{Format: format}, err
		}
		return ParsedImport{Format: format, Batched: rows}, nil
	}
	rows, format, err := parseBenchImport(name, data)
	if err != nil || format != benchfmt.FormatMD {
		return ParsedImport{Format: format, Bench: rows}, err
	}
	batched, err := benchfmt.ParseBatchedTables(name, data)
	if err != nil {
		return ParsedImport{Format: format}, err
	}
	return ParsedImport{Format: format, Bench: rows, Batched: batched}, nil
}

// ParseImportFile parses one file as ImportBenchOutput does: benchfmt.ParseFile, then every
// row checked as a live leg checks it (benchfmt.Result.Check: the fields that identify a
// result, rates > 0, counts and times >= 0). The first row refused is a *benchfmt.ParseError
// at its line, and no rows are returned. A llama-batched-bench file yields its format
// (batched-md, batched-jsonl) and no llama-bench rows: its rows come from ParseImport.
func ParseImportFile(name string, data []byte) ([]benchfmt.Result, benchfmt.Format, error) {
	p, err := ParseImport(name, data)
	return p.Bench, p.Format, err
}

func parseBenchImport(name string, data []byte) ([]benchfmt.Result, benchfmt.Format, error) {
	rows, format, err := benchfmt.ParseFile(name, data)
	if err != nil {
		return nil, format, err
	}
	for i := range rows {
		r := &rows[i]
		if err := r.Check(); err != nil {
			msg := err.Error()
			if _, ok := r.Extra["row"]; ok && len(r.Extra) <= 3 && !r.Known.Has(benchfmt.FAvgTs) {
				if _, ok := r.Extra["seq"]; ok {
					msg = `a receipt bundle's rows.jsonl line ({"seq","status","row"}), not llama-bench output: ` +
						"import llama-bench's own output (-o jsonl, json, csv, sql or md); a bundle is checked with sparkbench verify"
				}
			}
			return nil, format, &benchfmt.ParseError{File: name, Line: r.Line, Msg: msg}
		}
	}
	return rows, format, nil
}

// ImportBenchOutput parses every file first (-o jsonl, json, csv, sql or md, see benchfmt; every
// row checked, see ParseImportFile) and imports nothing if any file or row is refused: the
// error is a *benchfmt.ParseError naming the file and line. Each file becomes one leg of kind and state "imported" whose provenance is the file
// name and SHA-256; all files go in one transaction.
func (n *Notebook) ImportBenchOutput(ctx context.Context, req ImportRequest) ([]ImportResult, error) {
	if n.readOnly {
		return nil, ErrReadOnly
	}
	if req.Study == "" {
		req.Study = DefaultImportStudy
	}
	if len(req.Files) == 0 {
		return nil, errors.New("import: no files")
	}
	files := make([]ParsedImport, len(req.Files))
	results := make([]ImportResult, len(req.Files))
	for i, f := range req.Files {
		p, err := ParseImport(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		files[i] = p
		res := ImportResult{File: f.Name, Format: p.Format, SHA256: SHA256Hex(f.Data), Rows: p.Rows()}
		seen := map[string]bool{}
		for _, r := range p.Bench {
			if !r.Complete() {
				res.Partial++
			}
			if t := r.TestName(); !seen[t] {
				seen[t] = true
				res.Tests = append(res.Tests, t)
			}
		}
		res.Batched, res.BatchedTests = len(p.Batched), batchedTests(p.Batched)
		res.Tests = append(res.Tests, res.BatchedTests...)
		results[i] = res
	}
	err := n.write(ctx, func(tx *sql.Tx) error {
		var studyID int64
		var kind string
		err := tx.QueryRow("SELECT id, kind FROM studies WHERE name = ?", req.Study).Scan(&studyID, &kind)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if studyID, err = n.createStudyTx(tx, Study{Name: req.Study, Kind: StudyThroughput, Status: StatusImported,
				Description: "llama-bench output imported from files"}); err != nil {
				return err
			}
		case err != nil:
			return err
		case kind != StudyThroughput:
			return fmt.Errorf("study %q is a %s study: llama-bench rows go into a throughput study (pass another --study)", req.Study, kind)
		}
		for i := range files {
			res := &results[i]
			res.StudyID = studyID
			var existing int64
			err := tx.QueryRow("SELECT id FROM legs WHERE study_id = ? AND kind = 'imported' AND json_extract(provenance_json, '$.sha256') = ?", studyID, res.SHA256).Scan(&existing)
			if err == nil {
				res.LegID, res.Duplicate = existing, true
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			for j := 0; j < i; j++ { // the same bytes twice on one command line
				if results[j].SHA256 == res.SHA256 && !results[j].Duplicate {
					res.LegID, res.Duplicate = results[j].LegID, true
				}
			}
			if res.Duplicate {
				continue
			}
			if res.LegID, err = n.importLegTx(ctx, tx, studyID, req.Files[i], files[i], res.SHA256); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

func (n *Notebook) importLegTx(ctx context.Context, tx *sql.Tx, studyID int64, f ImportFile, p ParsedImport, sum string) (int64, error) {
	rows, format := p.Bench, p.Format
	now := n.nowText()
	started := now
	for _, r := range rows { // the earliest test_time is when the leg ran
		if t, err := time.Parse(time.RFC3339, r.TestTime); err == nil && FormatTime(t) < started {
			started = FormatTime(t)
		}
	}
	pv := map[string]any{"file": f.Name, "name": filepath.Base(f.Name), "sha256": sum, "bytes": len(f.Data),
		"format": string(format), "rows": p.Rows(), "imported_at": now}
	if len(rows) > 0 && len(p.Batched) > 0 { // a document with both kinds of tables
		pv["bench_rows"], pv["batched_rows"] = len(rows), len(p.Batched)
	}
	prov, err := CanonicalJSON(pv)
	if err != nil {
		return 0, err
	}
	res, err := tx.Exec(`INSERT INTO legs (study_id, label, kind, state, started_at, provenance_json, fingerprint)
		VALUES (?, ?, 'imported', 'running', ?, ?, ?)`, studyID, filepath.Base(f.Name), started, string(prov), sum)
	if err != nil {
		return 0, fmt.Errorf("import %s: %w", f.Name, err)
	}
	legID, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	pend := make([]pendingBench, len(rows))
	var buf []byte
	for i := range rows {
		if pend[i], buf, err = newPendingBench(legID, studyID, int64(i), &rows[i], buf); err != nil {
			return 0, fmt.Errorf("import %s: %w", f.Name, err)
		}
	}
	if err := insertBench(tx, n.w.cfgCache, pend); err != nil {
		return 0, fmt.Errorf("import %s: %w", f.Name, err)
	}
	if err := insertBatchedTx(tx, legID, studyID, 0, BatchedModel{}, p.Batched); err != nil {
		return 0, fmt.Errorf("import %s: %w", f.Name, err)
	}
	if _, err := n.finishLegTx(ctx, tx, legID, LegImported, LegOutcome{Class: ClassOK, Reason: "imported from " + f.Name}); err != nil {
		return 0, err
	}
	return legID, nil
}

// Export formats and row kinds.
const (
	ExportCSV      = "csv"
	ExportJSON     = "json"
	ExportBench    = "bench"
	ExportRequests = "requests"
)

// ExportOptions choose the format (csv or json) and the rows (bench: llama-bench rows;
// requests: server request records).
type ExportOptions struct {
	Format string
	Rows   string
}

// BenchExportColumns are the columns of a bench export, in order (see docs/notebook.md):
// the leg columns, then every llama-bench field under its jsonl name, then missing and extra.
var BenchExportColumns = func() []string {
	cols := []string{"study", "leg_id", "leg_label", "leg_state", "leg_class", "seq", "test", "kind"}
	for f := benchfmt.Field(0); f < benchfmt.NumFields; f++ {
		cols = append(cols, f.Name())
	}
	return append(cols, "missing", "extra")
}()

// RequestExportColumns are the columns of a requests export, in order.
var RequestExportColumns = []string{"study", "leg_id", "leg_label", "leg_state", "leg_class", "seq", "candidate", "arm", "slots",
	"clients", "pass", "phase", "req_index", "client_index", "t_send_ns", "t_first_ns", "t_last_ns", "t_end_ns", "ttft_ms",
	"e2e_ms", "itl_ms", "http_status", "n_predict", "tokens_predicted", "tokens_evaluated", "stop_type", "prompt_ms",
	"predicted_ms", "predicted_per_second", "error", "extra"}

// ExportStudy writes a study's rows (every leg, with its state and class) and returns how many.
func (n *Notebook) ExportStudy(ctx context.Context, w io.Writer, studyID int64, o ExportOptions) (int, error) {
	if o.Format == "" {
		o.Format = ExportCSV
	}
	if o.Rows == "" {
		o.Rows = ExportBench
	}
	if o.Format != ExportCSV && o.Format != ExportJSON {
		return 0, fmt.Errorf("export format %q: use csv or json", o.Format)
	}
	study, err := n.Study(ctx, studyID)
	if err != nil {
		return 0, err
	}
	var cols []string
	var next func() ([]any, error)
	var closeRows func()
	switch o.Rows {
	case ExportBench:
		cols = BenchExportColumns
		next, closeRows, err = n.benchExportRows(ctx, study)
	case ExportRequests:
		cols = RequestExportColumns
		next, closeRows, err = n.requestExportRows(ctx, study)
	default:
		return 0, fmt.Errorf("export rows %q: use bench or requests", o.Rows)
	}
	if err != nil {
		return 0, err
	}
	defer closeRows()
	bw := bufio.NewWriter(w)
	count := 0
	writeRow, finish := exportJSONWriter(bw, cols, &count)
	if o.Format == ExportCSV {
		if writeRow, finish, err = exportCSVWriter(bw, cols); err != nil {
			return 0, err
		}
	}
	for {
		vals, err := next()
		if err != nil {
			return count, err
		}
		if vals == nil {
			break
		}
		if err := writeRow(vals); err != nil {
			return count, err
		}
		count++
	}
	if err := finish(); err != nil {
		return count, err
	}
	return count, bw.Flush()
}

// exportCSVWriter writes the header, then a record per row; finish flushes the CSV writer.
func exportCSVWriter(bw *bufio.Writer, cols []string) (writeRow func([]any) error, finish func() error, err error) {
	cw := csv.NewWriter(bw)
	if err := cw.Write(cols); err != nil {
		return nil, nil, err
	}
	rec := make([]string, len(cols))
	writeRow = func(vals []any) error {
		for i, v := range vals {
			rec[i] = csvCell(v)
		}
		return cw.Write(rec)
	}
	finish = func() error {
		cw.Flush()
		return cw.Error()
	}
	return writeRow, finish, nil
}

// exportJSONWriter writes a JSON array of one object per row, a row a line (*count: the rows
// written so far); finish closes the array. Nothing is written before the first call.
func exportJSONWriter(bw *bufio.Writer, cols []string, count *int) (writeRow func([]any) error, finish func() error) {
	var line []byte
	writeRow = func(vals []any) error {
		if *count == 0 {
			bw.WriteString("[")
		} else {
			bw.WriteString(",")
		}
		line = append(line[:0], "\n{"...)
		for i, v := range vals {
			if i > 0 {
				line = append(line, ',')
			}
			line = appendCanonicalString(line, cols[i])
			line = append(line, ':')
			line = appendJSONValue(line, v)
		}
		line = append(line, '}')
		_, err := bw.Write(line)
		return err
	}
	finish = func() error {
		if *count == 0 {
			bw.WriteString("[")
		}
		_, err := bw.WriteString("\n]\n")
		return err
	}
	return writeRow, finish
}

// jsonText marks a value that is already JSON (sample arrays, extra).
type jsonText string

func csvCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case jsonText:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return string(appendFloat(nil, x))
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}

func appendJSONValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendCanonicalString(b, x)
	case jsonText:
		return append(b, x...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendFloat(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	}
	return appendCanonicalString(b, fmt.Sprint(v))
}

func (n *Notebook) benchExportRows(ctx context.Context, study Study) (func() ([]any, error), func(), error) {
	var fieldCols []string
	for f := benchfmt.Field(0); f < benchfmt.NumFields; f++ {
		fieldCols = append(fieldCols, "b."+f.Name())
	}
	rows, err := n.rdb.QueryContext(ctx, `SELECT b.leg_id, l.label, l.state, l.class, b.seq, `+strings.Join(fieldCols, ", ")+`,
		b.extra_json, b.known_mask, b.source_line FROM bench_rows b JOIN legs l ON l.id = b.leg_id
		WHERE b.leg_id IN (SELECT id FROM legs WHERE study_id = ?) ORDER BY b.leg_id, b.seq`, study.ID)
	if err != nil {
		return nil, nil, err
	}
	nf := int(benchfmt.NumFields)
	scanNext := rowScanner(rows, 5+nf+3)
	out := make([]any, len(BenchExportColumns))
	next := func() ([]any, error) {
		scan, err := scanNext()
		if scan == nil || err != nil {
			return nil, err
		}
		r, err := resultFromRow(scan[5:])
		if err != nil {
			return nil, err
		}
		out[0], out[1], out[2], out[3], out[4], out[5] = study.Name, scan[0], scan[1], scan[2], scan[3], scan[4]
		out[6], out[7] = r.TestName(), string(r.Kind())
		for f := benchfmt.Field(0); f < benchfmt.NumFields; f++ {
			v, known := r.Value(f)
			switch {
			case !known:
				out[8+int(f)] = nil
			case f == benchfmt.FSamplesNs:
				out[8+int(f)] = jsonText(appendInts(nil, r.SamplesNs))
			case f == benchfmt.FSamplesTs:
				out[8+int(f)] = jsonText(appendFloats(nil, r.SamplesTs))
			default:
				out[8+int(f)] = v
			}
		}
		var missing []string
		for _, f := range r.Missing() {
			missing = append(missing, f.Name())
		}
		out[8+nf] = strings.Join(missing, " ")
		if x, ok := scan[5+nf].(string); ok && x != "" {
			out[9+nf] = jsonText(x)
		} else {
			out[9+nf] = nil
		}
		return out, nil
	}
	return next, func() { rows.Close() }, nil
}

// rowScanner reads rows of n columns, one at a time, into one slice it reuses: nil (and
// rows.Err()) after the last.
func rowScanner(rows *sql.Rows, n int) func() ([]any, error) {
	scan := make([]any, n)
	ptrs := make([]any, n)
	for i := range scan {
		ptrs[i] = &scan[i]
	}
	return func() ([]any, error) {
		if !rows.Next() {
			return nil, rows.Err()
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		return scan, nil
	}
}

func (n *Notebook) requestExportRows(ctx context.Context, study Study) (func() ([]any, error), func(), error) {
	rows, err := n.rdb.QueryContext(ctx, `SELECT r.leg_id, l.label, l.state, l.class, r.seq, r.candidate, r.arm, r.slots, r.clients,
		r.pass, r.phase, r.req_index, r.client_index, r.t_send_ns, r.t_first_ns, r.t_last_ns, r.t_end_ns,
		(r.t_first_ns - r.t_send_ns) / 1e6, (r.t_end_ns - r.t_send_ns) / 1e6,
		CASE WHEN r.tokens_predicted > 1 AND r.t_last_ns > r.t_first_ns THEN (r.t_last_ns - r.t_first_ns) / 1e6 / (r.tokens_predicted - 1) END,
		r.http_status, r.n_predict, r.tokens_predicted, r.tokens_evaluated, r.stop_type, r.prompt_ms, r.predicted_ms,
		r.predicted_per_second, r.error, r.extra_json
		FROM request_samples r JOIN legs l ON l.id = r.leg_id
		WHERE r.leg_id IN (SELECT id FROM legs WHERE study_id = ?) ORDER BY r.leg_id, r.seq`, study.ID)
	if err != nil {
		return nil, nil, err
	}
	scanNext := rowScanner(rows, len(RequestExportColumns)-1)
	out := make([]any, len(RequestExportColumns))
	next := func() ([]any, error) {
		scan, err := scanNext()
		if scan == nil || err != nil {
			return nil, err
		}
		out[0] = study.Name
		copy(out[1:], scan)
		if x, ok := out[len(out)-1].(string); ok && x != "" {
			out[len(out)-1] = jsonText(x)
		}
		return out, nil
	}
	return next, func() { rows.Close() }, nil
}

// StudyBenchRows reads every bench row of a study (all legs, in timeline order) as Results.
func (n *Notebook) StudyBenchRows(ctx context.Context, studyID int64) ([]benchfmt.Result, error) {
	legs, err := n.LegTimeline(ctx, studyID)
	if err != nil {
		return nil, err
	}
	var out []benchfmt.Result
	for _, l := range legs {
		rows, err := n.BenchRows(ctx, l.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}
