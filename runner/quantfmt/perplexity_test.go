package quantfmt

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The real perplexity runs of build 11669 (medium model, the project corpus, -c 128 -t 1):
// the plan, every chunk, the final estimate; the last chunk's cumulative value is the final.
func TestPerplexityOutput(t *testing.T) {
	cases := []struct {
		name   string
		chunks int
		nll    bool
		final  Figure
		saving bool
	}{
		{"ppl-default", 8, false, Figure{Value: 269.4540, PM: 3.59580, HasPM: true}, false},
		{"ppl-type1", 20, true, Figure{Value: 267.0857, PM: 2.14796, HasPM: true}, false},
		{"kld-base", 8, true, Figure{Value: 269.4540, PM: 3.59580, HasPM: true}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, lines := fixture(t, c.name)
			o := ParsePerplexityOutput(text)
			if o.Plan == nil || o.Plan.KLD || o.Plan.Chunks != c.chunks || o.Plan.NCtx != 128 || o.Plan.Batch != 2048 || o.Plan.NSeq != 16 {
				t.Fatalf("plan %+v", o.Plan)
			}
			if len(o.Chunks) != c.chunks || o.ChunksDone() != c.chunks || len(o.Errors) != 0 || o.TooFew != nil || o.Stats != nil {
				t.Fatalf("%d chunks, errors %v, too few %v", len(o.Chunks), o.Errors, o.TooFew)
			}
			for i, ch := range o.Chunks {
				if ch.Index != i+1 || (ch.NLL != nil) != c.nll {
					t.Errorf("chunk %d: %+v", i+1, ch)
				}
				traces(t, lines, "chunk", ch.PPL)
				if ch.NLL != nil {
					traces(t, lines, "nll", *ch.NLL)
				}
			}
			if o.Final == nil || o.Final.Value != c.final.Value || o.Final.PM != c.final.PM {
				t.Fatalf("final %v, want %v", o.Final, c.final)
			}
			traces(t, lines, "final", *o.Final)
			if last := o.Chunks[len(o.Chunks)-1].PPL.Value; last != o.Final.Value {
				t.Errorf("last chunk %v, final %v", last, o.Final.Value)
			}
			if o.TokenizeMs == nil || o.SecondsPerPass == nil {
				t.Errorf("tokenize %v pass %v", o.TokenizeMs, o.SecondsPerPass)
			}
			if c.saving != strings.HasSuffix(o.SavingLogitsTo, "/base.kld") {
				t.Errorf("saving logits to %q", o.SavingLogitsTo)
			}
		})
	}
}

// The real --kl-divergence runs of Q4_0 and Q8_0 against the F16 base: every chunk row,
// every field of the statistics block (its labels checked against the output), each figure
// tracing to its line; Q4_0 is further from the base than Q8_0.
func TestKLDOutput(t *testing.T) {
	var mean [2]float64
	for i, name := range []string{"kld-q4_0", "kld-q8_0"} {
		text, lines := fixture(t, name)
		o := ParsePerplexityOutput(text)
		if o.Plan == nil || !o.Plan.KLD || o.Plan.Chunks != 8 || len(o.KLDChunks) != 8 || o.ChunksDone() != 8 || o.Final != nil || len(o.Errors) != 0 {
			t.Fatalf("%s: plan %+v, %d rows, final %v, errors %v", name, o.Plan, len(o.KLDChunks), o.Final, o.Errors)
		}
		for j, r := range o.KLDChunks {
			if r.Index != j+1 {
				t.Errorf("%s row %d: index %d", name, j+1, r.Index)
			}
			for _, f := range []Figure{r.PPL, r.LnPPLRatio, r.KLD, r.RMSDeltaP, r.SameTopP} {
				traces(t, lines, name+" row", f)
			}
		}
		s := o.Stats
		if s == nil || len(s.Missing()) != 0 {
			t.Fatalf("%s: stats %+v, missing %v", name, s, s.Missing())
		}
		for _, f := range statFields {
			fig := *f.get(s)
			traces(t, lines, name+" "+f.label, fig)
			if got := strings.Join(strings.Fields(strings.SplitN(lines[fig.Line-1], ":", 2)[0]), " "); got != f.label {
				t.Errorf("%s: %s read from a line labelled %q", name, f.label, got)
			}
		}
		var kldAt, dpAt []float64
		for _, p := range s.KLDPercentiles {
			kldAt = append(kldAt, p.At)
			traces(t, lines, name+" KLD percentile", p.Figure)
		}
		for _, p := range s.DeltaPPercentiles {
			dpAt = append(dpAt, p.At)
			traces(t, lines, name+" Δp percentile", p.Figure)
		}
		if !reflect.DeepEqual(kldAt, []float64{99.9, 99, 95, 90, 10, 5, 1, 0.1}) || !reflect.DeepEqual(dpAt, []float64{99.9, 99, 95, 90, 75, 25, 10, 5, 1, 0.1}) {
			t.Errorf("%s: percentiles KLD %v Δp %v", name, kldAt, dpAt)
		}
		if p999, ok := s.KLDPercentile(99.9); !ok || p999.Value < s.MedianKLD.Value || p999.Value > s.MaxKLD.Value {
			t.Errorf("%s: 99.9%% KLD %v, median %v, max %v", name, p999, s.MedianKLD, s.MaxKLD)
		}
		if last := o.KLDChunks[7].KLD.Value; math.Abs(last-s.MeanKLD.Value) > 1e-5 {
			t.Errorf("%s: last row's KLD %v, mean KLD %v", name, last, s.MeanKLD.Value)
		}
		mean[i] = s.MeanKLD.Value
	}
	if mean != [2]float64{0.002890, 0.000014} {
		t.Errorf("mean KLD Q4_0 %v, Q8_0 %v", mean[0], mean[1])
	}
	if _, lines := fixture(t, "kld-q4_0"); !strings.Contains(lines[ParsePerplexityOutput(strings.Join(lines, "\n")).Stats.SameTopP.Line-1], "Same top p: 89.286 ± 1.379 %") {
		t.Error("Same top p is not the line it says")
	}
}

