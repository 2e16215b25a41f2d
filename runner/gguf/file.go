// Package gguf reads and writes GGUF model files (the format of llama.cpp).
//
// The reader parses the header, the metadata key-value pairs and the tensor
// table, validates them against the file's size, and never reads tensor
// data: a 100 GB model is inspected in milliseconds. The writer produces
// deterministic files for tests (see cmd/mkmodel). Format reference:
// ggml's gguf.h / src/gguf.cpp; see docs/gguf.md for what this package
// checks and why.
package gguf

import (
	"math/bits"
	"strings"
)

// File is what the reader learns from a GGUF file without touching tensor
// data. The summary fields (Architecture ... VocabSize) are derived from
// the metadata; zero means "not present".
type File struct {
	Path       string // as given to ReadFile; "" for Read
	Size       int64  // file size in bytes
	Version    uint32 // 2 or 3
	Alignment  uint64 // general.alignment, default 32
	DataOffset int64  // start of the tensor data section (aligned)

	Architecture string // general.architecture
	Name         string // general.name

	ParamCount   uint64 // sum of tensor element counts (llama-bench model_n_params)
	FileType     int64  // general.file_type, -1 if absent
	FileTypeName string // llama_ftype name without prefix ("ALL_F32", "MOSTLY_Q4_K_M"); "" if absent

	// <arch>.context_length, .embedding_length, .attention.head_count,
	// .attention.head_count_kv, .block_count, .feed_forward_length. Keys
	// stored as per-layer arrays report their maximum. HeadCountKV defaults
	// to HeadCount when absent, as in llama.cpp.
	ContextLength, EmbeddingLength, HeadCount, HeadCountKV, BlockCount, FeedForwardLength uint64
	// <arch>.expert_count and <arch>.expert_used_count; 0 for dense models.
	ExpertCount, ExpertUsedCount uint64
	// Number of entries in tokenizer.ggml.tokens; else <arch>.vocab_size;
	// else the row count of token_embd.weight.
	VocabSize uint64

	KVs     []KV     // metadata in file order
	Tensors []Tensor // tensor table in file order
}

// KV is one metadata entry. Value holds a Go value of the matching type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64,
// int64, float64; for TypeArray a typed slice ([]uint8 ... []float64,
// []string, []bool) or, for arrays of arrays, []Array. ArrayType is the
// element type of an array and 0 otherwise.
type KV struct {
	Key       string
	Type      ValueType
	ArrayType ValueType
	Value     any
}

// Array is one element of an array of arrays.
type Array struct {
	Type  ValueType // element type
	Value any       // typed slice, as KV.Value for arrays
}

// Tensor is one entry of the tensor table.
type Tensor struct {
	Name   string
	Type   GGMLType
	Shape  []uint64 // ne0 first (ggml order), 0 to 4 dimensions
	Offset uint64   // relative to File.DataOffset
	Size   uint64   // bytes: ne0/blck * type_size * ne1 * ne2 * ne3
}

// Elements is the product of the tensor's dimensions.
func (t Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// IsExpert reports whether the tensor holds routed-expert weights (llama.cpp
// names them *_exps: ffn_gate_exps, ffn_up_exps, ffn_down_exps, and their
// biases). Shared experts (*_shexp) and the router (ffn_gate_inp) are read
// for every token and are not expert tensors in this sense.
func (t Tensor) IsExpert() bool { return strings.Contains(t.Name, "_exps") }

// Len returns the number of items of an array value, 0 for a scalar.
func (kv KV) Len() int { return arrayLen(kv.Value) }

func arrayLen(v any) int {
	switch a := v.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []Array:
		return len(a)
	}
	return 0
}

// Lookup returns the entry for key.
func (f *File) Lookup(key string) (KV, bool) {
	for _, kv := range f.KVs {
		if kv.Key == key {
			return kv, true
		}
	}
	return KV{}, false
}

// GetString returns the value of a STRING key.
func (f *File) GetString(key string) (string, bool) {
	kv, ok := f.Lookup(key)
	if !ok {
		return "", false
	}
	s, ok := kv.Value.(string)
	return s, ok
}

// GetUint returns the value of an integer key of any width as uint64; for an
// array of integers (per-layer values) it returns the largest item. Negative
// values and non-integer keys report false.
func (f *File) GetUint(key string) (uint64, bool) {
	kv, ok := f.Lookup(key)
	if !ok {
		return 0, false
	}
	if v, ok := toUint(kv.Value); ok {
		return v, true
	}
	var best uint64
	found := false
	forEachItem(kv.Value, func(item any) {
		if v, ok := toUint(item); ok {
			found = true
			best = max(best, v)
		}
	})
	return best, found
}

func toUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= 1<<63-1
	}
	return 0, false
}

