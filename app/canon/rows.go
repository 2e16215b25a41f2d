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