// The tool's refusals, each exiting 0 (but the bad -f, exit 1): the typed too-few-tokens
// error with the counts, the error lines, no result.
func TestPerplexityFailures(t *testing.T) {
	text, _ := fixture(t, "ppl-too-few")
	o := ParsePerplexityOutput(text)
	if o.TooFew == nil {
		t.Fatalf("no too-few error: %v", o.Errors)
	}
	want := TooFewTokensError{Need: 256, Have: 136, Ctx: 128, ChunksAvailable: 1, Line: o.Errors[0].Line}
	if *o.TooFew != want || len(o.Errors) != 2 || o.Plan != nil || o.Final != nil {
		t.Fatalf("too few %+v, errors %v", o.TooFew, o.Errors)
	}
	var err error = o.TooFew
	var tf *TooFewTokensError
	if !errors.As(err, &tf) || !strings.Contains(err.Error(), "only 136 tokens") || !strings.Contains(err.Error(), "needs at least 256") {
		t.Errorf("error %q", err)
	}
	derived := &TooFewTokensError{Need: 640, Have: -1, Ctx: 128, Chunks: 5, ChunksAvailable: 4}
	if msg := derived.Error(); !strings.Contains(msg, "only 4 chunks of 128 tokens") || !strings.Contains(msg, "--chunks 5 with -c 128 needs 640 tokens") {
		t.Errorf("derived: %q", msg)
	}
	for name, words := range map[string]string{
		"ppl-missing-corpus": `error while handling argument "-f"`,
		"kld-no-base":        "you must provide a name of a file containing the log probabilities",
		"kld-not-logits":     "does not look like a file containing log-probabilities",
	} {
		text, lines := fixture(t, name)
		o := ParsePerplexityOutput(text)
		if len(o.Errors) == 0 || !strings.Contains(o.Errors[0].Text, words) || !strings.Contains(lines[o.Errors[0].Line-1], o.Errors[0].Text) {
			t.Errorf("%s: errors %v", name, o.Errors)
		}
		if o.Final != nil || o.Stats != nil || o.ChunksDone() != 0 {
			t.Errorf("%s: a result from a refusal", name)
		}
	}
	// one chunk scores 63 tokens: the tool prints the row and no statistics
	text, _ = fixture(t, "kld-one-chunk")
	if o := ParsePerplexityOutput(text); len(o.KLDChunks) != 1 || o.Stats != nil {
		t.Errorf("one chunk: %d rows, stats %v", len(o.KLDChunks), o.Stats)
	}
}

// ChunkStream reads the default "[i]v," records from raw bytes in any pieces: the same
// chunks as the line parser, whatever the read boundaries.
func TestChunkStream(t *testing.T) {
	text, _ := fixture(t, "ppl-default")
	want := ParsePerplexityOutput(text).Chunks
	for _, size := range []int{1, 2, 3, 7, 64, len(text)} {
		var s ChunkStream
		var got []Chunk
		for i := 0; i < len(text); i += size {
			got = append(got, s.Feed([]byte(text[i:min(i+size, len(text))]))...)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("pieces of %d: %+v, want %+v", size, got, want)
		}
	}
	var s ChunkStream
	if got := s.Feed([]byte("[1]260.81")); len(got) != 0 {
		t.Fatalf("an unfinished record gave %v", got)
	}
	if got := s.Feed([]byte("83,[2]x,[3]1.5,")); len(got) != 2 || got[0].PPL.Value != 260.8183 || got[1].Index != 3 {
		t.Fatalf("%+v", got)
	}
}

// Figures survive JSON, NaN and infinities included.
func TestFigureJSON(t *testing.T) {
	for _, f := range []Figure{{Value: 1.5, PM: 0.25, HasPM: true, Line: 3}, {Value: math.NaN(), Line: 1}, {Value: math.Inf(-1), PM: math.Inf(1), HasPM: true, Line: 2}, {Value: -0.0}} {
		b, err := json.Marshal(Percentile{At: 99.9, Figure: f})
		if err != nil {
			t.Fatal(err)
		}
		var back Percentile
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
		if back.At != 99.9 || !same(back.Value, f.Value) || back.HasPM != f.HasPM || !same(back.PM, f.PM) || back.Line != f.Line {
			t.Errorf("%+v -> %s -> %+v", f, b, back)
		}
	}
	if v, ok := parseNum("-nan"); !ok || !math.IsNaN(v) {
		t.Error("-nan")
	}
}
