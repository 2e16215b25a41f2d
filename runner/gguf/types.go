package gguf

import "strconv"

// ValueType is the type tag of a GGUF metadata value (enum gguf_type in
// ggml's gguf.h). The names are those of gguf-py's GGUFValueType, which is
// also what llama.cpp's gguf tools print.
type ValueType uint32

// Metadata value types, numbered as in gguf.h.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	TypeUint8:   "UINT8",
	TypeInt8:    "INT8",
	TypeUint16:  "UINT16",
	TypeInt16:   "INT16",
	TypeUint32:  "UINT32",
	TypeInt32:   "INT32",
	TypeFloat32: "FLOAT32",
	TypeBool:    "BOOL",
	TypeString:  "STRING",
	TypeArray:   "ARRAY",
	TypeUint64:  "UINT64",
	TypeInt64:   "INT64",
	TypeFloat64: "FLOAT64",
}

// Valid reports whether t is one of the 13 types GGUF defines.
func (t ValueType) Valid() bool { return int(t) < len(valueTypeNames) }

// String returns the upper-case name ("UINT32", "ARRAY", ...), or
// "ValueType(N)" for an unknown tag.
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return "ValueType(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// fixedSize is the encoded size of a scalar of type t; 0 for STRING and ARRAY,
// whose size depends on their contents.
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one value of type t can occupy in a file: used
// to bound counts by the bytes that remain before anything is allocated.
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8 // length prefix, empty string
	case TypeArray:
		return 12 // element type + count, empty array
	}
	return t.fixedSize()
}

// GGMLType is a tensor element type (enum ggml_type in ggml.h).
type GGMLType uint32

// Tensor types, numbered as in ggml.h. Gaps are ids whose support has been
// removed (see removedTypes).
const (
	GGMLTypeF32     GGMLType = 0
	GGMLTypeF16     GGMLType = 1
	GGMLTypeQ4_0    GGMLType = 2
	GGMLTypeQ4_1    GGMLType = 3
	GGMLTypeQ5_0    GGMLType = 6
	GGMLTypeQ5_1    GGMLType = 7
	GGMLTypeQ8_0    GGMLType = 8
	GGMLTypeQ8_1    GGMLType = 9
	GGMLTypeQ2_K    GGMLType = 10
	GGMLTypeQ3_K    GGMLType = 11
	GGMLTypeQ4_K    GGMLType = 12
	GGMLTypeQ5_K    GGMLType = 13
	GGMLTypeQ6_K    GGMLType = 14
	GGMLTypeQ8_K    GGMLType = 15
	GGMLTypeIQ2_XXS GGMLType = 16
	GGMLTypeIQ2_XS  GGMLType = 17
	GGMLTypeIQ3_XXS GGMLType = 18
	GGMLTypeIQ1_S   GGMLType = 19
	GGMLTypeIQ4_NL  GGMLType = 20
	GGMLTypeIQ3_S   GGMLType = 21
	GGMLTypeIQ2_S   GGMLType = 22
	GGMLTypeIQ4_XS  GGMLType = 23
	GGMLTypeI8      GGMLType = 24
	GGMLTypeI16     GGMLType = 25
	GGMLTypeI32     GGMLType = 26
	GGMLTypeI64     GGMLType = 27
	GGMLTypeF64     GGMLType = 28
	GGMLTypeIQ1_M   GGMLType = 29
	GGMLTypeBF16    GGMLType = 30
	GGMLTypeTQ1_0   GGMLType = 34
	GGMLTypeTQ2_0   GGMLType = 35
	GGMLTypeMXFP4   GGMLType = 39
	GGMLTypeNVFP4   GGMLType = 40
	GGMLTypeQ1_0    GGMLType = 41
	GGMLTypeQ2_0    GGMLType = 42
)

// typeTraits is one row of ggml's type table: block size in elements and
// the bytes one block occupies.
type typeTraits struct {
	name      string
	blockSize uint64
	typeSize  uint64
}

