package gguf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Array values in the JSON and text forms: arrays of up to
// ArrayPreviewFull items are listed in full, longer ones by their first
// ArrayPreviewItems items and "truncated": true (unless
// JSONOptions.FullArrays). The text form shows TextArrayItems items.
const (
	ArrayPreviewFull  = 64
	ArrayPreviewItems = 16
	TextArrayItems    = 8
)

// JSONView is the JSON form of a File (sparkbench model inspect --json).
// Field order, and so the encoding, is fixed.
type JSONView struct {
	Path                string  `json:"path"`
	Size                int64   `json:"size"`
	Version             uint32  `json:"version"`
	Alignment           uint64  `json:"alignment"`
	DataOffset          int64   `json:"data_offset"`
	Architecture        string  `json:"architecture"`
	Name                string  `json:"name"`
	ParamCount          uint64  `json:"param_count"`
	FileType            int64   `json:"file_type"`
	FileTypeName        string  `json:"file_type_name"`
	FileTypeDescription string  `json:"file_type_description"`
	ContextLength       uint64  `json:"context_length"`
	EmbeddingLength     uint64  `json:"embedding_length"`
	HeadCount           uint64  `json:"head_count"`
	HeadCountKV         uint64  `json:"head_count_kv"`
	BlockCount          uint64  `json:"block_count"`
	FeedForwardLength   uint64  `json:"feed_forward_length"`
	ExpertCount         uint64  `json:"expert_count"`
	ExpertUsedCount     uint64  `json:"expert_used_count"`
	VocabSize           uint64  `json:"vocab_size"`
	TensorBytes         uint64  `json:"tensor_bytes"`
	ExpertTensorBytes   uint64  `json:"expert_tensor_bytes"`
	ActiveParams        uint64  `json:"active_params"`
	ActiveBytesPerToken uint64  `json:"active_bytes_per_token"`
	FileBytesPerParam   float64 `json:"file_bytes_per_param"`
	HouseActiveBytes    float64 `json:"house_active_bytes_per_token"`
	TiedEmbeddings      bool    `json:"tied_embeddings"`

	KVCount     int          `json:"kv_count"`
	TensorCount int          `json:"tensor_count"`
	KVs         []JSONKV     `json:"kvs"`
	Tensors     []JSONTensor `json:"tensors"`
}

// JSONKV is one metadata entry. For arrays, Count is the item count and
// Value lists the items (all, or a preview with Truncated set); items of
// an array of arrays are objects {"array_type", "count", "value"[, "truncated"]}.
type JSONKV struct {
	Key       string `json:"key"`
	Type      string `json:"type"`
	ArrayType string `json:"array_type,omitempty"`
	Count     *int   `json:"count,omitempty"`
	Value     any    `json:"value"`
	Truncated bool   `json:"truncated,omitempty"`
}

// JSONTensor is one tensor table entry.
type JSONTensor struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	TypeID   uint32   `json:"type_id"`
	Shape    []uint64 `json:"shape"`
	Elements uint64   `json:"elements"`
	Offset   uint64   `json:"offset"`
	Size     uint64   `json:"size"`
}

// JSONOptions tunes the JSON form.
type JSONOptions struct {
	FullArrays bool // list every item of every array
}