// forEachItem calls fn with each item of a scalar-typed array value.
func forEachItem(v any, fn func(any)) {
	switch a := v.(type) {
	case []uint8:
		for _, x := range a {
			fn(x)
		}
	case []int8:
		for _, x := range a {
			fn(x)
		}
	case []uint16:
		for _, x := range a {
			fn(x)
		}
	case []int16:
		for _, x := range a {
			fn(x)
		}
	case []uint32:
		for _, x := range a {
			fn(x)
		}
	case []int32:
		for _, x := range a {
			fn(x)
		}
	case []uint64:
		for _, x := range a {
			fn(x)
		}
	case []int64:
		for _, x := range a {
			fn(x)
		}
	}
}

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// derive fills the summary fields from KVs and Tensors.
func (f *File) derive() {
	f.Architecture, _ = f.GetString("general.architecture")
	f.Name, _ = f.GetString("general.name")
	f.FileType = -1
	if kv, ok := f.Lookup("general.file_type"); ok {
		if v, ok := toInt(kv.Value); ok && v >= 0 {
			f.FileType = v
		}
	}
	f.FileTypeName = FileTypeName(f.FileType)

	a := f.Architecture + "."
	f.ContextLength, _ = f.GetUint(a + "context_length")
	f.EmbeddingLength, _ = f.GetUint(a + "embedding_length")
	f.HeadCount, _ = f.GetUint(a + "attention.head_count")
	var ok bool
	if f.HeadCountKV, ok = f.GetUint(a + "attention.head_count_kv"); !ok {
		f.HeadCountKV = f.HeadCount
	}
	f.BlockCount, _ = f.GetUint(a + "block_count")
	f.FeedForwardLength, _ = f.GetUint(a + "feed_forward_length")
	f.ExpertCount, _ = f.GetUint(a + "expert_count")
	f.ExpertUsedCount, _ = f.GetUint(a + "expert_used_count")

	if kv, ok := f.Lookup("tokenizer.ggml.tokens"); ok && kv.Type == TypeArray {
		f.VocabSize = uint64(kv.Len())
	} else if v, ok := f.GetUint(a + "vocab_size"); ok {
		f.VocabSize = v
	} else if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Shape) >= 2 {
		f.VocabSize = t.Shape[1]
	}

	f.ParamCount = 0
	for _, t := range f.Tensors {
		f.ParamCount += t.Elements()
	}
}

// TensorKinds splits the tensor table by how inference reads it for one
// generated token.
type TensorKinds struct {
	ExpertBytes, ExpertParams       uint64 // routed-expert tensors (Tensor.IsExpert)
	NonExpertBytes, NonExpertParams uint64 // all other tensors, token_embd.weight included

	TokenEmbdBytes    uint64 // token_embd.weight, whole table (part of NonExpertBytes)
	TokenEmbdRowBytes uint64 // one row of it: TokenEmbdBytes / (ne1*ne2*ne3)
	// TiedEmbeddings is true when the file has token_embd.weight but no
	// output.weight: llama.cpp then uses the embedding table as the output
	// projection, and every token reads all of it.
	TiedEmbeddings bool
}

// TensorBytesByKind sums tensor bytes and parameters per kind.
func (f *File) TensorBytesByKind() TensorKinds {
	var k TensorKinds
	hasOutput := false
	for _, t := range f.Tensors {
		switch {
		case t.IsExpert():
			k.ExpertBytes += t.Size
			k.ExpertParams += t.Elements()
		default:
			k.NonExpertBytes += t.Size
			k.NonExpertParams += t.Elements()
		}
		switch t.Name {
		case "token_embd.weight":
			k.TokenEmbdBytes = t.Size
			k.TokenEmbdRowBytes = t.Size // a 0- or 1-D table is one row
			if len(t.Shape) > 1 {
				rows := uint64(1)
				for _, d := range t.Shape[1:] {
					rows *= d
				}
				if rows > 0 {
					k.TokenEmbdRowBytes = t.Size / rows
				}
			}
		case "output.weight":
			hasOutput = true
		}
	}
	k.TiedEmbeddings = k.TokenEmbdBytes > 0 && !hasOutput
	return k
}

// TensorBytes is the sum of all tensor sizes (llama-bench's model_size).
func (f *File) TensorBytes() uint64 {
	var n uint64
	for _, t := range f.Tensors {
		n += t.Size
	}
	return n
}

// expertShare returns x * used / experts without overflow. With no usable
// expert counts (dense model, or expert tensors without the keys) the
// whole of x counts; used > experts is clamped to experts.
func (f *File) expertShare(x uint64) uint64 {
	n, used := f.ExpertCount, f.ExpertUsedCount
	if n == 0 || used == 0 || used >= n {
		return x
	}
	hi, lo := bits.Mul64(x, used)
	q, _ := bits.Div64(hi, lo, n) // hi < n because used < n
	return q
}

// ActiveParams is the parameter count one token touches, for the house
// convention of docs/domain.md ("Ceiling"):
//
//	active params = non-expert params + expert params × expert_used_count / expert_count
//
// (token_embd counts whole here, as the convention prices parameters at
// the file's average bytes per parameter). For a dense model it equals
// ParamCount.
func (f *File) ActiveParams() uint64 {
	k := f.TensorBytesByKind()
	return k.NonExpertParams + f.expertShare(k.ExpertParams)
}

// FileBytesPerParam is the house convention's bytes per parameter: file
// size / ParamCount (0 when the file has no parameters).
func (f *File) FileBytesPerParam() float64 {
	if f.ParamCount == 0 {
		return 0
	}
	return float64(f.Size) / float64(f.ParamCount)
}

// HouseActiveBytesPerToken is the house convention's active bytes per
// token: FileBytesPerParam × ActiveParams.
func (f *File) HouseActiveBytesPerToken() float64 {
	if f.ParamCount == 0 {
		return 0
	}
	// Multiply first: for a dense model the result is exactly the file size.
	return float64(f.Size) * float64(f.ActiveParams()) / float64(f.ParamCount)
}

// ActiveBytesPerToken is the tensor-exact weight bytes one generated token
// reads (docs/domain.md, "Ceiling"):
//
//	active bytes = non-expert tensor bytes − token_embd bytes + one token_embd row
//	             + expert tensor bytes × expert_used_count / expert_count
//
// The embedding lookup reads one row of token_embd.weight. When the
// embeddings are tied (no output.weight) the whole table is read again as
// the output projection, so it counts in full instead.
func (f *File) ActiveBytesPerToken() uint64 {
	k := f.TensorBytesByKind()
	b := k.NonExpertBytes
	if !k.TiedEmbeddings {
		b = b - k.TokenEmbdBytes + k.TokenEmbdRowBytes
	}
	return b + f.expertShare(k.ExpertBytes)
}