// ggmlTypes is ggml's type_traits table (src/ggml.c), with each type_size
// taken from the static_assert on its block struct in src/ggml-common.h
// (QK_K = 256; ggml_half = 2 bytes). Source: github.com/ggml-org/ggml at
// commit d99724f2b141fed9e1a9f402213506c081433465 (2026-08-21).
var ggmlTypes = map[GGMLType]typeTraits{
	GGMLTypeF32:     {"F32", 1, 4},
	GGMLTypeF16:     {"F16", 1, 2},
	GGMLTypeQ4_0:    {"Q4_0", 32, 18},     // half d + 16 nibble bytes
	GGMLTypeQ4_1:    {"Q4_1", 32, 20},     // half d, m + 16
	GGMLTypeQ5_0:    {"Q5_0", 32, 22},     // half d + u32 qh + 16
	GGMLTypeQ5_1:    {"Q5_1", 32, 24},     // 2 halves + u32 qh + 16
	GGMLTypeQ8_0:    {"Q8_0", 32, 34},     // half d + 32
	GGMLTypeQ8_1:    {"Q8_1", 32, 36},     // 2 halves + 32
	GGMLTypeQ2_K:    {"Q2_K", 256, 84},    // 2 halves + 16 + 64
	GGMLTypeQ3_K:    {"Q3_K", 256, 110},   // half + 64 + 32 + 12
	GGMLTypeQ4_K:    {"Q4_K", 256, 144},   // 2 halves + 12 + 128
	GGMLTypeQ5_K:    {"Q5_K", 256, 176},   // 2 halves + 12 + 128 + 32
	GGMLTypeQ6_K:    {"Q6_K", 256, 210},   // half + 16 + 192
	GGMLTypeQ8_K:    {"Q8_K", 256, 292},   // float + 256 + 16 int16
	GGMLTypeIQ2_XXS: {"IQ2_XXS", 256, 66}, // half + 32 uint16
	GGMLTypeIQ2_XS:  {"IQ2_XS", 256, 74},  // half + 32 uint16 + 8
	GGMLTypeIQ3_XXS: {"IQ3_XXS", 256, 98}, // half + 96
	GGMLTypeIQ1_S:   {"IQ1_S", 256, 50},   // half + 32 + 16
	GGMLTypeIQ4_NL:  {"IQ4_NL", 32, 18},   // half + 16
	GGMLTypeIQ3_S:   {"IQ3_S", 256, 110},  // half + 13*8 + 4
	GGMLTypeIQ2_S:   {"IQ2_S", 256, 82},   // half + 64 + 16
	GGMLTypeIQ4_XS:  {"IQ4_XS", 256, 136}, // half + u16 + 4 + 128
	GGMLTypeI8:      {"I8", 1, 1},
	GGMLTypeI16:     {"I16", 1, 2},
	GGMLTypeI32:     {"I32", 1, 4},
	GGMLTypeI64:     {"I64", 1, 8},
	GGMLTypeF64:     {"F64", 1, 8},
	GGMLTypeIQ1_M:   {"IQ1_M", 256, 56}, // 32 + 16 + 8
	GGMLTypeBF16:    {"BF16", 1, 2},
	GGMLTypeTQ1_0:   {"TQ1_0", 256, 54}, // half + 4 + 48
	GGMLTypeTQ2_0:   {"TQ2_0", 256, 66}, // half + 64
	GGMLTypeMXFP4:   {"MXFP4", 32, 17},  // e8m0 scale + 16
	GGMLTypeNVFP4:   {"NVFP4", 64, 36},  // 4 e4m3 scales + 32
	GGMLTypeQ1_0:    {"Q1_0", 128, 18},  // half + 16
	GGMLTypeQ2_0:    {"Q2_0", 64, 18},   // half + 16
}

// removedTypes are ids ggml once defined and has since withdrawn from GGUF;
// files that use them load in no current llama.cpp.
var removedTypes = map[GGMLType]struct{ name, fix string }{
	4:  {"Q4_2", "re-quantize the model from its F16/F32 source"},
	5:  {"Q4_3", "re-quantize the model from its F16/F32 source"},
	31: {"Q4_0_4_4", "use a Q4_0 file; llama.cpp repacks Q4_0 at load time"},
	32: {"Q4_0_4_8", "use a Q4_0 file; llama.cpp repacks Q4_0 at load time"},
	33: {"Q4_0_8_8", "use a Q4_0 file; llama.cpp repacks Q4_0 at load time"},
	36: {"IQ4_NL_4_4", "use an IQ4_NL file; llama.cpp repacks IQ4_NL at load time"},
	37: {"IQ4_NL_4_8", "use an IQ4_NL file; llama.cpp repacks IQ4_NL at load time"},
	38: {"IQ4_NL_8_8", "use an IQ4_NL file; llama.cpp repacks IQ4_NL at load time"},
}

// ggmlTypeCount is GGML_TYPE_COUNT at the commit above.
const ggmlTypeCount = 43

// Known reports whether t is a tensor type this package can size.
func (t GGMLType) Known() bool { _, ok := ggmlTypes[t]; return ok }

