// Package testmodels is the deterministic generator of sparkbench's small GGUF models:
// llama-architecture transformers with random weights (a seeded PCG stream, integer-only float
// conversion) that load and run in llama.cpp. The same Spec always gives the same bytes, so
// tests, `cmd/mkmodel` and the app's demo study can write them on demand and know their
// SHA-256 in advance (testdata/models/SHA256SUMS).
package testmodels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"sparkbench/runner/atomicfile"
	"sparkbench/runner/gguf"
)

// Spec describes one generated model: a llama-architecture transformer
// with random weights and a 259-token byte vocabulary.
type Spec struct {
	File     string // file name in the output folder
	Name     string // general.name
	Medium   bool   // large: written only with -medium, never committed
	Embd     int    // n_embd
	Heads    int    // attention.head_count
	HeadsKV  int    // attention.head_count_kv
	Blocks   int    // block_count
	FF       int    // feed_forward_length (per expert for MoE)
	Ctx      int    // context_length
	Experts  int    // expert_count; 0 for a dense model
	Used     int    // expert_used_count
	Matrix   gguf.GGMLType
	FileType uint32 // general.file_type (llama_ftype)
	Seed     uint64
}

// Specs lists every model mkmodel writes, in order.
var Specs = []Spec{
	{File: "tiny-llama-f32.gguf", Name: "sparkbench-tiny-llama-f32",
		Embd: 64, Heads: 4, HeadsKV: 4, Blocks: 2, FF: 256, Ctx: 4096,
		Matrix: gguf.GGMLTypeF32, FileType: 0, Seed: 1},
	{File: "tiny-moe-f32.gguf", Name: "sparkbench-tiny-moe-f32",
		Embd: 64, Heads: 4, HeadsKV: 4, Blocks: 2, FF: 256, Ctx: 4096, Experts: 4, Used: 2,
		Matrix: gguf.GGMLTypeF32, FileType: 0, Seed: 2},
	{File: "tiny-llama-f16.gguf", Name: "sparkbench-tiny-llama-f16",
		Embd: 64, Heads: 4, HeadsKV: 4, Blocks: 2, FF: 256, Ctx: 4096,
		Matrix: gguf.GGMLTypeF16, FileType: 1, Seed: 3},
	{File: "medium-llama-f16.gguf", Name: "sparkbench-medium-llama-f16", Medium: true,
		Embd: 512, Heads: 8, HeadsKV: 8, Blocks: 8, FF: 1376, Ctx: 4096,
		Matrix: gguf.GGMLTypeF16, FileType: 1, Seed: 4},
}

// Vocabulary: <unk>, <s>, </s>, then one token per byte <0x00>..<0xFF>.
const (
	VocabSize = 3 + 256

	TokenUnknown int32 = 2
	TokenControl int32 = 3
	TokenUnused  int32 = 5
	TokenByte    int32 = 6
)

// Vocab returns tokens, scores and token types. Byte tokens for printable
// ASCII, tab, LF and CR are BYTE (6); all other bytes are UNUSED (5), so
// that, with their output rows zero, the model never emits a byte that
// could leave streamed text invalid UTF-8 (LLAMA.md).
func Vocab() ([]string, []float32, []int32) {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{TokenUnknown, TokenControl, TokenControl}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		t := TokenUnused
		if b == '\t' || b == '\n' || b == '\r' || (b >= 0x20 && b < 0x7f) {
			t = TokenByte
		}
		types = append(types, t)
	}
	return tokens, make([]float32, VocabSize), types
}

