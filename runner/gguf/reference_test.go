package gguf

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sparkbench/runner/sharedtest"
	"strconv"
	"strings"
	"testing"
)

// layout is what tiny.gguf.layout.txt records about reference-tiny.gguf
// (written by gguf-py when the reference model was made).
type layout struct {
	alignment, dataOffset int64
	kvs                   []layoutKV
	tensors               []layoutTensor
}

type layoutKV struct{ key, typ, value string }

type layoutTensor struct {
	name, typ, shape string
	off, nbytes      uint64
}

var (
	layoutHead   = regexp.MustCompile(`^alignment (\d+) data_offset (\d+)$`)
	layoutKVLine = regexp.MustCompile(`^KV (\S+)\s+(\S+)\s+(.*)$`)
	layoutTLine  = regexp.MustCompile(`^T (\S+)\s+ne=\[([^\]]*)\]\s+(\S+) off=(\d+) nbytes=(\d+)$`)
)

func parseLayout(t *testing.T, path string) layout {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var l layout
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " ")
		switch {
		case line == "":
		case layoutHead.MatchString(line):
			m := layoutHead.FindStringSubmatch(line)
			l.alignment, _ = strconv.ParseInt(m[1], 10, 64)
			l.dataOffset, _ = strconv.ParseInt(m[2], 10, 64)
		case layoutKVLine.MatchString(line):
			m := layoutKVLine.FindStringSubmatch(line)
			l.kvs = append(l.kvs, layoutKV{m[1], m[2], m[3]})
		case layoutTLine.MatchString(line):
			m := layoutTLine.FindStringSubmatch(line)
			off, _ := strconv.ParseUint(m[4], 10, 64)
			nb, _ := strconv.ParseUint(m[5], 10, 64)
			l.tensors = append(l.tensors, layoutTensor{m[1], m[3], "[" + m[2] + "]", off, nb})
		default:
			t.Fatalf("%s:%d: unrecognised line %q", path, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return l
}

// pyRepr prints a value as Python's repr does (gguf-py wrote the layout).
func pyRepr(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + x + "'"
	case float32:
		return pyFloat(float64(x))
	case float64:
		return pyFloat(x)
	case bool:
		if x {
			return "True"
		}
		return "False"
	}
	return fmt.Sprint(v)
}

// pyFloat: shortest round-trip digits, positional for exponents -4..15,
// always with a decimal point.
func pyFloat(x float64) string {
	e := strconv.FormatFloat(x, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// layoutValue prints kv as the layout file does: scalars bare (strings
// unquoted), arrays as "[N items] [first four]...".
func layoutValue(kv KV) string {
	if kv.Type != TypeArray {
		if s, ok := kv.Value.(string); ok {
			return s
		}
		return pyRepr(kv.Value)
	}
	n := kv.Len()
	items := make([]string, 0, 4)
	for i := range min(n, 4) {
		items = append(items, pyRepr(arrayItem(kv.Value, i)))
	}
	return fmt.Sprintf("[%d items] [%s]...", n, strings.Join(items, ", "))
}

func TestReferenceTinyMatchesLayout(t *testing.T) {
	samples := sharedtest.Dir(t, "llama-samples")
	model := sharedtest.File(t, "llama-samples", "reference-tiny.gguf")
	want := parseLayout(t, filepath.Join(samples, "tiny.gguf.layout.txt"))
	if len(want.kvs) != 17 || len(want.tensors) != 21 {
		t.Fatalf("layout parser found %d KVs and %d tensors, want 17 and 21", len(want.kvs), len(want.tensors))
	}

	f, err := ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	if int64(f.Alignment) != want.alignment || f.DataOffset != want.dataOffset {
		t.Errorf("alignment %d data_offset %d, want %d %d", f.Alignment, f.DataOffset, want.alignment, want.dataOffset)
	}
	if f.Size != 665856 || f.Version != 3 {
		t.Errorf("size %d version %d, want 665856 and 3", f.Size, f.Version)
	}
	if len(f.KVs) != len(want.kvs) {
		t.Errorf("%d KVs, want %d", len(f.KVs), len(want.kvs))
	}
	for i := range min(len(f.KVs), len(want.kvs)) {
		kv, w := f.KVs[i], want.kvs[i]
		got := layoutKV{kv.Key, typeName(kv), layoutValue(kv)}
		if got != w {
			t.Errorf("KV %d:\n got %q %q %q\nwant %q %q %q", i, got.key, got.typ, got.value, w.key, w.typ, w.value)
		}
	}
	if len(f.Tensors) != len(want.tensors) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(want.tensors))
	}
	for i := range min(len(f.Tensors), len(want.tensors)) {
		tt, w := f.Tensors[i], want.tensors[i]
		got := layoutTensor{tt.Name, tt.Type.String(), formatShape(tt.Shape), tt.Offset, tt.Size}
		if got != w {
			t.Errorf("tensor %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	// llama-bench reported these for the same file (bench-jsonl.stdout).
	if f.ParamCount != 164544 || f.TensorBytes() != 658176 {
		t.Errorf("params %d tensor bytes %d, want 164544 and 658176 (llama-bench model_n_params, model_size)",
			f.ParamCount, f.TensorBytes())
	}
}
