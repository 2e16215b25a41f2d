package receipt

import (
	"fmt"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/telemetry"
)

// ThroughputContents is what a throughput bundle's raw files hold, read and cross-checked as
// verify reads them: what `sparkbench import` adds to a notebook.
type ThroughputContents struct {
	Index    *Index
	Notebook NotebookRecord
	Plan     []byte
	Journal  []JournalLine
	Legs     []ThroughputLeg // in folder order
}

// ThroughputLeg is one legs/NNN-label folder.
type ThroughputLeg struct {
	Dir        string
	Record     LegRecord
	Results    []benchfmt.Result // rows.jsonl's rows, in arrival order
	Statuses   []string          // each row's status
	Transcript []byte
	RowsJSONL  []byte
	// Telemetry and TelemetryJSONL are the leg's telemetry.jsonl (nil: not sampled).
	Telemetry      []telemetry.Sample
	TelemetryJSONL []byte
}

// ReadThroughputContents reads a throughput bundle's raw files (any other kind is refused).
func ReadThroughputContents(files Files) (*ThroughputContents, error) {
	ix, err := ReadIndex(files)
	if err != nil {
		return nil, err
	}
	if ix.Kind != KindThroughput {
		return nil, fmt.Errorf("a %s bundle: only throughput bundles are imported as studies so far", ix.Kind)
	}
	tb, err := readThroughput(files, ix)
	if err != nil {
		return nil, err
	}
	c := &ThroughputContents{Index: ix, Notebook: tb.nb, Plan: tb.planJSON, Journal: tb.journal}
	for _, lf := range tb.legs {
		l := ThroughputLeg{Dir: lf.dir, Record: lf.rec, Statuses: lf.statuses, Transcript: lf.transcript, RowsJSONL: lf.rowsJSONL,
			Telemetry: lf.telemetry, TelemetryJSONL: lf.telemetryJSONL}
		for _, r := range lf.rows {
			l.Results = append(l.Results, r.Result)
		}
		c.Legs = append(c.Legs, l)
	}
	return c, nil
}
