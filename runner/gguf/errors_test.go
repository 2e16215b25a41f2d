package gguf

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const redownload = "; the file is corrupted or incomplete: download it again and check its SHA-256"

// kvFile returns a v3 header with one KV whose type and value bytes follow.
func kvFile(key string, typ ValueType, value func(r *raw)) []byte {
	r := new(raw).header(3, 0, 1)
	r.str(key).u32(uint32(typ))
	value(r)
	return r.Bytes()
}

// tensorFile returns a v3 file with the given tensor entries and dataBytes
// of data after the aligned data offset.
func tensorFile(dataBytes int, entries func(r *raw), n uint64) []byte {
	r := new(raw).header(3, n, 0)
	entries(r)
	r.padTo(32).zeros(dataBytes)
	return r.Bytes()
}

func TestReadErrors(t *testing.T) {
	small := func() []byte { kvs, ts := smallModel(); return encode(t, kvs, ts) }
	// nested returns an array value nested depth deep.
	nested := func(depth int) func(r *raw) {
		return func(r *raw) {
			for range depth - 1 {
				r.u32(uint32(TypeArray)).u64(1)
			}
			r.u32(uint32(TypeUint8)).u64(0)
		}
	}

	cases := []struct {
		name string
		data []byte
		kind error
		want string
	}{
		{"empty", nil, ErrEmpty,
			"gguf: empty file (0 bytes); download it again, or pass a .gguf model file"},
		{"too short", []byte("GG"), ErrNotGGUF,
			"gguf: not a GGUF file: only 2 bytes ('GG'), too short for the 4-byte magic 'GGUF'; pass a .gguf model file"},
		{"hosts file", []byte("127.0.0.1 localhost\n"), ErrNotGGUF,
			"gguf: not a GGUF file: invalid magic characters: '127.', expected 'GGUF' (bytes 31 32 37 2e); pass a .gguf model file"},
		{"ELF binary", []byte("\x7fELF\x02\x01\x01\x00"), ErrNotGGUF,
			"gguf: not a GGUF file: invalid magic characters: '?ELF', expected 'GGUF' (bytes 7f 45 4c 46); pass a .gguf model file"},
		{"old GGML", []byte("tjgg\x03\x00\x00\x00"), ErrNotGGUF,
			"gguf: not a GGUF file: invalid magic characters: 'tjgg', expected 'GGUF' (bytes 74 6a 67 67); " +
				"this is a pre-GGUF GGML model: convert it with llama.cpp's convert_llama_ggml_to_gguf.py"},
		{"version 1", new(raw).header(1, 0, 0).Bytes(), ErrUnsupportedVersion,
			"gguf: byte 4: GGUF version 1 is no longer supported; convert the model again with a current llama.cpp (convert_hf_to_gguf.py)"},
		{"version 0", new(raw).header(0, 0, 0).Bytes(), ErrUnsupportedVersion,
			"gguf: byte 4: bad GGUF version 0" + redownload},
		{"version 4", new(raw).header(4, 0, 0).Bytes(), ErrUnsupportedVersion,
			"gguf: byte 4: GGUF version 4 is newer than this reader supports (2 and 3); update sparkbench, or use a file written by an older llama.cpp"},
		{"big-endian", []byte("GGUF\x00\x00\x00\x03" + strings.Repeat("\x00", 16)), ErrBigEndian,
			"gguf: byte 4: version field reads 50331648 (0x03000000): this is a big-endian GGUF file; " +
				"only little-endian files are supported: use a little-endian build of the model (or gguf-py's gguf_convert_endian.py)"},
		{"truncated version", []byte("GGUF\x03\x00"), ErrTruncated,
			"gguf: file ends at byte 6 while reading the version (4 bytes at byte 4)" + redownload},
		{"truncated counts", new(raw).header(3, 0, 0).Bytes()[:12], ErrTruncated,
			"gguf: file ends at byte 12 while reading the tensor count (8 bytes at byte 8)" + redownload},
		{"tensor count over limit", new(raw).header(3, 1<<40, 0).Bytes(), ErrLimit,
			"gguf: byte 8: tensor count 1099511627776 exceeds the limit of 1048576" + redownload},
		{"kv count over limit", new(raw).header(3, 0, 1<<62).Bytes(), ErrLimit,
			"gguf: byte 16: metadata count 4611686018427387904 exceeds the limit of 1048576" + redownload},
		{"counts beyond file", new(raw).header(3, 5, 3).Bytes(), ErrTruncated,
			"gguf: file ends at byte 24, but its header declares 3 metadata entries and 5 tensors, which need at least 162 more bytes" + redownload},
		{"key length absurd", new(raw).header(3, 0, 1).u64(1 << 40).zeros(8).Bytes(), ErrLimit,
			"gguf: byte 24: string length 1099511627776 while reading the key of metadata entry 1 of 1 exceeds the limit of 65535 bytes" + redownload},
		{"key beyond file", new(raw).header(3, 0, 1).u64(100).zeros(8).Bytes(), ErrTruncated,
			"gguf: file ends at byte 40 while reading the key of metadata entry 1 of 1 (100 bytes at byte 32)" + redownload},
		{"empty key", new(raw).header(3, 0, 1).str("").u32(0).zeros(2).Bytes(), ErrInvalid,
			"gguf: byte 24: metadata entry 1 of 1 has an empty key" + redownload},
		{"duplicate key", new(raw).header(3, 0, 2).str("a.b").u32(uint32(TypeUint8)).zeros(1).
			str("a.b").u32(uint32(TypeUint8)).zeros(1).Bytes(), ErrDuplicate,
			"gguf: byte 40: duplicate key 'a.b' (metadata entries 1 and 2)" + redownload},
		{"bad value type", kvFile("k", 13, func(r *raw) { r.zeros(4) }), ErrInvalid,
			"gguf: byte 33: key 'k' has invalid value type 13 (valid: 0 to 12)" + redownload},
		{"truncated value", kvFile("general.name", TypeString, func(r *raw) { r.u64(10).zeros(3) }), ErrTruncated,
			"gguf: file ends at byte 59 while reading the value of key 'general.name' (10 bytes at byte 56)" + redownload},
		{"truncated u32", kvFile("n", TypeUint32, func(r *raw) { r.zeros(2) }), ErrTruncated,
			"gguf: file ends at byte 39 while reading the value of key 'n' (4 bytes at byte 37)" + redownload},
		{"bad array type", kvFile("k", TypeArray, func(r *raw) { r.u32(99).u64(0) }), ErrInvalid,
			"gguf: byte 37: the value of key 'k' has invalid array element type 99 (valid: 0 to 12)" + redownload},
		{"array over limit", kvFile("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint8)).u64(1 << 31) }), ErrLimit,
			"gguf: byte 41: the value of key 'k' has 2147483648 items, more than the limit of 1073741824" + redownload},
		{"array beyond file", kvFile("k", TypeArray, func(r *raw) { r.u32(uint32(TypeString)).u64(1000).zeros(16) }), ErrTruncated,
			"gguf: byte 41: file ends at byte 65 while reading the value of key 'k': an array of 1000 STRING items needs at least 8000 bytes, 16 remain" + redownload},
		{"truncated array item", kvFile("tokenizer.ggml.tokens", TypeArray, func(r *raw) {
			r.u32(uint32(TypeString)).u64(3).str("<unk>").str("<s>").u64(4).WriteString("</")
		}), ErrTruncated,
			"gguf: file ends at byte 103 while reading item 3 of 3 of the value of key 'tokenizer.ggml.tokens' (4 bytes at byte 101)" + redownload},
		{"arrays nested too deep", kvFile("k", TypeArray, nested(MaxArrayDepth+1)), ErrLimit,
			"gguf: byte 121: item 1 of 1 of the value of key 'k' nests arrays more than 8 deep" + redownload},
		{"alignment type", kvFile("general.alignment", TypeUint64, func(r *raw) { r.u64(32) }), ErrInvalid,
			"gguf: key 'general.alignment' must be of type UINT32 but is UINT64" + redownload},
		{"alignment not power of 2", kvFile("general.alignment", TypeUint32, func(r *raw) { r.u32(48) }), ErrInvalid,
			"gguf: general.alignment is 48, which is not a power of 2" + redownload},
		{"alignment zero", kvFile("general.alignment", TypeUint32, func(r *raw) { r.u32(0) }), ErrInvalid,
			"gguf: general.alignment is 0, which is not a power of 2" + redownload},
		{"tensor name too long", tensorFile(0, func(r *raw) { r.tensor(strings.Repeat("x", 64), GGMLTypeF32, 0, 1) }, 1), ErrLimit,
			"gguf: byte 24: string length 64 while reading the name of tensor 1 of 1 exceeds the limit of 63 bytes" + redownload},
		{"duplicate tensor", tensorFile(64, func(r *raw) {
			r.tensor("a", GGMLTypeF32, 0, 4).tensor("a", GGMLTypeF32, 32, 4)
		}, 2), ErrDuplicate,
			"gguf: byte 57: duplicate tensor name 'a' (tensors 1 and 2)" + redownload},
		{"too many dims", tensorFile(0, func(r *raw) { r.tensor("t", GGMLTypeF32, 0, 1, 1, 1, 1, 1) }, 1), ErrLimit,
			"gguf: byte 33: tensor 't' has 5 dimensions; GGUF allows at most 4" + redownload},
		{"element overflow", tensorFile(0, func(r *raw) { r.tensor("t", GGMLTypeF32, 0, 1<<62, 4) }, 1), ErrLimit,
			"gguf: byte 53: tensor 't' has shape [4611686018427387904 4], whose element count does not fit in 63 bits" + redownload},
		{"size overflow", tensorFile(0, func(r *raw) { r.tensor("t", GGMLTypeF32, 0, 1<<61) }, 1), ErrLimit,
			"gguf: byte 45: tensor 't' of type F32 with shape [2305843009213693952] has a size in bytes that does not fit in 63 bits" + redownload},
		{"unknown type", tensorFile(0, func(r *raw) { r.tensor("t", 99, 0, 32) }, 1), ErrUnknownType,
			"gguf: byte 45: tensor 't' has unknown ggml type 99 (known: 0 to 42); the file may need a newer llama.cpp and sparkbench"},
		{"removed Q4_0_4_4", tensorFile(0, func(r *raw) { r.tensor("t", 31, 0, 32) }, 1), ErrRemovedType,
			"gguf: byte 45: tensor 't' has type 31 (Q4_0_4_4), which ggml no longer supports; use a Q4_0 file; llama.cpp repacks Q4_0 at load time"},
		{"removed Q4_2", tensorFile(0, func(r *raw) { r.tensor("t", 4, 0, 32) }, 1), ErrRemovedType,
			"gguf: byte 45: tensor 't' has type 4 (Q4_2), which ggml no longer supports; re-quantize the model from its F16/F32 source"},
		{"row not multiple of block", tensorFile(0, func(r *raw) { r.tensor("t", GGMLTypeQ4_K, 0, 100, 2) }, 1), ErrInvalid,
			"gguf: byte 53: tensor 't' of type Q4_K has 100 elements per row, not a multiple of the block size 256" + redownload},
		{"truncated tensor table", tensorFile(0, func(r *raw) { r.str("tensor.name.long").u32(2).u64(4).u64(4) }, 1)[:64], ErrTruncated,
			"gguf: file ends at byte 64 while reading the shape of tensor 'tensor.name.long' (8 bytes at byte 60)" + redownload},
		{"misaligned", tensorFile(64, func(r *raw) { r.tensor("t", GGMLTypeF32, 4, 4) }, 1), ErrMisaligned,
			"gguf: tensor 't' has data offset 4, not a multiple of the alignment 32" + redownload},
		{"data beyond end", tensorFile(16, func(r *raw) { r.tensor("blk.0.ffn_up.weight", GGMLTypeF32, 0, 64) }, 1), ErrOutOfBounds,
			"gguf: tensor 'blk.0.ffn_up.weight' data is not within the file bounds: it ends at byte 352 but the file has 112 bytes" + redownload},
		{"offset wraps", tensorFile(16, func(r *raw) { r.tensor("t", GGMLTypeF32, 1<<63+1<<62, 1<<60) }, 1), ErrOutOfBounds,
			"gguf: tensor 't' data is not within the file bounds: it ends at byte beyond 2^64 but the file has 80 bytes" + redownload},
		{"overlap", tensorFile(128, func(r *raw) {
			r.tensor("a", GGMLTypeF32, 0, 16).tensor("b", GGMLTypeF32, 32, 8)
		}, 2), ErrOverlap,
			"gguf: tensor 'b' (data bytes 32 to 64) overlaps tensor 'a' (data bytes 0 to 64)" + redownload},
		{"truncated data of real model", small()[:300], ErrOutOfBounds,
			"gguf: tensor 'token_embd.weight' data is not within the file bounds: it ends at byte 304 but the file has 300 bytes" + redownload},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := readBytes(c.data)
			if err == nil {
				t.Fatalf("read succeeded: %+v", f)
			}
			if got := err.Error(); got != c.want {
				t.Errorf("message\n got: %s\nwant: %s", got, c.want)
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("errors.Is(err, %v) is false for %v", c.kind, err)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("error is %T, want *FormatError", err)
			}
		})
	}
}

