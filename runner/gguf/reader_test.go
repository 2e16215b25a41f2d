package gguf

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

// TestTypeSizes checks the type table against gguf-py's GGML_QUANT_SIZES
// (gguf-py/gguf/constants.py, same expressions), an independent copy of
// ggml's block sizes, and the ids against ggml.h.
func TestTypeSizes(t *testing.T) {
	const qk = 256
	cases := []struct {
		id         uint32
		name       string
		blck, size uint64
	}{
		{0, "F32", 1, 4},
		{1, "F16", 1, 2},
		{2, "Q4_0", 32, 2 + 16},
		{3, "Q4_1", 32, 2 + 2 + 16},
		{6, "Q5_0", 32, 2 + 4 + 16},
		{7, "Q5_1", 32, 2 + 2 + 4 + 16},
		{8, "Q8_0", 32, 2 + 32},
		{9, "Q8_1", 32, 2 + 2 + 32},
		{10, "Q2_K", 256, 2 + 2 + qk/16 + qk/4},
		{11, "Q3_K", 256, 2 + qk/4 + qk/8 + 12},
		{12, "Q4_K", 256, 2 + 2 + qk/2 + 12},
		{13, "Q5_K", 256, 2 + 2 + qk/2 + qk/8 + 12},
		{14, "Q6_K", 256, 2 + qk/2 + qk/4 + qk/16},
		{15, "Q8_K", 256, 4 + qk + qk/8},
		{16, "IQ2_XXS", 256, 2 + qk/4},
		{17, "IQ2_XS", 256, 2 + qk/4 + qk/32},
		{18, "IQ3_XXS", 256, 2 + qk/4 + qk/8},
		{19, "IQ1_S", 256, 2 + qk/8 + qk/16},
		{20, "IQ4_NL", 32, 2 + 16},
		{21, "IQ3_S", 256, 2 + qk/4 + qk/8 + qk/32 + 4},
		{22, "IQ2_S", 256, 2 + qk/4 + qk/16},
		{23, "IQ4_XS", 256, 2 + 2 + qk/2 + qk/64},
		{24, "I8", 1, 1},
		{25, "I16", 1, 2},
		{26, "I32", 1, 4},
		{27, "I64", 1, 8},
		{28, "F64", 1, 8},
		{29, "IQ1_M", 256, qk/8 + qk/16 + qk/32},
		{30, "BF16", 1, 2},
		{34, "TQ1_0", 256, 2 + 4*13},
		{35, "TQ2_0", 256, 2 + 64},
		{39, "MXFP4", 32, 1 + 16},
		{40, "NVFP4", 64, 4 + 32},
		{41, "Q1_0", 128, 2 + 16},
		{42, "Q2_0", 64, 2 + 16},
	}
	if len(cases) != len(ggmlTypes) {
		t.Errorf("table has %d types, test lists %d", len(ggmlTypes), len(cases))
	}
	for _, c := range cases {
		typ := GGMLType(c.id)
		if typ.String() != c.name || typ.BlockSize() != c.blck || typ.TypeSize() != c.size {
			t.Errorf("type %d: %s blck %d size %d, want %s %d %d", c.id, typ, typ.BlockSize(), typ.TypeSize(), c.name, c.blck, c.size)
		}
		// A [2*blck, 3, 2] tensor: size = 2 blocks per row * 6 rows.
		ne0 := 2 * c.blck
		r := new(raw).header(3, 1, 0).tensor("t", typ, 0, ne0, 3, 2).padTo(32)
		r.zeros(int(12 * c.size))
		f, err := readBytes(r.Bytes())
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := f.Tensors[0]; got.Size != 12*c.size || got.Elements() != ne0*6 {
			t.Errorf("%s: size %d elements %d, want %d and %d", c.name, got.Size, got.Elements(), 12*c.size, ne0*6)
		}
	}
	for id := range uint32(ggmlTypeCount + 2) {
		typ := GGMLType(id)
		_, removed := removedTypes[typ]
		if typ.Known() == removed && id < ggmlTypeCount {
			t.Errorf("type %d: known=%v removed=%v; every id below GGML_TYPE_COUNT is one or the other", id, typ.Known(), removed)
		}
	}
	if GGMLType(31).String() != "Q4_0_4_4(removed)" || GGMLType(77).String() != "GGMLType(77)" {
		t.Errorf("names of removed/unknown types: %s %s", GGMLType(31), GGMLType(77))
	}
}