// JSONView builds the JSON form of f. Floats that JSON cannot carry (NaN,
// ±Inf) appear as the strings "NaN", "+Inf", "-Inf".
func (f *File) JSONView(opt JSONOptions) JSONView {
	k := f.TensorBytesByKind()
	v := JSONView{
		Path: f.Path, Size: f.Size, Version: f.Version, Alignment: f.Alignment, DataOffset: f.DataOffset,
		Architecture: f.Architecture, Name: f.Name, ParamCount: f.ParamCount,
		FileType: f.FileType, FileTypeName: f.FileTypeName, FileTypeDescription: FileTypeDescription(f.FileType),
		ContextLength: f.ContextLength, EmbeddingLength: f.EmbeddingLength,
		HeadCount: f.HeadCount, HeadCountKV: f.HeadCountKV, BlockCount: f.BlockCount,
		FeedForwardLength: f.FeedForwardLength, ExpertCount: f.ExpertCount, ExpertUsedCount: f.ExpertUsedCount,
		VocabSize: f.VocabSize, TensorBytes: f.TensorBytes(), ExpertTensorBytes: k.ExpertBytes,
		ActiveParams: f.ActiveParams(), ActiveBytesPerToken: f.ActiveBytesPerToken(),
		FileBytesPerParam: f.FileBytesPerParam(), HouseActiveBytes: f.HouseActiveBytesPerToken(),
		TiedEmbeddings: k.TiedEmbeddings,
		KVCount:        len(f.KVs), TensorCount: len(f.Tensors),
		KVs:     make([]JSONKV, 0, len(f.KVs)),
		Tensors: make([]JSONTensor, 0, len(f.Tensors)),
	}
	for _, kv := range f.KVs {
		j := JSONKV{Key: kv.Key, Type: kv.Type.String()}
		if kv.Type == TypeArray {
			n := kv.Len()
			j.ArrayType, j.Count = kv.ArrayType.String(), &n
			j.Value, j.Truncated = jsonArray(kv.Value, opt.FullArrays)
		} else {
			j.Value = jsonScalar(kv.Value)
		}
		v.KVs = append(v.KVs, j)
	}
	for _, t := range f.Tensors {
		shape := t.Shape
		if shape == nil {
			shape = []uint64{}
		}
		v.Tensors = append(v.Tensors, JSONTensor{Name: t.Name, Type: t.Type.String(), TypeID: uint32(t.Type),
			Shape: shape, Elements: t.Elements(), Offset: t.Offset, Size: t.Size})
	}
	return v
}

// MarshalJSON encodes f's JSONView with array previews.
// Characters such as '<' are not escaped (token lists are full of them).
func (f *File) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, f, JSONOptions{}, ""); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// WriteJSON writes f's JSONView as one JSON document followed by a newline,
// indented with two spaces.
func WriteJSON(w io.Writer, f *File, opt JSONOptions) error { return writeJSON(w, f, opt, "  ") }

func writeJSON(w io.Writer, f *File, opt JSONOptions, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	return enc.Encode(f.JSONView(opt))
}

// jsonFloat encodes finite floats as numbers (shortest form that reads
// back to the same value at the given precision) and others as strings.
type jsonFloat struct {
	v    float64
	bits int
}

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	switch {
	case math.IsNaN(f.v):
		return []byte(`"NaN"`), nil
	case math.IsInf(f.v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f.v, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, f.v, 'g', -1, f.bits), nil
}

func jsonScalar(v any) any {
	switch x := v.(type) {
	case float32:
		return jsonFloat{float64(x), 32}
	case float64:
		return jsonFloat{x, 64}
	}
	return v
}

type jsonNested struct {
	ArrayType string `json:"array_type"`
	Count     int    `json:"count"`
	Value     any    `json:"value"`
	Truncated bool   `json:"truncated,omitempty"`
}

// jsonArray returns the items to show and whether some were left out.
func jsonArray(v any, full bool) (any, bool) {
	n := arrayLen(v)
	limit := n
	if !full && n > ArrayPreviewFull {
		limit = ArrayPreviewItems
	}
	items := make([]any, 0, limit)
	for i := range limit {
		item := arrayItem(v, i)
		if a, ok := item.(Array); ok {
			val, trunc := jsonArray(a.Value, full)
			item = jsonNested{ArrayType: a.Type.String(), Count: arrayLen(a.Value), Value: val, Truncated: trunc}
		} else {
			item = jsonScalar(item)
		}
		items = append(items, item)
	}
	return items, limit < n
}

