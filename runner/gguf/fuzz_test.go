package gguf

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds returns valid files and truncations of them: the small model,
// every value type, the committed tiny models' metadata and tensor tables
// (with shrunken tensors, so seeds stay small), and a header-only prefix.
func fuzzSeeds(t testing.TB) [][]byte {
	kvs, ts := smallModel()
	seeds := [][]byte{encode(t, kvs, ts), encode(t, everyValue(), []TensorData{
		{Name: "q4k", Type: GGMLTypeQ4_K, Shape: []uint64{256, 1}, Data: make([]byte, 144)},
		{Name: "mx", Type: GGMLTypeMXFP4, Shape: []uint64{32, 1, 1, 2}, Data: make([]byte, 34)},
	})}
	models, _ := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "models", "tiny-*.gguf"))
	for _, path := range models {
		f, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		small := make([]TensorData, len(f.Tensors))
		for i, tt := range f.Tensors {
			small[i] = TensorData{Name: tt.Name, Type: tt.Type, Shape: []uint64{2}, Data: make([]byte, 2*tt.Type.TypeSize())}
		}
		seeds = append(seeds, encode(t, f.KVs, small))
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, raw[:f.DataOffset]) // real table, data missing
	}
	n := len(seeds)
	for _, s := range seeds[:n] {
		for _, cut := range []int{0, 3, 4, 8, 23, 24, 40, len(s) / 3, len(s) / 2, len(s) - 1} {
			if cut < len(s) {
				seeds = append(seeds, s[:cut])
			}
		}
	}
	return seeds
}

func FuzzRead(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := readBytes(data)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Kind == nil || fe.Msg == "" {
				t.Fatalf("error is not a complete *FormatError: %#v", err)
			}
			return
		}
		checkInvariants(t, file, int64(len(data)))
	})
}

// checkInvariants holds for every file Read accepts.
func checkInvariants(t *testing.T, f *File, size int64) {
	if f.Size != size || (f.Version != 2 && f.Version != 3) || f.Alignment == 0 || f.Alignment&(f.Alignment-1) != 0 {
		t.Fatalf("header: size %d/%d version %d alignment %d", f.Size, size, f.Version, f.Alignment)
	}
	var total uint64
	for _, tt := range f.Tensors {
		end := uint64(f.DataOffset) + tt.Offset + tt.Size
		if end > uint64(size) || tt.Offset%f.Alignment != 0 || len(tt.Shape) > MaxDims || !tt.Type.Known() {
			t.Fatalf("tensor %+v accepted in a %d-byte file (data offset %d)", tt, size, f.DataOffset)
		}
		total += tt.Size
	}
	if total > uint64(size) {
		t.Fatalf("tensors hold %d bytes in a %d-byte file", total, size)
	}
	if err := WriteText(io.Discard, f); err != nil {
		t.Fatal(err)
	}
	b, err := f.MarshalJSON()
	if err != nil || !json.Valid(b) {
		t.Fatalf("JSON: %v\n%s", err, b)
	}
	_ = f.ActiveBytesPerToken() + f.ActiveParams()

	// What was read can be written again and reads back the same.
	if total > 1<<20 {
		return
	}
	ts := make([]TensorData, len(f.Tensors))
	for i, tt := range f.Tensors {
		ts[i] = TensorData{Name: tt.Name, Type: tt.Type, Shape: tt.Shape, Data: make([]byte, tt.Size)}
	}
	var buf bytes.Buffer
	if _, err := Write(&buf, f.KVs, ts); err != nil {
		t.Fatalf("cannot re-encode an accepted file: %v", err)
	}
	g, err := readBytes(buf.Bytes())
	if err != nil {
		t.Fatalf("re-encoded file does not read: %v", err)
	}
	if len(g.KVs) != len(f.KVs) || len(g.Tensors) != len(f.Tensors) {
		t.Fatalf("re-encoded: %d KVs %d tensors, want %d %d", len(g.KVs), len(g.Tensors), len(f.KVs), len(f.Tensors))
	}
	for i := range f.KVs {
		if a, b := f.KVs[i], g.KVs[i]; a.Key != b.Key || a.Type != b.Type || FormatValue(a, 1<<30) != FormatValue(b, 1<<30) {
			t.Fatalf("KV %d changed: %+v -> %+v", i, a, b)
		}
	}
	for i := range f.Tensors {
		if a, b := f.Tensors[i], g.Tensors[i]; a.Name != b.Name || a.Type != b.Type || a.Size != b.Size || formatShape(a.Shape) != formatShape(b.Shape) {
			t.Fatalf("tensor %d changed: %+v -> %+v", i, a, b)
		}
	}
}

// TestFuzzSeeds runs the fuzz body's checks over the seeds in plain
// go test runs, and makes sure most seeds are accepted.
func TestFuzzSeeds(t *testing.T) {
	ok := 0
	for _, s := range fuzzSeeds(t) {
		f, err := readBytes(s)
		if err == nil {
			ok++
			checkInvariants(t, f, int64(len(s)))
		}
	}
	if ok < 2 {
		t.Errorf("only %d seeds are valid files", ok)
	}
}
