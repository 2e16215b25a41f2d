package quantfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// LogitsHeader is the head of the file llama-perplexity writes with --kl-divergence-base FILE
// (and no --kl-divergence): the magic "_logits_", then little-endian int32 n_ctx, n_vocab
// and n_chunk, the n_chunk*n_ctx evaluated tokens (int32), and for each chunk the log
// probabilities of its scored tokens, n_ctx-1-n_ctx/2 rows of 2*((n_vocab+1)/2)+4 uint16.
// --kl-divergence reads the tokens and n_ctx from it: the corpus and -c of the base run
// decide what every model compared against it is scored on.
type LogitsHeader struct {
	NCtx   int `json:"n_ctx"`
	NVocab int `json:"n_vocab"`
	NChunk int `json:"n_chunk"`
}

// LogitsMagic opens every base-logits file.
const LogitsMagic = "_logits_"

// LogitsHeaderSize is the bytes of the magic and the three counts.
const LogitsHeaderSize = 8 + 3*4

// ErrNotLogits is matched (errors.Is) by the error of a file that is not a base-logits file.
var ErrNotLogits = errors.New("not a llama-perplexity base-logits file")

// ReadLogitsHeader reads the header from r. A file that does not start with the magic, is
// shorter than the header, or has counts no run writes, is an error wrapping ErrNotLogits.
func ReadLogitsHeader(r io.Reader) (LogitsHeader, error) {
	var b [LogitsHeaderSize]byte
	if n, err := io.ReadFull(r, b[:]); err != nil {
		return LogitsHeader{}, fmt.Errorf("%w: %d bytes, the header alone is %d: make it with llama-perplexity --kl-divergence-base FILE (without --kl-divergence)", ErrNotLogits, n, LogitsHeaderSize)
	}
	if string(b[:8]) != LogitsMagic {
		return LogitsHeader{}, fmt.Errorf("%w: it starts %q, not %q: make it with llama-perplexity --kl-divergence-base FILE (without --kl-divergence)", ErrNotLogits, b[:8], LogitsMagic)
	}
	h := LogitsHeader{
		NCtx:   int(int32(binary.LittleEndian.Uint32(b[8:]))),
		NVocab: int(int32(binary.LittleEndian.Uint32(b[12:]))),
		NChunk: int(int32(binary.LittleEndian.Uint32(b[16:]))),
	}
	if h.NCtx < 2 || h.NVocab < 1 || h.NChunk < 1 || h.NCtx > 1<<24 || h.NVocab > 1<<24 || h.NChunk > 1<<24 ||
		float64(h.NChunk)*float64(h.NCtx)*(float64(h.NVocab)+6)*2 > 1<<52 {
		return h, fmt.Errorf("%w: n_ctx %d, n_vocab %d, n_chunk %d is no run's header (a file cut short while it was written?)", ErrNotLogits, h.NCtx, h.NVocab, h.NChunk)
	}
	return h, nil
}

// ScoredPerChunk is how many tokens of a chunk are scored: the second half of the context
// less one (n_ctx-1-n_ctx/2).
func (h LogitsHeader) ScoredPerChunk() int { return h.NCtx - 1 - h.NCtx/2 }

// Scored is the tokens scored over the whole file. llama-perplexity --kl-divergence prints its
// statistics block only when this is 100 or more.
func (h LogitsHeader) Scored() int { return h.NChunk * h.ScoredPerChunk() }

// FileSize is the size of a complete file with this header.
func (h LogitsHeader) FileSize() int64 {
	nv := int64(2*((h.NVocab+1)/2) + 4)
	return LogitsHeaderSize + int64(h.NChunk)*int64(h.NCtx)*4 + int64(h.NChunk)*int64(h.ScoredPerChunk())*nv*2
}

// MinStatsTokens is the fewest scored tokens over which --kl-divergence prints statistics.
const MinStatsTokens = 100
