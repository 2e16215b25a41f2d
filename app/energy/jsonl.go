package energy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"sparkbench/app/canon"
	"sparkbench/runner/jsonlex"
	"sparkbench/runner/telemetry"
)

// A telemetry.jsonl file: a throughput bundle's sampled leg and a capacity run's server
// lifetime write their samples one a line (canon.AppendTelemetryLine), in the order recorded.

// SamplesLine is one line of a telemetry.jsonl file.
type SamplesLine struct {
	Seq    int64             `json:"seq"`
	Source string            `json:"source"`
	TNs    int64             `json:"t_ns"`
	Points []telemetry.Point `json:"points"`
	Error  string            `json:"error"`
}

// AppendSamplesJSONL appends samples as telemetry.jsonl lines, numbered from seq.
func AppendSamplesJSONL(b []byte, seq int64, samples []telemetry.Sample) ([]byte, error) {
	for i, s := range samples {
		pts := s.Points
		if pts == nil {
			pts = []telemetry.Point{}
		}
		pj, err := json.Marshal(pts)
		if err != nil {
			return nil, err
		}
		b = canon.AppendTelemetryLine(b, seq+int64(i), s.Source, int64(s.T), pj, s.Err)
	}
	return b, nil
}

// ReadSamplesJSONL reads a telemetry.jsonl file (name is for messages): every line strict,
// numbered from 0 in order.
func ReadSamplesJSONL(name string, data []byte) ([]telemetry.Sample, error) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	var out []telemetry.Sample
	for i, line := range lines {
		var sl SamplesLine
		if e := jsonlex.DecodeStrict(line, &sl); e != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, i+1, e.Err)
		}
		if sl.Seq != int64(i) {
			return nil, fmt.Errorf("%s: line %d: seq %d, want %d (samples in the order recorded from 0)", name, i+1, sl.Seq, i)
		}
		s := telemetry.Sample{Source: sl.Source, T: time.Duration(sl.TNs), Points: sl.Points, Err: sl.Error}
		if len(s.Points) == 0 {
			s.Points = nil
		}
		out = append(out, s)
	}
	return out, nil
}
