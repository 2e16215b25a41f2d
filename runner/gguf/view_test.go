package gguf

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; if the change is intended, run with -update.\n--- got ---\n%s", path, got)
	}
}

// tinyModel reads the committed tiny dense model.
func tinyModel(t *testing.T, name string) *File {
	t.Helper()
	path := filepath.Join(repoRoot(t), "testdata", "models", name)
	f, err := ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate the models with: go run ./cmd/mkmodel -out testdata/models)", err)
	}
	f.Path = name // keep the golden files independent of the checkout's location
	return f
}

func TestTextGolden(t *testing.T) {
	for _, name := range []string{"tiny-llama-f32.gguf", "tiny-moe-f32.gguf"} {
		var b bytes.Buffer
		if err := WriteText(&b, tinyModel(t, name)); err != nil {
			t.Fatal(err)
		}
		golden(t, strings.TrimSuffix(name, ".gguf")+".txt", b.Bytes())
	}
}

func TestJSONGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, tinyModel(t, "tiny-moe-f32.gguf"), JSONOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "tiny-moe-f32.json", b.Bytes())
}

func TestJSONEveryKeyAndTensor(t *testing.T) {
	kvs := append(everyValue(), NewKV("a.long", make([]int32, 100)), NewKV("a.exactly64", make([]uint8, 64)))
	kvs = append(kvs, NewKV("t.nan", float32(0)))
	kvs[len(kvs)-1].Value = float32(nanValue())
	ts := []TensorData{{Name: "w", Type: GGMLTypeF16, Shape: []uint64{4, 2}, Data: make([]byte, 16)}}
	f, err := readBytes(encode(t, kvs, ts))
	if err != nil {
		t.Fatal(err)
	}
	b1, err := f.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := f.MarshalJSON()
	if !json.Valid(b1) || !bytes.Equal(b1, b2) {
		t.Fatalf("MarshalJSON not valid or not deterministic:\n%s\n%s", b1, b2)
	}
	// Through the json package (which HTML-escapes): the same document.
	b3, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var d1, d3 any
	if json.Unmarshal(b1, &d1) != nil || json.Unmarshal(b3, &d3) != nil || !equalJSON(d1, d3) {
		t.Errorf("json.Marshal(f) gives a different document:\n%s", b3)
	}
	var v struct {
		KVCount     int `json:"kv_count"`
		TensorCount int `json:"tensor_count"`
		KVs         []struct {
			Key       string
			Type      string
			ArrayType string `json:"array_type"`
			Count     *int
			Value     any
			Truncated bool
		}
		Tensors []JSONTensor
	}
	if err := json.Unmarshal(b1, &v); err != nil {
		t.Fatal(err)
	}
	if v.KVCount != len(kvs) || len(v.KVs) != len(kvs) || v.TensorCount != 1 || len(v.Tensors) != 1 {
		t.Fatalf("counts: %d/%d KVs, %d/%d tensors", v.KVCount, len(v.KVs), v.TensorCount, len(v.Tensors))
	}
	for i, kv := range v.KVs {
		if kv.Key != kvs[i].Key || kv.Type != kvs[i].Type.String() {
			t.Errorf("KV %d: %s %s, want %s %s", i, kv.Key, kv.Type, kvs[i].Key, kvs[i].Type)
		}
		if want := kvs[i].Type == TypeArray; (kv.Count != nil) != want {
			t.Errorf("KV %s: count present = %v, want %v", kv.Key, kv.Count != nil, want)
		}
	}
	byKey := map[string]int{}
	for i, kv := range v.KVs {
		byKey[kv.Key] = i
	}
	long := v.KVs[byKey["a.long"]]
	if *long.Count != 100 || !long.Truncated || len(long.Value.([]any)) != ArrayPreviewItems {
		t.Errorf("a.long: count %d truncated %v items %d", *long.Count, long.Truncated, len(long.Value.([]any)))
	}
	if e := v.KVs[byKey["a.exactly64"]]; e.Truncated || len(e.Value.([]any)) != 64 {
		t.Errorf("a.exactly64 truncated: %v", e.Truncated)
	}
	if got := v.KVs[byKey["t.nan"]].Value; got != "NaN" {
		t.Errorf("NaN encoded as %v", got)
	}
	if got := v.KVs[byKey["a.f32"]].Value; !equalJSON(got, []any{0.5, "-Inf", "NaN"}) {
		t.Errorf("a.f32 = %v", got)
	}
	nested := v.KVs[byKey["a.nested"]].Value.([]any)
	if !equalJSON(nested[1], map[string]any{"array_type": "ARRAY", "count": 1.0,
		"value": []any{map[string]any{"array_type": "INT32", "count": 3.0, "value": []any{1.0, 2.0, 3.0}}}}) {
		t.Errorf("nested array: %v", nested[1])
	}
	if tt := v.Tensors[0]; tt.Name != "w" || tt.Type != "F16" || tt.TypeID != 1 || tt.Size != 16 || tt.Elements != 8 {
		t.Errorf("tensor: %+v", tt)
	}
	if !strings.Contains(string(b1), `"<unk>"`) {
		t.Error("'<' is HTML-escaped in the JSON")
	}

	var full bytes.Buffer
	if err := WriteJSON(&full, f, JSONOptions{FullArrays: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(full.String(), `"truncated"`) {
		t.Error("FullArrays output still truncates")
	}
}

func nanValue() float64 { return -1 * zero() / zero() }
func zero() float64     { return 0 }

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestWriteTextEscapesLayoutBreakers(t *testing.T) {
	kvs := []KV{NewKV("key\twith\ntabs", "v\n"), NewKV("general.name", "bad\xffutf8")}
	ts := []TensorData{{Name: "t\tx", Type: GGMLTypeF32, Shape: []uint64{1}, Data: make([]byte, 4)}}
	f, err := readBytes(encode(t, kvs, ts))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, f); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`"key\twith\ntabs"`, `"v\n"`, `"bad\xffutf8"`, `"t\tx"`} {
		if !strings.Contains(out, want) {
			t.Errorf("text form lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\t") {
		t.Error("raw tab in the text form")
	}
}
