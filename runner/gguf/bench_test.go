package gguf

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// thousandTensors writes a llama-like file with 1,000 small tensors and the
// tiny models' 259-token vocabulary.
func thousandTensors(tb testing.TB) string {
	tokens := make([]string, 259)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("<0x%02X>", i)
	}
	kvs := []KV{
		NewKV("general.architecture", "llama"),
		NewKV("llama.block_count", uint32(100)),
		NewKV("tokenizer.ggml.tokens", tokens),
		NewKV("tokenizer.ggml.scores", make([]float32, 259)),
		NewKV("tokenizer.ggml.token_type", make([]int32, 259)),
	}
	names := []string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_down", "ffn_up", "ffn_gate_inp"}
	var ts []TensorData
	for blk := range 100 {
		for _, n := range names {
			ts = append(ts, TensorData{Name: fmt.Sprintf("blk.%d.%s.weight", blk, n), Type: GGMLTypeF32,
				Shape: []uint64{32, 4}, Data: make([]byte, 512)})
		}
	}
	path := filepath.Join(tb.TempDir(), "thousand.gguf")
	if err := WriteFile(path, kvs, ts); err != nil {
		tb.Fatal(err)
	}
	return path
}

func BenchmarkReadThousandTensors(b *testing.B) {
	path := thousandTensors(b)
	b.ReportAllocs()
	for b.Loop() {
		f, err := ReadFile(path)
		if err != nil || len(f.Tensors) != 1000 {
			b.Fatal(err)
		}
	}
}

// sparseHeader is the header and tensor table of a 4 GiB model: 63 F32
// [4096, 4096] matrices (64 MiB each) plus 64 norms, data packed from
// offset 0. The file is then extended to 4 GiB without writing the data.
func sparseHeader() []byte {
	r := new(raw).header(3, 127, 1)
	r.str("general.architecture").u32(uint32(TypeString)).str("llama")
	var off uint64
	for i := range 64 {
		r.tensor(fmt.Sprintf("blk.%d.attn_norm.weight", i), GGMLTypeF32, off, 4096)
		off += 16384
		if i < 63 {
			r.tensor(fmt.Sprintf("blk.%d.attn_q.weight", i), GGMLTypeF32, off, 4096, 4096)
			off += 64 << 20
		}
	}
	return r.Bytes()
}

const fourGiB = 4 << 30

func sparseFile(tb testing.TB) string {
	path := filepath.Join(tb.TempDir(), "sparse-4g.gguf")
	if err := os.WriteFile(path, sparseHeader(), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Truncate(path, fourGiB); err != nil {
		tb.Skipf("cannot make a 4 GiB sparse file here: %v", err)
	}
	return path
}

func BenchmarkReadSparse4GiB(b *testing.B) {
	path := sparseFile(b)
	b.ReportAllocs()
	for b.Loop() {
		f, err := ReadFile(path)
		if err != nil || f.Size != fourGiB || len(f.Tensors) != 127 {
			b.Fatal(err)
		}
	}
}

// countingReader counts the bytes handed out.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestReadDoesNotTouchData: of a 4 GiB stream, the reader consumes the
// header and at most one buffer more.
func TestReadDoesNotTouchData(t *testing.T) {
	head := sparseHeader()
	c := &countingReader{r: io.MultiReader(bytes.NewReader(head), zeros{})}
	f, err := Read(c, fourGiB)
	if err != nil {
		t.Fatal(err)
	}
	if limit := int64(len(head)) + 64<<10; c.n > limit {
		t.Errorf("read %d bytes of a 4 GiB file, want at most %d", c.n, limit)
	}
	if f.ParamCount != 63*4096*4096+64*4096 || f.TensorBytes() != 4*f.ParamCount {
		t.Errorf("params %d bytes %d", f.ParamCount, f.TensorBytes())
	}
	// And through the file system, on a real sparse file.
	path := sparseFile(t)
	g, err := ReadFile(path)
	if err != nil || g.DataOffset != f.DataOffset {
		t.Fatalf("sparse file: %v", err)
	}
}