// zeros is an endless stream of zero bytes, like the hole of a sparse file.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestReadMemoryBudget(t *testing.T) {
	// 100M uint64 items would take 800 MB: refused before allocating.
	head := kvFile("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint64)).u64(100_000_000) })
	_, err := Read(io.MultiReader(bytes.NewReader(head), zeros{}), 4<<30)
	want := "gguf: byte 49: metadata and tensor table need more than 256 MiB of memory while reading the value of key 'k'; this reader does not accept such files"
	if err == nil || err.Error() != want || !errors.Is(err, ErrLimit) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadFile(dir)
	if want := dir + ": is a directory; pass a .gguf model file"; err == nil || err.Error() != want || !errors.Is(err, ErrIsDirectory) {
		t.Errorf("directory: got %v, want %s", err, want)
	}

	_, err = ReadFile(filepath.Join(dir, "missing.gguf"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.gguf") {
		t.Errorf("missing file: got %v, want a not-exist error naming the file", err)
	}

	path := filepath.Join(dir, "hosts.gguf")
	if err := os.WriteFile(path, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(path)
	want := path + ": not a GGUF file: invalid magic characters: '127.', expected 'GGUF' (bytes 31 32 37 2e); pass a .gguf model file"
	if err == nil || err.Error() != want {
		t.Errorf("non-GGUF file: got %v\nwant %s", err, want)
	}

	empty := filepath.Join(dir, "empty.gguf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = ReadFile(empty); !errors.Is(err, ErrEmpty) || !strings.HasPrefix(err.Error(), empty+": empty file") {
		t.Errorf("empty file: got %v", err)
	}
}

// shortReader claims more bytes than it has, like a file that shrank
// between stat and read.
func TestReadStreamShorterThanSize(t *testing.T) {
	kvs, ts := smallModel()
	b := encode(t, kvs, ts)
	_, err := Read(bytes.NewReader(b[:50]), int64(len(b)))
	want := "gguf: file ends at byte 50 while reading the key of metadata entry 1 of 3 (20 bytes at byte 32)" + redownload
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// TestHostileCountsAllocateLittle: a sparse 4 GiB file whose header
// declares the maximum counts fails on its first entries without
// allocating for all of them.
func TestHostileCountsAllocateLittle(t *testing.T) {
	cases := []struct {
		head []byte
		kind error
	}{
		{new(raw).header(3, MaxTensorCount, MaxKVCount).Bytes(), ErrInvalid},                       // first key is empty
		{new(raw).header(3, MaxTensorCount, 0).Bytes(), ErrDuplicate},                              // tensors "" and ""
		{kvFile("k", TypeArray, func(r *raw) { r.u32(uint32(TypeArray)).u64(1 << 24) }), ErrLimit}, // 384 MB of array headers
	}
	for i, c := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Read(io.MultiReader(bytes.NewReader(c.head), zeros{}), 4<<30)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, c.kind) {
			t.Errorf("case %d: got %v, want %v", i, err, c.kind)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("case %d: allocated %d bytes", i, n)
		}
	}
}

func TestErrorMessagesEscapeFileText(t *testing.T) {
	b := new(raw).header(3, 0, 2).str("a\nb\xff").u32(uint32(TypeUint8)).zeros(1).
		str("a\nb\xff").u32(uint32(TypeUint8)).zeros(1).Bytes()
	_, err := readBytes(b)
	want := `gguf: byte 41: duplicate key 'a\nb\xff' (metadata entries 1 and 2)` + redownload
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}
