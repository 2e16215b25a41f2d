package quantfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func logitsHeader(magic string, nctx, nvocab, nchunk int32) []byte {
	b := []byte(magic)
	for _, v := range []int32{nctx, nvocab, nchunk} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// The header of the base file the capture made (-c 128 --chunks 8, the medium model's 259
// tokens): the real file was 270,228 bytes.
func TestReadLogitsHeader(t *testing.T) {
	h, err := ReadLogitsHeader(bytes.NewReader(append(logitsHeader("_logits_", 128, 259, 8), 1, 2, 3)))
	if err != nil || h != (LogitsHeader{NCtx: 128, NVocab: 259, NChunk: 8}) {
		t.Fatalf("%+v %v", h, err)
	}
	if h.FileSize() != 270228 || h.ScoredPerChunk() != 63 || h.Scored() != 504 {
		t.Errorf("size %d scored %d/%d", h.FileSize(), h.ScoredPerChunk(), h.Scored())
	}
	if one := (LogitsHeader{NCtx: 128, NVocab: 259, NChunk: 1}); one.Scored() >= MinStatsTokens {
		t.Errorf("one chunk of 128 scores %d", one.Scored())
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"short":     []byte("_logits_\x80"),
		"magic":     logitsHeader("_logitz_", 128, 259, 8),
		"text":      []byte("this is not a logits file\n"),
		"no chunks": logitsHeader("_logits_", 128, 259, 0),
		"negative":  logitsHeader("_logits_", -5, 259, 8),
	} {
		if _, err := ReadLogitsHeader(bytes.NewReader(b)); !errors.Is(err, ErrNotLogits) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
