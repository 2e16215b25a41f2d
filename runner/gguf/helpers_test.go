package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// repoRoot walks up from the package folder to the folder holding go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

// raw builds GGUF bytes by hand, for files the writer refuses to make.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) zeros(n int) *raw  { r.Write(make([]byte, n)); return r }

// header writes magic, version and counts.
func (r *raw) header(version uint32, nTensors, nKV uint64) *raw {
	r.WriteString("GGUF")
	return r.u32(version).u64(nTensors).u64(nKV)
}

// tensor writes one tensor-table entry.
func (r *raw) tensor(name string, typ GGMLType, off uint64, shape ...uint64) *raw {
	r.str(name).u32(uint32(len(shape)))
	for _, d := range shape {
		r.u64(d)
	}
	return r.u32(uint32(typ)).u64(off)
}

// padTo appends zeros up to a multiple of align.
func (r *raw) padTo(align int) *raw {
	for r.Len()%align != 0 {
		r.WriteByte(0)
	}
	return r
}

// f32s returns the little-endian bytes of n copies of v.
func f32s(n int, v float32) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// encode writes a file with the package writer and fails the test on error.
func encode(t testing.TB, kvs []KV, ts []TensorData) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := Write(&b, kvs, ts)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("Write returned %d, wrote %d bytes", n, b.Len())
	}
	return b.Bytes()
}

func readBytes(b []byte) (*File, error) { return Read(bytes.NewReader(b), int64(len(b))) }

// smallModel is a valid two-tensor llama-like file.
func smallModel() ([]KV, []TensorData) {
	kvs := []KV{
		NewKV("general.architecture", "llama"),
		NewKV("general.name", "small"),
		NewKV("llama.block_count", uint32(1)),
	}
	ts := []TensorData{
		{Name: "token_embd.weight", Type: GGMLTypeF32, Shape: []uint64{4, 3}, Data: f32s(12, 0.5)},
		{Name: "output_norm.weight", Type: GGMLTypeF32, Shape: []uint64{4}, Data: f32s(4, 1)},
	}
	return kvs, ts
}
