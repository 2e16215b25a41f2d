package canon

import "strconv"

// AppendRowLine appends one leg result row in its canonical serialization, the line a
// throughput bundle writes to legs/NNN-label/rows.jsonl (verbatim, never redacted):
//
//	{"seq":S,"status":ST,"row":ROW}\n
//
// S in decimal, ST the row's status as a canonical JSON string ("result", "flagged",
// "discarded" or ""), ROW the row's JSON exactly as given (llama-bench's fields in its
// order, one line: the caller passes compact JSON). The SHA-256 of a leg's lines, in row
// order, is the rows_sha256 the notebook journals in leg.finished; a bundle's rows.jsonl must
// hash to it.
func AppendRowLine(b []byte, seq int64, status string, row []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"status":`...)
	b = AppendString(b, status)
	b = append(b, `,"row":`...)
	b = append(b, row...)
	return append(b, "}\n"...)
}

// AppendTelemetryLine appends one telemetry sample of a leg in its canonical serialization,
// the line a bundle writes to legs/NNN-label/telemetry.jsonl (verbatim, never redacted):
//
//	{"seq":S,"source":SRC,"t_ns":T,"points":POINTS,"error":ERR}\n
//
// S and T (the sample's time on the leg's clock, ns) in decimal, SRC and ERR canonical JSON
// strings, POINTS the readings' JSON exactly as the notebook stored it (one line). The SHA-256
// of a leg's lines, in seq order, is the telemetry_sha256 the notebook journals in
// leg.finished for a leg with samples.
func AppendTelemetryLine(b []byte, seq int64, source string, tNs int64, points []byte, errText string) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"source":`...)
	b = AppendString(b, source)
	b = append(b, `,"t_ns":`...)
	b = strconv.AppendInt(b, tNs, 10)
	b = append(b, `,"points":`...)
	b = append(b, points...)
	b = append(b, `,"error":`...)
	b = AppendString(b, errText)
	return append(b, "}\n"...)
}
