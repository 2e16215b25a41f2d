package quantfmt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func seeds(f *testing.F, prefix string) {
	names, _ := filepath.Glob(filepath.Join("testdata", prefix+"*.txt"))
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(string(b))
		}
	}
}

func checkText(t *testing.T, what, s string) {
	if !utf8.ValidString(s) || len(s) > maxText+len("…") {
		t.Fatalf("%s: %d bytes, valid UTF-8 %v", what, len(s), utf8.ValidString(s))
	}
}

// FuzzQuantizeParser: any output, fed line by line, never panics; the counts agree with the
// tensors, every line number is one of the input's, the result marshals to JSON, and parsing
// is deterministic.
func FuzzQuantizeParser(f *testing.F) {
	seeds(f, "quantize-")
	f.Add("[   1/   2] a - [ 1, 2], type = f16, converting to q4_0 .. size = nan MiB -> -inf MiB\n[ 9/ 1] b - [x], type = q, ")
	f.Fuzz(func(t *testing.T, text string) {
		o := ParseQuantizeOutput(text)
		n := len(splitLines(text))
		if o.Done() > len(o.Tensors)+o.DroppedTensors || len(o.Tensors) > MaxTensors || len(o.Failures) > maxLines {
			t.Fatalf("done %d of %d tensors", o.Done(), len(o.Tensors))
		}
		for _, tn := range o.Tensors {
			if tn.Line < 1 || tn.Line > n || tn.SizeLine > n {
				t.Fatalf("tensor line %d/%d of %d", tn.Line, tn.SizeLine, n)
			}
		}
		for _, fl := range o.Failures {
			checkText(t, "failure", fl.Text)
		}
		if _, err := json.Marshal(o); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ParseQuantizeOutput(text), o) {
			t.Fatal("not deterministic")
		}
		if o.Complete() && (o.Total == 0 || o.QuantSize == nil) {
			t.Fatal("complete without tensors or quant size")
		}
	})
}

// FuzzPerplexityParser: any output never panics; chunks are numbered from 1, lines are the
// input's, the result marshals to JSON (NaN included), a too-few error has a message.
func FuzzPerplexityParser(f *testing.F) {
	seeds(f, "ppl-")
	seeds(f, "kld-")
	f.Add("0.00.000.001 I perplexity: calculating perplexity over 2 chunks, n_ctx=4, batch_size=8, n_seq=2\n[1]nan,[2]-inf,[x]1,\n====== KL divergence statistics ======\nMean    KLD:   -nan ± inf\n99.9%   KLD: 1e400\n")
	f.Fuzz(func(t *testing.T, text string) {
		o := ParsePerplexityOutput(text)
		n := len(splitLines(text))
		for i, c := range o.Chunks {
			if c.PPL.Line < 1 || c.PPL.Line > n || c.Index < 1 || (o.Chunks[i].NLL != nil && c.NLL.Line != c.PPL.Line) {
				t.Fatalf("chunk %+v of %d lines", c, n)
			}
		}
		if len(o.Chunks) > MaxChunks || len(o.KLDChunks) > MaxChunks || len(o.Errors) > maxLines || len(o.Warnings) > maxLines {
			t.Fatal("unbounded")
		}
		for _, e := range append(o.Errors, o.Warnings...) {
			checkText(t, "error", e.Text)
		}
		if o.TooFew != nil && o.TooFew.Error() == "" {
			t.Fatal("empty too-few message")
		}
		if o.Stats != nil {
			_ = o.Stats.Missing()
			_, _ = o.Stats.KLDPercentile(99.9)
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var back PerplexityOutput
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzChunkStream: any bytes in any two pieces give the chunks the whole gives.
func FuzzChunkStream(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "ppl-default.txt")); err == nil {
		f.Add(string(b), 700)
	}
	f.Add("[1]2.5,[2]3,\n[3]nan,[", 3)
	f.Fuzz(func(t *testing.T, text string, cut int) {
		var whole ChunkStream
		want := whole.Feed([]byte(text))
		if cut < 0 {
			cut = -cut
		}
		if len(text) > 0 {
			cut %= len(text) + 1
		} else {
			cut = 0
		}
		var s ChunkStream
		got := append(s.Feed([]byte(text[:cut])), s.Feed([]byte(text[cut:]))...)
		if len(got) != len(want) {
			t.Fatalf("split at %d: %d chunks, whole %d", cut, len(got), len(want))
		}
		for i := range got {
			if got[i].Index != want[i].Index || got[i].PPL.Line != want[i].PPL.Line {
				t.Fatalf("chunk %d: %+v vs %+v", i, got[i], want[i])
			}
		}
	})
}

// FuzzQuantizeHelp: any text never panics; every type has a name, a line of the text, and
// Lookup finds it by its own name.
func FuzzQuantizeHelp(f *testing.F) {
	seeds(f, "quantize-help")
	f.Add("allowed quantization types\n  2  or  Q4_0 : 4.34G, +0.4685 ppl @ x\n 12 or A : alias for B\n")
	f.Fuzz(func(t *testing.T, text string) {
		ts, err := ParseQuantizeHelp(text)
		if err != nil {
			return
		}
		n := strings.Count(text, "\n") + 1
		for _, qt := range ts {
			if qt.Name == "" || qt.Line < 1 || qt.Line > n {
				t.Fatalf("%+v of %d lines", qt, n)
			}
			if got, err := ts.Lookup(qt.Name); err != nil || !strings.EqualFold(got.Name, qt.Name) {
				t.Fatalf("Lookup(%q) = %+v, %v", qt.Name, got, err)
			}
		}
		if _, err := json.Marshal(ts); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzReadLogitsHeader: any bytes give a header whose counts are sane, or ErrNotLogits.
func FuzzReadLogitsHeader(f *testing.F) {
	f.Add(logitsHeader("_logits_", 128, 259, 8))
	f.Add([]byte("_logits_"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadLogitsHeader(bytes.NewReader(b))
		if err != nil {
			return
		}
		if h.NCtx < 2 || h.NVocab < 1 || h.NChunk < 1 || h.FileSize() < LogitsHeaderSize {
			t.Fatalf("%+v size %d", h, h.FileSize())
		}
	})
}
