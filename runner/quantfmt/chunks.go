package quantfmt

// ChunkStream reads llama-perplexity's default chunk output, "[1]260.8183,[2]248.4277,…",
// from raw output bytes as they arrive. The tool prints one "[i]value," record per chunk
// with no line end until the last, so a reader of whole lines sees them only at the end;
// ChunkStream gives each record as soon as its comma arrives, whatever the read boundaries.
// Line numbers count LF bytes (1-based). Other text is skipped; state is bounded (a record
// longer than 64 bytes is dropped). The zero value is ready; not safe for concurrent use.
type ChunkStream struct {
	line  int
	inRec bool
	rec   []byte
}

const maxRecord = 64

// Feed consumes b and returns the chunks whose records it completed.
func (s *ChunkStream) Feed(b []byte) []Chunk {
	if s.line == 0 {
		s.line = 1
	}
	var out []Chunk
	for _, c := range b {
		switch {
		case c == '\n':
			s.line++
			s.inRec, s.rec = false, s.rec[:0]
		case c == '[':
			s.inRec, s.rec = true, s.rec[:0]
		case !s.inRec:
		case c == ',':
			if ch, ok := parseRecord(s.rec, s.line); ok {
				out = append(out, ch)
			}
			s.inRec, s.rec = false, s.rec[:0]
		case len(s.rec) >= maxRecord:
			s.inRec, s.rec = false, s.rec[:0]
		default:
			s.rec = append(s.rec, c)
		}
	}
	return out
}

// parseRecord reads "12]345.678" (the part between '[' and ',').
func parseRecord(rec []byte, line int) (Chunk, bool) {
	for i, c := range rec {
		if c != ']' {
			continue
		}
		idx := atoi(string(rec[:i]))
		v, ok := parseNum(string(rec[i+1:]))
		if idx <= 0 || !ok {
			return Chunk{}, false
		}
		return Chunk{Index: idx, PPL: Figure{Value: v, Line: line}}, true
	}
	return Chunk{}, false
}
