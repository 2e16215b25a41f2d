package gguf

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.1, 0x2e66},
		{1.0 / 3, 0x3555},
		{65504, 0x7bff},       // largest half
		{65519.99, 0x7bff},    // rounds down
		{65520, 0x7c00},       // tie rounds to even: Inf
		{1e10, 0x7c00},        // overflow
		{0x1p-14, 0x0400},     // smallest normal
		{0x1p-24, 0x0001},     // smallest subnormal
		{0x1p-25, 0x0000},     // tie: rounds to even (zero)
		{0x1.8p-25, 0x0001},   // above the tie
		{0x1.8p-24, 0x0002},   // tie between 1 and 2: even
		{0x1p-30, 0x0000},     // underflow
		{1 + 0x1p-11, 0x3c00}, // tie: even
		{1 + 0x1.8p-11, 0x3c01},
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{float32(math.NaN()), 0x7e00},
	}
	for _, c := range cases {
		if got := F16(c.in); got != c.want {
			t.Errorf("F16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	// Every half (but NaN payloads) survives half -> float32 -> half.
	for h := range 1 << 16 {
		f := F16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if got := F16(f); got != uint16(h) {
			t.Fatalf("F16(F16ToFloat32(%#04x) = %g) = %#04x", h, f, got)
		}
	}
	// Random floats round to the nearest half, ties to even.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		x := float32((rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(44)-28)))
		h := F16(x)
		got := float64(F16ToFloat32(h))
		for _, n := range []uint16{h - 1, h + 1} {
			alt := float64(F16ToFloat32(n))
			if math.IsInf(alt, 0) || math.IsNaN(alt) || (n^h)&0x8000 != 0 {
				continue
			}
			d, dAlt := math.Abs(float64(x)-got), math.Abs(float64(x)-alt)
			if dAlt < d || (dAlt == d && h&1 == 1) {
				t.Fatalf("F16(%g) = %#04x (%g), but %#04x (%g) is nearer or the even tie", x, h, got, n, alt)
			}
		}
	}
}

func TestWriteDeterministicAndAtomic(t *testing.T) {
	kvs, ts := smallModel()
	a, b := encode(t, kvs, ts), encode(t, kvs, ts)
	if !bytes.Equal(a, b) {
		t.Fatal("two writes of the same model differ")
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := WriteFile(path, kvs, ts); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, a) {
		t.Fatalf("WriteFile wrote different bytes (%v)", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	// A failed write leaves nothing behind and keeps the old file.
	bad := []TensorData{{Name: "x", Type: GGMLTypeF32, Shape: []uint64{2}, Data: []byte{1}}}
	if err := WriteFile(path, kvs, bad); err == nil {
		t.Fatal("WriteFile accepted bad data")
	}
	entries, _ = os.ReadDir(filepath.Dir(path))
	if got2, _ := os.ReadFile(path); len(entries) != 1 || !bytes.Equal(got2, a) {
		t.Errorf("failed WriteFile disturbed the folder: %v", entries)
	}
}

func TestWriteErrors(t *testing.T) {
	f32 := TensorData{Name: "t", Type: GGMLTypeF32, Shape: []uint64{2}, Data: make([]byte, 8)}
	bad := KV{Key: "k", Type: TypeUint32, Value: "text"}
	cases := []struct {
		name string
		kvs  []KV
		ts   []TensorData
		want string
	}{
		{"duplicate key", []KV{NewKV("a", "x"), NewKV("a", "y")}, nil, `gguf write: duplicate key "a"`},
		{"empty key", []KV{NewKV("", "x")}, nil, `gguf write: key "": empty or longer than 65535 bytes`},
		{"type mismatch", []KV{bad}, nil, `gguf write: key "k": value string does not match type UINT32`},
		{"unsupported Go type", []KV{NewKV("k", 3)}, nil, `gguf write: key "k": unsupported value type int`},
		{"array mismatch", []KV{{Key: "k", Type: TypeArray, ArrayType: TypeInt32, Value: []uint32{1}}}, nil,
			`gguf write: key "k": value []uint32 does not match ARRAY/INT32`},
		{"nested mismatch", []KV{NewKV("k", []Array{{Type: TypeInt8, Value: []uint8{1}}})}, nil,
			`gguf write: key "k": item 0: value []uint8 does not match ARRAY/INT8`},
		{"alignment type", []KV{NewKV("general.alignment", uint64(32))}, nil,
			"gguf write: general.alignment must be a UINT32 power of 2, got UINT64 32"},
		{"alignment value", []KV{NewKV("general.alignment", uint32(24))}, nil,
			"gguf write: general.alignment must be a UINT32 power of 2, got UINT32 24"},
		{"duplicate tensor", nil, []TensorData{f32, f32}, `gguf write: duplicate tensor "t"`},
		{"long name", nil, []TensorData{{Name: strings.Repeat("n", 64), Type: GGMLTypeF32}},
			`gguf write: tensor name "` + strings.Repeat("n", 64) + `" is longer than 63 bytes`},
		{"data size", nil, []TensorData{{Name: "t", Type: GGMLTypeF32, Shape: []uint64{3}, Data: make([]byte, 8)}},
			`gguf write: tensor "t": 8 bytes of data, want 12 for F32 [3]`},
		{"block size", nil, []TensorData{{Name: "t", Type: GGMLTypeQ4_0, Shape: []uint64{16}}},
			`gguf write: tensor "t": ne0 16 is not a multiple of the Q4_0 block size 32`},
		{"unknown type", nil, []TensorData{{Name: "t", Type: 31}},
			`gguf write: tensor "t": unknown tensor type Q4_0_4_4(removed)`},
		{"dims", nil, []TensorData{{Name: "t", Type: GGMLTypeF32, Shape: []uint64{1, 1, 1, 1, 1}}},
			`gguf write: tensor "t": 5 dimensions, at most 4`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Write(&bytes.Buffer{}, c.kvs, c.ts)
			if err == nil || err.Error() != c.want {
				t.Errorf("got %v\nwant %s", err, c.want)
			}
		})
	}
}