// everyValue covers every metadata type, arrays of each, and nesting.
func everyValue() []KV {
	return []KV{
		NewKV("t.u8", uint8(200)),
		NewKV("t.i8", int8(-100)),
		NewKV("t.u16", uint16(60000)),
		NewKV("t.i16", int16(-30000)),
		NewKV("t.u32", uint32(4_000_000_000)),
		NewKV("t.i32", int32(-2_000_000_000)),
		NewKV("t.f32", float32(9.999999747378752e-06)),
		NewKV("t.bool", true),
		NewKV("t.string", "héllo\tworld"),
		NewKV("t.empty_string", ""),
		NewKV("t.u64", uint64(math.MaxUint64)),
		NewKV("t.i64", int64(math.MinInt64)),
		NewKV("t.f64", math.Pi),
		NewKV("a.u8", []uint8{1, 2, 255}),
		NewKV("a.i8", []int8{-1, 0, 127}),
		NewKV("a.u16", []uint16{1, 65535}),
		NewKV("a.i16", []int16{-32768, 1}),
		NewKV("a.u32", []uint32{7, 8, 9}),
		NewKV("a.i32", []int32{-7, 8}),
		NewKV("a.f32", []float32{0.5, float32(math.Inf(-1)), float32(math.NaN())}),
		NewKV("a.bool", []bool{true, false, true}),
		NewKV("a.string", []string{"<unk>", "", "\x00\xff"}),
		NewKV("a.u64", []uint64{1 << 63}),
		NewKV("a.i64", []int64{-1}),
		NewKV("a.f64", []float64{1e300, -0.0}),
		NewKV("a.empty", []uint32{}),
		NewKV("a.nested", []Array{
			{Type: TypeString, Value: []string{"x", "y"}},
			{Type: TypeArray, Value: []Array{{Type: TypeInt32, Value: []int32{1, 2, 3}}}},
			{Type: TypeFloat32, Value: []float32{}},
		}),
	}
}

func TestRoundTripEveryValueType(t *testing.T) {
	kvs := everyValue()
	ts := []TensorData{
		{Name: "scalar", Type: GGMLTypeF32, Shape: nil, Data: f32s(1, 2)},
		{Name: "q", Type: GGMLTypeQ8_0, Shape: []uint64{64, 2}, Data: make([]byte, 4*34)},
		{Name: "empty", Type: GGMLTypeF16, Shape: []uint64{0, 5}, Data: nil},
		{Name: "4d", Type: GGMLTypeI8, Shape: []uint64{2, 3, 4, 5}, Data: make([]byte, 120)},
	}
	b := encode(t, kvs, ts)
	f, err := readBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.KVs) != len(kvs) {
		t.Fatalf("%d KVs, want %d", len(f.KVs), len(kvs))
	}
	for i, want := range kvs {
		got := f.KVs[i]
		// NaN != NaN: compare through the text form for float arrays.
		if got.Key != want.Key || got.Type != want.Type || got.ArrayType != want.ArrayType ||
			FormatValue(got, 100) != FormatValue(want, 100) || reflect.TypeOf(got.Value) != reflect.TypeOf(want.Value) {
			t.Errorf("KV %d:\n got %s %s/%s %T %s\nwant %s %s/%s %T %s", i,
				got.Key, got.Type, got.ArrayType, got.Value, FormatValue(got, 100),
				want.Key, want.Type, want.ArrayType, want.Value, FormatValue(want, 100))
		}
	}
	wantTensors := []Tensor{
		{Name: "scalar", Type: GGMLTypeF32, Shape: []uint64{}, Offset: 0, Size: 4},
		{Name: "q", Type: GGMLTypeQ8_0, Shape: []uint64{64, 2}, Offset: 32, Size: 136},
		{Name: "empty", Type: GGMLTypeF16, Shape: []uint64{0, 5}, Offset: 192, Size: 0},
		{Name: "4d", Type: GGMLTypeI8, Shape: []uint64{2, 3, 4, 5}, Offset: 192, Size: 120},
	}
	if !reflect.DeepEqual(f.Tensors, wantTensors) {
		t.Errorf("tensors\n got %+v\nwant %+v", f.Tensors, wantTensors)
	}
	if f.DataOffset%32 != 0 || f.Size != int64(len(b)) || f.Size != f.DataOffset+192+128 {
		t.Errorf("data offset %d size %d (len %d)", f.DataOffset, f.Size, len(b))
	}
	if f.ParamCount != 1+128+0+120 {
		t.Errorf("param count %d, want 249", f.ParamCount)
	}
	// Writing what was read gives the same bytes (the writer is deterministic
	// and the reader loses nothing).
	again := encode(t, f.KVs, ts)
	if !bytes.Equal(again, b) {
		t.Error("re-encoding the read KVs changed the bytes")
	}
}

