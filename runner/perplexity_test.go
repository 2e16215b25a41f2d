package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/quantfmt"
)

func TestPerplexityArgv(t *testing.T) {
	s := PerplexitySpec{Tool: "p", Model: "m.gguf", Mode: PerplexityPPL, Corpus: "c.txt", Ctx: 128, Chunks: 8, Args: []string{"-t", "1"}}
	want := []string{"p", "-m", "m.gguf", "-f", "c.txt", "-c", "128", "--chunks", "8", "--ppl-output-type", "1", "-t", "1"}
	if got := s.Argv(""); !reflect.DeepEqual(got, want) {
		t.Errorf("perplexity %q", got)
	}
	s.Mode = PerplexityBase
	if got := s.Argv("b.part"); !reflect.DeepEqual(got, []string{"p", "-m", "m.gguf", "-f", "c.txt", "-c", "128", "--chunks", "8",
		"--kl-divergence-base", "b.part", "--ppl-output-type", "1", "-t", "1"}) {
		t.Errorf("kld_base %q", got)
	}
	s = PerplexitySpec{Tool: "p", Model: "q.gguf", Mode: PerplexityKLD, Ctx: 128, Args: []string{"-t", "1"}}
	if got := s.Argv("b.kld"); !reflect.DeepEqual(got, []string{"p", "-m", "q.gguf", "-c", "128", "--kl-divergence-base", "b.kld", "--kl-divergence", "-t", "1"}) {
		t.Errorf("kld %q", got)
	}
	for _, bad := range []string{"-m", "-f", "-c", "--chunks", "--kl-divergence", "--kl-divergence-base", "--ppl-output-type", "--ppl-stride", "--hellaswag", "--log-disable", "-h"} {
		if err := ValidatePerplexityArgs([]string{bad, "x"}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := ValidatePerplexityArgs([]string{"-t", "1", "-b", "512", "-ngl", "0"}); err != nil {
		t.Error(err)
	}
}

// writeLogits writes a complete base-logits file of the given shape (zero log-probabilities).
func writeLogits(t *testing.T, path string, nctx, nvocab, nchunk int32) {
	t.Helper()
	b := []byte(quantfmt.LogitsMagic)
	for _, v := range []int32{nctx, nvocab, nchunk} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	h := quantfmt.LogitsHeader{NCtx: int(nctx), NVocab: int(nvocab), NChunk: int(nchunk)}
	b = append(b, make([]byte, h.FileSize()-int64(len(b)))...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Stand-ins printing the real transcripts: a perplexity run with a line per chunk, a base run
// writing a complete file (renamed into place), a KL-divergence run: each ok with its figure,
// progress chunk by chunk.
func TestPerplexityFake(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(corpus, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.kld")
	writeLogits(t, good, 128, 259, 8)
	base := filepath.Join(dir, "base.kld")
	cases := []struct {
		name, fixture, then string
		spec                PerplexitySpec
		chunks              int
	}{
		{"perplexity", "ppl-type1", "", PerplexitySpec{Mode: PerplexityPPL, Corpus: corpus, Ctx: 128, Chunks: 20}, 20},
		// argv: -m M -f C -c 128 --chunks 8 --kl-divergence-base TMP …: TMP is $10
		{"kld_base", "kld-base", `cp '` + good + `' "${10}"`, PerplexitySpec{Mode: PerplexityBase, Corpus: corpus, Ctx: 128, Chunks: 8, Base: base}, 8},
		{"kld", "kld-q4_0", "", PerplexitySpec{Mode: PerplexityKLD, Base: good}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.spec
			s.Tool, s.Model, s.Limits, s.NoFingerprint = fakeTool(t, c.fixture, c.then, 0), "m.gguf", quickLimits, true
			r := StartPerplexity(context.Background(), s)
			evs := collect(t, r.Events(), time.Minute)
			res := r.Result()
			if res.Exit.Class != ClassOK || res.Exit.Rows != c.chunks || res.Exit.Expected != c.chunks || res.Err != nil {
				t.Fatalf("exit %+v err %v\n%s", res.Exit, res.Err, res.Transcript.Bytes())
			}
			prog := ofType(evs, EventProgress)
			if last := prog[len(prog)-1].Progress; last.Done != c.chunks || last.Total != c.chunks {
				t.Errorf("last progress %+v", last)
			}
			switch c.spec.Mode {
			case PerplexityKLD:
				if res.KLD == nil || res.KLD.MeanKLD.Value != 0.002890 || res.PPL != nil {
					t.Errorf("kld %+v ppl %v", res.KLD, res.PPL)
				}
			case PerplexityBase:
				if res.Base == nil || res.Base.Path != base || res.Base.Bytes != 270228 || res.Base.Header.NChunk != 8 {
					t.Errorf("base %+v", res.Base)
				}
				if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
					t.Errorf("left behind %v", names)
				}
				fallthrough
			default:
				if res.PPL == nil || res.PPL.Value != res.Parsed.Chunks[c.chunks-1].PPL.Value {
					t.Errorf("ppl %v", res.PPL)
				}
			}
		})
	}
}

// A corpus with fewer chunks than --chunks asks: the run is stopped at the plan line with the
// typed error (needed tokens, chunks there are); the tool's own refusal of a corpus under two
// contexts (it exits 0) is the same error with its counts; no base file is left.
func TestPerplexityTooFew(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(corpus, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	// the plan line says 8 chunks; 30 were asked; the stand-in would go on for a minute
	slow := filepath.Join(t.TempDir(), "slow")
	abs, _ := filepath.Abs(filepath.Join("quantfmt", "testdata", "kld-base.txt"))
	script := "#!/bin/sh\nhead -n 8 '" + abs + "'\nsleep 60\ncat '" + abs + "'\n"
	if err := os.WriteFile(slow, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "base.kld")
	r := StartPerplexity(context.Background(), PerplexitySpec{Tool: slow, Model: "m.gguf", Mode: PerplexityBase, Corpus: corpus,
		Ctx: 128, Chunks: 30, Base: base, Limits: quickLimits, NoFingerprint: true})
	collect(t, r.Events(), time.Minute)
	res := r.Result()
	var tf *quantfmt.TooFewTokensError
	if res.Exit.Class != ClassBadArgs || res.Exit.StoppedBy != StopGate || !errors.As(res.Err, &tf) ||
		*tf != (quantfmt.TooFewTokensError{Need: 3840, Have: -1, Ctx: 128, Chunks: 30, ChunksAvailable: 8}) || res.Exit.Duration > 30*time.Second {
		t.Fatalf("exit %+v err %v", res.Exit, res.Err)
	}
	if !strings.Contains(res.Exit.Reason, "needs 3840 tokens") {
		t.Errorf("reason %q", res.Exit.Reason)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*.kld*")); len(names) != 0 {
		t.Errorf("left behind %v", names)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
		t.Errorf("left behind %v", names)
	}

	r = StartPerplexity(context.Background(), PerplexitySpec{Tool: fakeTool(t, "ppl-too-few", "", 0), Model: "m.gguf", Mode: PerplexityPPL,
		Corpus: corpus, Ctx: 128, Limits: quickLimits, NoFingerprint: true})
	collect(t, r.Events(), time.Minute)
	res = r.Result()
	if res.Exit.Class != ClassBadArgs || !errors.As(res.Err, &tf) || tf.Need != 256 || tf.Have != 136 || tf.Ctx != 128 || res.TooFew != tf {
		t.Fatalf("exit %+v err %v", res.Exit, res.Err)
	}
}

// kld refusals read the base file's header before anything starts.
func TestPerplexityKLDRefusals(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.kld")
	writeLogits(t, one, 128, 259, 1)
	cut := filepath.Join(dir, "cut.kld")
	writeLogits(t, cut, 128, 259, 8)
	if err := os.Truncate(cut, 1000); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text.kld")
	if err := os.WriteFile(text, []byte("this is not a logits file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.kld")
	writeLogits(t, good, 128, 259, 8)
	for _, c := range []struct {
		name string
		spec PerplexitySpec
		want string
	}{
		{"one chunk", PerplexitySpec{Base: one}, "score 63 tokens"},
		{"cut short", PerplexitySpec{Base: cut}, "incomplete"},
		{"not logits", PerplexitySpec{Base: text}, "not a llama-perplexity base-logits file"},
		{"chunks", PerplexitySpec{Base: good, Chunks: 4}, "--chunks does not apply"},
		{"ctx", PerplexitySpec{Base: good, Ctx: 256}, "made with n_ctx 128"},
		{"missing", PerplexitySpec{Base: filepath.Join(dir, "absent.kld")}, "absent.kld"},
	} {
		s := c.spec
		s.Tool, s.Model, s.Mode, s.Limits, s.NoFingerprint = "/bin/false", "m.gguf", PerplexityKLD, quickLimits, true
		r := StartPerplexity(context.Background(), s)
		collect(t, r.Events(), time.Minute)
		res := r.Result()
		if res.Exit.Class != ClassBadArgs || r.Pid() != 0 || !strings.Contains(res.Exit.Reason, c.want) {
			t.Errorf("%s: exit %+v", c.name, res.Exit)
		}
	}
}