// String returns the upper-case ggml name ("F32", "Q4_K", ...). Removed ids
// print as "Q4_0_4_4(removed)"; unknown ones as "GGMLType(N)".
func (t GGMLType) String() string {
	if tt, ok := ggmlTypes[t]; ok {
		return tt.name
	}
	if r, ok := removedTypes[t]; ok {
		return r.name + "(removed)"
	}
	return "GGMLType(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// BlockSize is the number of elements in one block (1 for plain types);
// 0 for an unknown type.
func (t GGMLType) BlockSize() uint64 { return ggmlTypes[t].blockSize }

// TypeSize is the number of bytes one block occupies; 0 for an unknown type.
func (t GGMLType) TypeSize() uint64 { return ggmlTypes[t].typeSize }

// fileTypeNames maps general.file_type (enum llama_ftype in llama.h) to
// the enum's name without its LLAMA_FTYPE_ prefix, and to the description
// llama.cpp prints (llama_model_ftype_name: "print_info: file type = ...",
// llama-bench's model_type).
var fileTypeNames = map[int64]struct{ name, desc string }{
	0:  {"ALL_F32", "all F32"},
	1:  {"MOSTLY_F16", "F16"},
	2:  {"MOSTLY_Q4_0", "Q4_0"},
	3:  {"MOSTLY_Q4_1", "Q4_1"},
	4:  {"MOSTLY_Q4_1_SOME_F16", "Q4_1, some F16"}, // removed from llama.cpp
	7:  {"MOSTLY_Q8_0", "Q8_0"},
	8:  {"MOSTLY_Q5_0", "Q5_0"},
	9:  {"MOSTLY_Q5_1", "Q5_1"},
	10: {"MOSTLY_Q2_K", "Q2_K - Medium"},
	11: {"MOSTLY_Q3_K_S", "Q3_K - Small"},
	12: {"MOSTLY_Q3_K_M", "Q3_K - Medium"},
	13: {"MOSTLY_Q3_K_L", "Q3_K - Large"},
	14: {"MOSTLY_Q4_K_S", "Q4_K - Small"},
	15: {"MOSTLY_Q4_K_M", "Q4_K - Medium"},
	16: {"MOSTLY_Q5_K_S", "Q5_K - Small"},
	17: {"MOSTLY_Q5_K_M", "Q5_K - Medium"},
	18: {"MOSTLY_Q6_K", "Q6_K"},
	19: {"MOSTLY_IQ2_XXS", "IQ2_XXS - 2.0625 bpw"},
	20: {"MOSTLY_IQ2_XS", "IQ2_XS - 2.3125 bpw"},
	21: {"MOSTLY_Q2_K_S", "Q2_K - Small"},
	22: {"MOSTLY_IQ3_XS", "IQ3_XS - 3.3 bpw"},
	23: {"MOSTLY_IQ3_XXS", "IQ3_XXS - 3.0625 bpw"},
	24: {"MOSTLY_IQ1_S", "IQ1_S - 1.5625 bpw"},
	25: {"MOSTLY_IQ4_NL", "IQ4_NL - 4.5 bpw"},
	26: {"MOSTLY_IQ3_S", "IQ3_S - 3.4375 bpw"},
	27: {"MOSTLY_IQ3_M", "IQ3_S mix - 3.66 bpw"},
	28: {"MOSTLY_IQ2_S", "IQ2_S - 2.5 bpw"},
	29: {"MOSTLY_IQ2_M", "IQ2_M - 2.7 bpw"},
	30: {"MOSTLY_IQ4_XS", "IQ4_XS - 4.25 bpw"},
	31: {"MOSTLY_IQ1_M", "IQ1_M - 1.75 bpw"},
	32: {"MOSTLY_BF16", "BF16"},
	33: {"MOSTLY_Q4_0_4_4", "Q4_0_4_4 (removed)"},
	34: {"MOSTLY_Q4_0_4_8", "Q4_0_4_8 (removed)"},
	35: {"MOSTLY_Q4_0_8_8", "Q4_0_8_8 (removed)"},
	36: {"MOSTLY_TQ1_0", "TQ1_0 - 1.69 bpw ternary"},
	37: {"MOSTLY_TQ2_0", "TQ2_0 - 2.06 bpw ternary"},
	38: {"MOSTLY_MXFP4_MOE", "MXFP4 MoE"},
	39: {"MOSTLY_NVFP4", "NVFP4"},
}

// FileTypeName returns the llama_ftype name for general.file_type
// ("ALL_F32", "MOSTLY_F16", "MOSTLY_Q4_K_M", ...), "" for -1 (key absent)
// and "UNKNOWN_<n>" for an id this package does not know.
func FileTypeName(ft int64) string {
	if ft < 0 {
		return ""
	}
	if n, ok := fileTypeNames[ft]; ok {
		return n.name
	}
	return "UNKNOWN_" + strconv.FormatInt(ft, 10)
}

// FileTypeDescription returns the text llama.cpp prints for a file type
// ("all F32", "Q4_K - Medium"); "(guessed)" for -1, when llama.cpp guesses
// from the tensor types, and "unknown, may not work" otherwise.
func FileTypeDescription(ft int64) string {
	if ft < 0 {
		return "(guessed)"
	}
	if n, ok := fileTypeNames[ft]; ok {
		return n.desc
	}
	return "unknown, may not work"
}