func TestReadVersion2AndEmptyTables(t *testing.T) {
	kvs, ts := smallModel()
	b := encode(t, kvs, ts)
	b[4] = 2 // v2 and v3 share the little-endian layout
	f, err := readBytes(b)
	if err != nil || f.Version != 2 || len(f.Tensors) != 2 {
		t.Fatalf("v2: %v %+v", err, f)
	}

	// No tensors: the data section starts right after the metadata, unpadded.
	b = encode(t, []KV{NewKV("general.architecture", "x")}, nil)
	f, err = readBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.DataOffset != int64(len(b)) || f.DataOffset != 24+8+20+4+8+1 {
		t.Errorf("data offset %d, file %d bytes", f.DataOffset, len(b))
	}
	if f.FileType != -1 || f.FileTypeName != "" || f.ParamCount != 0 || f.ActiveBytesPerToken() != 0 || f.FileBytesPerParam() != 0 {
		t.Errorf("empty model summary: %+v", f)
	}

	f, err = readBytes(new(raw).header(3, 0, 0).Bytes())
	if err != nil || f.DataOffset != 24 || len(f.KVs) != 0 {
		t.Errorf("bare header: %v %+v", err, f)
	}
}

func TestAlignmentHonoured(t *testing.T) {
	kvs, ts := smallModel()
	kvs = append(kvs, NewKV("general.alignment", uint32(64)))
	b := encode(t, kvs, ts)
	f, err := readBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 || f.Tensors[1].Offset != 64 || len(b)%64 != 0 {
		t.Errorf("alignment %d data offset %d offsets %d, %d bytes", f.Alignment, f.DataOffset, f.Tensors[1].Offset, len(b))
	}
}

