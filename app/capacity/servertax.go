package capacity

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/app/canon"
	"sparkbench/runner/benchfmt"
)

// The server tax (docs/domain.md): a candidate's cell generation rate at P = C = B over
// llama-batched-bench's generation rate B×TG / T at the same B, same model and build. The
// batched-bench output is a raw input (--batched CANDIDATE=FILE), fingerprinted and bundled
// like the others.

// FlagBatched is the input role of a llama-batched-bench output file.
const FlagBatched = "--batched"

// RunBatchedDir is the run folder's folder of llama-batched-bench outputs, one per candidate:
// batched/CANDIDATE.txt (capacity run --batched copies them there; the bundle keeps the name).
const RunBatchedDir = "batched"

// RunBatchedFile is a candidate's llama-batched-bench output in a run folder or bundle.
func RunBatchedFile(candidate string) string { return RunBatchedDir + "/" + candidate + ".txt" }

// ServerTaxResult is one candidate's server tax series.
type ServerTaxResult struct {
	// PP and TG are the batched-bench rows' prompt and generated tokens per sequence (one
	// value each in the file).
	PP     int64            `json:"pp"`
	TG     int64            `json:"tg"`
	Format string           `json:"format"` // batched-md or batched-jsonl
	Points []ServerTaxPoint `json:"points"` // B ascending; empty when no B pairs
	// Note says which batched-bench B values were not paired, and why.
	Note string `json:"note,omitempty"`
}

// ServerTaxPoint is the server tax at one B.
type ServerTaxPoint struct {
	B           int     `json:"b"`            // slots = clients = parallel sequences
	ServerRate  float64 `json:"server_rate"`  // the cell P = C = B generation rate (tok/s)
	BatchedRate float64 `json:"batched_rate"` // B×TG / T of the batched-bench row (tok/s)
	Tax         float64 `json:"tax"`          // server_rate / batched_rate
	Line        int     `json:"line"`         // the row's line in the batched-bench file
}

// batchedInput is one candidate's parsed batched-bench file.
type batchedInput struct {
	format benchfmt.Format
	pp, tg int64
	rows   []benchfmt.BatchedResult // B ascending
}

// ReadBatched parses a llama-batched-bench output file (Markdown or jsonl, as the tool prints
// it or `sparkbench batched run` stores it) for the server tax: every row must have the same
// PP and the same TG (one -npp, one -ntg) and each B must appear once. Errors name the file
// and, where one row is at fault, its line.
func ReadBatched(name string, data []byte) (rows []benchfmt.BatchedResult, format benchfmt.Format, err error) {
	b, err := readBatched(name, data)
	if err != nil {
		return nil, "", err
	}
	return b.rows, b.format, nil
}

func readBatched(name string, data []byte) (*batchedInput, error) {
	rows, format, err := benchfmt.ParseBatchedFile(name, data)
	if err != nil {
		return nil, err
	}
	first := rows[0]
	byB := map[int64]int{}
	for _, r := range rows {
		switch {
		case r.PP != first.PP:
			return nil, fmt.Errorf("%s:%d: PP %d, but line %d has PP %d: the server tax pairs one prompt length; run llama-batched-bench with one -npp, the plan's prompt length",
				name, r.Line, r.PP, first.Line, first.PP)
		case r.TG != first.TG:
			return nil, fmt.Errorf("%s:%d: TG %d, but line %d has TG %d: the server tax pairs one generation length; run llama-batched-bench with one -ntg, the plan's n_predict",
				name, r.Line, r.TG, first.Line, first.TG)
		}
		if l, dup := byB[r.B]; dup {
			return nil, fmt.Errorf("%s:%d: B %d again (first at line %d): give one llama-batched-bench run per file", name, r.Line, r.B, l)
		}
		byB[r.B] = r.Line
	}
	slices.SortStableFunc(rows, func(x, y benchfmt.BatchedResult) int { return int(x.B - y.B) })
	return &batchedInput{format: format, pp: first.PP, tg: first.TG, rows: rows}, nil
}

// readBatchedInputs checks every --batched file: a candidate of the plan, a file that parses
// with one PP and one TG. Each is fingerprinted (role "batched", key the candidate).
func (a *assembler) readBatchedInputs() error {
	p := a.p
	a.batched = map[string]*batchedInput{}
	for _, id := range slices.Sorted(maps.Keys(a.in.Batched)) {
		f := a.in.Batched[id]
		if _, ok := p.Candidate(id); !ok {
			return inputErr(FlagBatched, id, "not a candidate of this plan (%s)", candidateIDs(p))
		}
		b, err := readBatched(f.Name, f.Data)
		if err != nil {
			return &InputError{Flag: FlagBatched, Key: id, Err: err}
		}
		a.batched[id] = b
		a.refs = append(a.refs, InputRef{Role: "batched", Key: id, SHA256: canon.SHA256Hex(f.Data), Bytes: len(f.Data)})
	}
	return nil
}

// serverTax pairs a candidate's diagonal cells (P = C = B, with a generation rate) with its
// batched-bench rows by B (nil: no --batched file for it).
func (a *assembler) serverTax(id string, cells []CellResult) *ServerTaxResult {
	b, ok := a.batched[id]
	if !ok {
		return nil
	}
	st := &ServerTaxResult{PP: b.pp, TG: b.tg, Format: string(b.format), Points: []ServerTaxPoint{}}
	var server, batched []analysis.Point
	rows := map[int64]benchfmt.BatchedResult{}
	var unpaired []string
	for _, r := range b.rows {
		c := findCell(cells, int(r.B), int(r.B))
		switch {
		case c == nil:
			unpaired = append(unpaired, fmt.Sprintf("B=%d (no cell P%d/C%d in the study)", r.B, r.B, r.B))
			continue
		case c.GenerationRate == nil:
			unpaired = append(unpaired, fmt.Sprintf("B=%d (P%d/C%d has no generation rate: no completed request)", r.B, r.B, r.B))
			continue
		case !(r.GenRate() > 0):
			unpaired = append(unpaired, fmt.Sprintf("B=%d (line %d: B×TG/T is not positive)", r.B, r.Line))
			continue
		}
		rows[r.B] = r
		server = append(server, analysis.Point{X: float64(r.B), Y: *c.GenerationRate})
		batched = append(batched, analysis.Point{X: float64(r.B), Y: r.GenRate()})
	}
	if len(server) > 0 {
		series, err := analysis.ServerTaxSeries(server, batched)
		if err != nil {
			unpaired = append(unpaired, err.Error())
		}
		for _, pt := range series {
			r := rows[int64(pt.X)]
			c := findCell(cells, int(r.B), int(r.B))
			st.Points = append(st.Points, ServerTaxPoint{B: int(r.B), ServerRate: *c.GenerationRate, BatchedRate: r.GenRate(), Tax: pt.Y, Line: r.Line})
		}
	}
	if len(unpaired) > 0 {
		st.Note = "not paired: " + strings.Join(unpaired, "; ")
	}
	if len(st.Points) == 0 {
		st.Note = strings.TrimSuffix("no B of the batched-bench file has a diagonal cell P = C = B with a rate; "+st.Note, "; ")
	}
	return st
}

// serverTaxDefinition is added to a result's definitions when a candidate has a server tax.
const serverTaxDefinition = "cell generation rate at P = C = B / llama-batched-bench generation rate B×TG / T at the same B (same model and build; prompts included on both sides); 0.80 = the server delivers 80% of the batched engine's throughput"