// arrayItem returns item i of an array value.
func arrayItem(v any, i int) any {
	switch a := v.(type) {
	case []uint8:
		return a[i]
	case []int8:
		return a[i]
	case []uint16:
		return a[i]
	case []int16:
		return a[i]
	case []uint32:
		return a[i]
	case []int32:
		return a[i]
	case []float32:
		return a[i]
	case []bool:
		return a[i]
	case []string:
		return a[i]
	case []uint64:
		return a[i]
	case []int64:
		return a[i]
	case []float64:
		return a[i]
	case []Array:
		return a[i]
	}
	return nil
}

// FormatValue renders a metadata value for people: numbers in Go's
// shortest form (float32 at 32-bit precision), strings quoted with Go
// escapes, arrays as "[N items] [a, b, ...]" showing at most maxItems.
func FormatValue(kv KV, maxItems int) string {
	if kv.Type == TypeArray {
		return formatArray(kv.Value, maxItems)
	}
	return formatScalar(kv.Value)
}

func formatScalar(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case Array:
		return formatArray(x.Value, TextArrayItems)
	}
	return fmt.Sprint(v)
}

func formatArray(v any, maxItems int) string {
	n := arrayLen(v)
	var b strings.Builder
	fmt.Fprintf(&b, "[%d items] [", n)
	for i := range min(n, maxItems) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(formatScalar(arrayItem(v, i)))
	}
	if n > maxItems {
		b.WriteString(", ...")
	}
	b.WriteString("]")
	return b.String()
}

// WriteText writes the human form of f: a summary, the metadata (one key
// per line, arrays abbreviated) and the tensor table.
func WriteText(w io.Writer, f *File) error {
	k := f.TensorBytesByKind()
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	row := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{label}, args...)...)
	}
	row("file", "%s", safe(f.Path))
	row("size", "%d bytes", f.Size)
	row("gguf version", "%d", f.Version)
	row("alignment", "%d", f.Alignment)
	row("data offset", "%d", f.DataOffset)
	row("architecture", "%s", safe(f.Architecture))
	row("name", "%s", safe(f.Name))
	if f.FileType >= 0 {
		row("file type", "%s (%d: %s)", f.FileTypeName, f.FileType, FileTypeDescription(f.FileType))
	} else {
		row("file type", "absent (llama.cpp guesses from the tensor types)")
	}
	row("parameters", "%d", f.ParamCount)
	row("tensor bytes", "%d", f.TensorBytes())
	row("context length", "%d", f.ContextLength)
	row("embedding length", "%d", f.EmbeddingLength)
	row("heads", "%d (kv %d)", f.HeadCount, f.HeadCountKV)
	row("blocks", "%d", f.BlockCount)
	row("feed forward", "%d", f.FeedForwardLength)
	row("experts", "%d (used %d)", f.ExpertCount, f.ExpertUsedCount)
	row("vocabulary", "%d", f.VocabSize)
	row("active params", "%d", f.ActiveParams())
	tied := ""
	if k.TiedEmbeddings {
		tied = ", tied embeddings: output reads all of token_embd"
	}
	row("active bytes/token", "%d (tensor-exact%s)", f.ActiveBytesPerToken(), tied)
	row("active bytes/token", "%.0f (house: %.4f file bytes/param x active params)", f.HouseActiveBytesPerToken(), f.FileBytesPerParam())
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(tw, "\nmetadata (%d keys)\n", len(f.KVs))
	for _, kv := range f.KVs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", safe(kv.Key), typeName(kv), FormatValue(kv, TextArrayItems))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(tw, "\ntensors (%d)\n", len(f.Tensors))
	fmt.Fprintf(tw, "  name\ttype\tshape\toffset\tsize\n")
	for _, t := range f.Tensors {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\n", safe(t.Name), t.Type, formatShape(t.Shape), t.Offset, t.Size)
	}
	return tw.Flush()
}

func formatShape(s []uint64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatUint(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// safe returns s, or s quoted when it holds characters (tabs, newlines,
// invalid UTF-8) that would break the text layout.
func safe(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}