// moeFile is a two-block MoE shaped like the generated tiny-moe model,
// with small dimensions: n_embd 8, n_ff 16, 4 experts, vocab 10.
func moeFile(t *testing.T, used uint32, withOutput bool) *File {
	t.Helper()
	kvs := []KV{
		NewKV("general.architecture", "llama"),
		NewKV("general.file_type", uint32(15)),
		NewKV("llama.context_length", uint32(2048)),
		NewKV("llama.embedding_length", uint32(8)),
		NewKV("llama.block_count", uint32(1)),
		NewKV("llama.feed_forward_length", []int32{16}), // per-layer form
		NewKV("llama.attention.head_count", uint16(2)),
		NewKV("llama.expert_count", uint32(4)),
		NewKV("llama.expert_used_count", used),
		NewKV("llama.vocab_size", uint32(10)),
	}
	f32 := func(name string, shape ...uint64) TensorData {
		n := uint64(1)
		for _, d := range shape {
			n *= d
		}
		return TensorData{Name: name, Type: GGMLTypeF32, Shape: shape, Data: make([]byte, 4*n)}
	}
	ts := []TensorData{
		f32("token_embd.weight", 8, 10),           // 80 params, 320 B, row 32 B
		f32("blk.0.attn_q.weight", 8, 8),          // 64, 256 B
		f32("blk.0.ffn_gate_inp.weight", 8, 4),    // 32, 128 B (router: not an expert tensor)
		f32("blk.0.ffn_up_exps.weight", 8, 16, 4), // 512, 2048 B
		f32("blk.0.ffn_down_exps.weight", 16, 8, 4),
		f32("blk.0.ffn_up_shexp.weight", 8, 16), // 128, 512 B (shared expert: always read)
	}
	if withOutput {
		ts = append(ts, f32("output.weight", 8, 10)) // 80, 320 B
	}
	f, err := readBytes(encode(t, kvs, ts))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSummaryAndActiveBytes(t *testing.T) {
	f := moeFile(t, 2, true)
	if f.Architecture != "llama" || f.FileType != 15 || f.FileTypeName != "MOSTLY_Q4_K_M" ||
		FileTypeDescription(f.FileType) != "Q4_K - Medium" {
		t.Errorf("names: %q %d %q", f.Architecture, f.FileType, f.FileTypeName)
	}
	if f.ContextLength != 2048 || f.EmbeddingLength != 8 || f.FeedForwardLength != 16 || f.HeadCount != 2 ||
		f.HeadCountKV != 2 || f.BlockCount != 1 || f.ExpertCount != 4 || f.ExpertUsedCount != 2 || f.VocabSize != 10 {
		t.Errorf("summary: %+v", f)
	}
	k := f.TensorBytesByKind()
	want := TensorKinds{
		ExpertBytes: 4096, ExpertParams: 1024,
		NonExpertBytes: 320 + 256 + 128 + 512 + 320, NonExpertParams: 80 + 64 + 32 + 128 + 80,
		TokenEmbdBytes: 320, TokenEmbdRowBytes: 32,
	}
	if k != want {
		t.Errorf("kinds\n got %+v\nwant %+v", k, want)
	}
	if f.ParamCount != 1024+384 {
		t.Errorf("params %d", f.ParamCount)
	}
	// non-expert 384 + expert 1024 * 2/4.
	if got := f.ActiveParams(); got != 384+512 {
		t.Errorf("active params %d, want 896", got)
	}
	// non-expert bytes minus the embedding table plus one row, plus half the expert bytes.
	if got := f.ActiveBytesPerToken(); got != 1536-320+32+2048 {
		t.Errorf("active bytes %d, want %d", got, 1536-320+32+2048)
	}
	if got, want := f.HouseActiveBytesPerToken(), float64(f.Size)*896/1408; got != want {
		t.Errorf("house active bytes %v, want %v", got, want)
	}

	// Tied embeddings: no output.weight, so the whole table is read per token.
	tied := moeFile(t, 2, false)
	if k := tied.TensorBytesByKind(); !k.TiedEmbeddings {
		t.Error("tied embeddings not detected")
	}
	if got := tied.ActiveBytesPerToken(); got != 1216+2048 {
		t.Errorf("tied active bytes %d, want %d", got, 1216+2048)
	}
	// expert_used_count 0 or >= expert_count: all experts count.
	if got := moeFile(t, 0, true).ActiveParams(); got != 1408 {
		t.Errorf("used=0: active params %d, want all 1408", got)
	}
	if got := moeFile(t, 9, true).ActiveParams(); got != 1408 {
		t.Errorf("used>count: active params %d, want all 1408", got)
	}
}

func TestExpertShareNoOverflow(t *testing.T) {
	f := &File{ExpertCount: 256, ExpertUsedCount: 8}
	if got := f.expertShare(math.MaxUint64); got != math.MaxUint64/256*8+7 {
		t.Errorf("expertShare(max) = %d", got)
	}
}

func TestLookupHelpers(t *testing.T) {
	f, err := readBytes(encode(t, everyValue(), nil))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]uint64{"t.u8": 200, "t.u64": math.MaxUint64, "a.u32": 9, "a.i32": 8} {
		if got, ok := f.GetUint(key); !ok || got != want {
			t.Errorf("GetUint(%s) = %d %v, want %d", key, got, ok, want)
		}
	}
	for _, key := range []string{"t.i8", "t.f32", "t.string", "a.string", "missing", "a.i64"} {
		if got, ok := f.GetUint(key); ok {
			t.Errorf("GetUint(%s) = %d, want not ok", key, got)
		}
	}
	if s, ok := f.GetString("t.string"); !ok || s != "héllo\tworld" {
		t.Errorf("GetString = %q %v", s, ok)
	}
	if _, ok := f.GetString("t.u8"); ok {
		t.Error("GetString of a number succeeded")
	}
	if kv, ok := f.Lookup("a.nested"); !ok || kv.Len() != 3 {
		t.Errorf("Lookup(a.nested) = %+v %v", kv, ok)
	}
}

func TestFileTypeNames(t *testing.T) {
	for ft, want := range map[int64][2]string{
		-1: {"", "(guessed)"}, 0: {"ALL_F32", "all F32"}, 1: {"MOSTLY_F16", "F16"},
		15: {"MOSTLY_Q4_K_M", "Q4_K - Medium"}, 38: {"MOSTLY_MXFP4_MOE", "MXFP4 MoE"},
		5: {"UNKNOWN_5", "unknown, may not work"}, 1024: {"UNKNOWN_1024", "unknown, may not work"},
	} {
		if got := [2]string{FileTypeName(ft), FileTypeDescription(ft)}; got != want {
			t.Errorf("file type %d: %q, want %q", ft, got, want)
		}
	}
}