// Build returns the metadata and tensors of s. Everything is a pure
// function of s: weights come from a PCG stream seeded with s.Seed, drawn
// in tensor order.
func Build(s Spec) ([]gguf.KV, []gguf.TensorData) {
	tokens, scores, types := Vocab()
	kvs := []gguf.KV{
		gguf.NewKV("general.architecture", "llama"),
		gguf.NewKV("general.name", s.Name),
		gguf.NewKV("general.file_type", s.FileType),
		gguf.NewKV("llama.context_length", uint32(s.Ctx)),
		gguf.NewKV("llama.embedding_length", uint32(s.Embd)),
		gguf.NewKV("llama.block_count", uint32(s.Blocks)),
		gguf.NewKV("llama.feed_forward_length", uint32(s.FF)),
		gguf.NewKV("llama.attention.head_count", uint32(s.Heads)),
		gguf.NewKV("llama.attention.head_count_kv", uint32(s.HeadsKV)),
		gguf.NewKV("llama.attention.layer_norm_rms_epsilon", float32(1e-5)),
		gguf.NewKV("llama.rope.freq_base", float32(10000)),
	}
	if s.Experts > 0 {
		kvs = append(kvs,
			gguf.NewKV("llama.expert_count", uint32(s.Experts)),
			gguf.NewKV("llama.expert_used_count", uint32(s.Used)))
	}
	kvs = append(kvs,
		gguf.NewKV("tokenizer.ggml.model", "llama"),
		gguf.NewKV("tokenizer.ggml.tokens", tokens),
		gguf.NewKV("tokenizer.ggml.scores", scores),
		gguf.NewKV("tokenizer.ggml.token_type", types),
		gguf.NewKV("tokenizer.ggml.unknown_token_id", uint32(0)),
		gguf.NewKV("tokenizer.ggml.bos_token_id", uint32(1)),
		gguf.NewKV("tokenizer.ggml.eos_token_id", uint32(2)),
	)

	g := &weights{rng: rand.New(rand.NewPCG(s.Seed, 0x5350524b42454e43)), matrix: s.Matrix}
	embdKV := s.Embd / s.Heads * s.HeadsKV
	ts := []gguf.TensorData{g.random("token_embd.weight", s.Embd, VocabSize)}
	for i := range s.Blocks {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			g.ones(p+"attn_norm.weight", s.Embd),
			g.random(p+"attn_q.weight", s.Embd, s.Embd),
			g.random(p+"attn_k.weight", s.Embd, embdKV),
			g.random(p+"attn_v.weight", s.Embd, embdKV),
			g.random(p+"attn_output.weight", s.Embd, s.Embd),
			g.ones(p+"ffn_norm.weight", s.Embd))
		if s.Experts > 0 {
			ts = append(ts,
				g.random(p+"ffn_gate_inp.weight", s.Embd, s.Experts),
				g.random(p+"ffn_gate_exps.weight", s.Embd, s.FF, s.Experts),
				g.random(p+"ffn_down_exps.weight", s.FF, s.Embd, s.Experts),
				g.random(p+"ffn_up_exps.weight", s.Embd, s.FF, s.Experts))
		} else {
			ts = append(ts,
				g.random(p+"ffn_gate.weight", s.Embd, s.FF),
				g.random(p+"ffn_down.weight", s.FF, s.Embd),
				g.random(p+"ffn_up.weight", s.Embd, s.FF))
		}
	}
	out := g.random("output.weight", s.Embd, VocabSize)
	// Zero the output rows of every token that is not a usable byte, so
	// greedy decoding never picks </s> or an UNUSED byte.
	rowBytes := len(out.Data) / VocabSize
	for tok, t := range types {
		if t != TokenByte {
			clear(out.Data[tok*rowBytes : (tok+1)*rowBytes])
		}
	}
	ts = append(ts, g.ones("output_norm.weight", s.Embd), out)
	return kvs, ts
}

// weights draws tensor data.
type weights struct {
	rng    *rand.Rand
	matrix gguf.GGMLType // type of 2-D and 3-D tensors; 1-D norms stay F32
}

// WeightScale makes the uniform draw's standard deviation 0.02
// (uniform on [-a, a] has standard deviation a/sqrt(3)).
const WeightScale = 0.02 * 1.7320508075688772

// random returns a tensor of uniform values in [-WeightScale, WeightScale).
// Each value is one PCG draw turned into a float by integer arithmetic and
// a single multiplication, so the bytes are identical on every platform.
func (g *weights) random(name string, shape ...int) gguf.TensorData {
	n := 1
	dims := make([]uint64, len(shape))
	for i, d := range shape {
		n *= d
		dims[i] = uint64(d)
	}
	size := 4
	if g.matrix == gguf.GGMLTypeF16 {
		size = 2
	}
	data := make([]byte, n*size)
	for i := range n {
		k := int64(g.rng.Uint64()>>11) - 1<<52 // uniform integer in [-2^52, 2^52)
		v := float32(float64(k) * (WeightScale / (1 << 52)))
		if size == 2 {
			binary.LittleEndian.PutUint16(data[2*i:], gguf.F16(v))
		} else {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
	}
	return gguf.TensorData{Name: name, Type: g.matrix, Shape: dims, Data: data}
}

// ones returns an F32 norm weight of all 1.0.
func (g *weights) ones(name string, n int) gguf.TensorData {
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(1))
	}
	return gguf.TensorData{Name: name, Type: gguf.GGMLTypeF32, Shape: []uint64{uint64(n)}, Data: data}
}

// ByFile returns the spec whose File is name.
func ByFile(name string) (Spec, bool) {
	for _, s := range Specs {
		if s.File == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Write writes s's model to path (through a temporary file in the same folder, renamed into
// place, so a reader never sees half a model) and returns its SHA-256 in hex.
func Write(path string, s Spec) (string, error) {
	kvs, ts := Build(s)
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	h := sha256.New()
	if _, err := gguf.Write(io.MultiWriter(f, h), kvs, ts); err != nil {
		f.Abort()
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
