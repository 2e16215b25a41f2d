package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"sparkbench/runner/llamatest"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	tmp := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tiny, err := os.ReadFile(filepath.Join(llamatest.ModelsDir(), "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	noTools := filepath.Join(tmp, "build-without-tools")
	os.Mkdir(noTools, 0o755)
	nonGGUF := write("weights.bin", []byte("PK\x03\x04 this is a zip, not a model"))
	truncated := write("truncated.gguf", tiny[:300])
	truncData := write("truncated-data.gguf", tiny[:len(tiny)-1000])
	empty := write("empty.gguf", nil)

	cases := []struct {
		name string
		args []string
		want []string // substrings of the one line
	}{
		{"doctor nonexistent dir", []string{"doctor", "--llama-dir", "/nonexistent"}, []string{"/nonexistent", "does not exist", "make llama"}},
		{"doctor folder without llama-bench", []string{"doctor", "--llama-dir", noTools}, []string{noTools, "has no executable llama-bench", "build/bin"}},
		{"inspect non-GGUF", []string{"model", "inspect", nonGGUF}, []string{nonGGUF, "invalid magic", "pass a .gguf"}},
		{"inspect truncated header", []string{"model", "inspect", truncated}, []string{truncated, "file ends at byte 300", "download it again"}},
		{"inspect truncated data", []string{"model", "inspect", truncData}, []string{truncData, "not within the file bounds", "download it again"}},
		{"inspect empty", []string{"model", "inspect", empty}, []string{empty, "empty file"}},
		{"inspect directory", []string{"model", "inspect", tmp}, []string{tmp, "is a directory", "pass a .gguf"}},
		{"inspect missing", []string{"model", "inspect", filepath.Join(tmp, "absent.gguf")}, []string{"absent.gguf", "no such file"}},
		{"inspect two files", []string{"model", "inspect", empty, empty}, []string{"exactly one GGUF file"}},
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "sparkbench help"}},
		{"unknown flag", []string{"doctor", "--bogus"}, []string{"flag provided but not defined: -bogus"}},
		{"gui unknown study kind", []string{"gui", "--new-kind", "latency"}, []string{`--new-kind "latency"`, "throughput, capacity or concurrency"}},
		{"gui compare one study", []string{"gui", "--compare", "3"}, []string{`--compare "3"`, "two or more studies, e.g. --compare 3,4"}},
		{"gui compare not an ID", []string{"gui", "--compare", "3,x"}, []string{`"x" is not a study ID: write the IDs as 3,4`}},
		{"gui unknown section", []string{"gui", "--section", "overview2"}, []string{`--section "overview2"`, "or last"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stdout %q, stderr %q)", code, out, errOut)
			}
			if c.name == "unknown flag" { // flag's own usage text follows; first line is the error
				errOut, _, _ = strings.Cut(errOut, "\n")
				errOut += "\n"
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
				t.Errorf("want exactly one line on stderr, got %q", errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

// layout is tiny.gguf.layout.txt: the reference model's keys, tensors and offsets as printed by
// an independent reader.
type layout struct {
	alignment, dataOffset int
	kvs                   [][3]string // key, type, value as printed
	tensors               []layoutTensor
}

type layoutTensor struct {
	name, typ   string
	shape       []uint64
	off, nbytes uint64
}

var (
	layoutHead     = regexp.MustCompile(`^alignment (\d+) data_offset (\d+)$`)
	layoutKV       = regexp.MustCompile(`^KV (\S+)\s+(\S+)\s+(.*)$`)
	layoutTensorRE = regexp.MustCompile(`^T (\S+)\s+ne=\[([\d, ]+)\]\s+(\S+) off=(\d+) nbytes=(\d+)$`)
)

func readLayout(t *testing.T, path string) layout {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var l layout
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := layoutHead.FindStringSubmatch(line); m != nil {
			l.alignment, _ = strconv.Atoi(m[1])
			l.dataOffset, _ = strconv.Atoi(m[2])
		} else if m := layoutKV.FindStringSubmatch(line); m != nil {
			l.kvs = append(l.kvs, [3]string{m[1], m[2], strings.TrimSpace(m[3])})
		} else if m := layoutTensorRE.FindStringSubmatch(line); m != nil {
			lt := layoutTensor{name: m[1], typ: m[3]}
			for _, d := range strings.Split(m[2], ",") {
				n, _ := strconv.ParseUint(strings.TrimSpace(d), 10, 64)
				lt.shape = append(lt.shape, n)
			}
			lt.off, _ = strconv.ParseUint(m[4], 10, 64)
			lt.nbytes, _ = strconv.ParseUint(m[5], 10, 64)
			l.tensors = append(l.tensors, lt)
		} else if line != "" {
			t.Fatalf("unparsed layout line %q", line)
		}
	}
	return l
}

func TestModelInspectJSONMatchesReferenceLayout(t *testing.T) {
	model := llamatest.SharedSample(t, "reference-tiny.gguf")
	want := readLayout(t, llamatest.SharedSample(t, "tiny.gguf.layout.txt"))
	if len(want.kvs) == 0 || len(want.tensors) == 0 {
		t.Fatal("layout file parsed to nothing")
	}
	code, out, errOut := runCLI("model", "inspect", model, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Alignment  int `json:"alignment"`
		DataOffset int `json:"data_offset"`
		KVs        []struct {
			Key       string `json:"key"`
			Type      string `json:"type"`
			ArrayType string `json:"array_type"`
			Count     *int   `json:"count"`
			Value     any    `json:"value"`
		} `json:"kvs"`
		Tensors []struct {
			Name, Type   string
			Shape        []uint64
			Offset, Size uint64
		} `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Alignment != want.alignment || got.DataOffset != want.dataOffset {
		t.Errorf("alignment/data_offset = %d/%d, want %d/%d", got.Alignment, got.DataOffset, want.alignment, want.dataOffset)
	}
	if len(got.KVs) != len(want.kvs) {
		t.Fatalf("%d keys, want %d", len(got.KVs), len(want.kvs))
	}
	for i, w := range want.kvs {
		g := got.KVs[i]
		typ := g.Type
		if g.ArrayType != "" {
			typ = g.Type + "/" + g.ArrayType
		}
		if g.Key != w[0] || typ != w[1] {
			t.Errorf("key %d = %s %s, want %s %s", i, g.Key, typ, w[0], w[1])
			continue
		}
		switch {
		case g.ArrayType != "": // "[259 items] ['<unk>', '<s>', '</s>', '<0x00>']..."
			m := regexp.MustCompile(`^\[(\d+) items\] \[(.*)\]`).FindStringSubmatch(w[2])
			n, _ := strconv.Atoi(m[1])
			if g.Count == nil || *g.Count != n {
				t.Errorf("%s: count %v, want %d", g.Key, g.Count, n)
			}
			items := g.Value.([]any)
			for j, s := range strings.Split(m[2], ", ") {
				if !samePrinted(items[j], s) {
					t.Errorf("%s[%d] = %v, want %s", g.Key, j, items[j], s)
				}
			}
		case g.Type == "STRING":
			if g.Value != w[2] {
				t.Errorf("%s = %v, want %s", g.Key, g.Value, w[2])
			}
		default:
			wf, _ := strconv.ParseFloat(w[2], 64)
			if gf, ok := g.Value.(float64); !ok || float32(gf) != float32(wf) {
				t.Errorf("%s = %v, want %s", g.Key, g.Value, w[2])
			}
		}
	}
	if len(got.Tensors) != len(want.tensors) {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want.tensors))
	}
	for i, w := range want.tensors {
		g := got.Tensors[i]
		if g.Name != w.name || g.Type != w.typ || g.Offset != w.off || g.Size != w.nbytes || !equalShape(g.Shape, w.shape) {
			t.Errorf("tensor %d = %+v, want %+v", i, g, w)
		}
	}
}

// samePrinted compares a JSON item with the layout file's Python repr: '<s>' for strings,
// 0.0 or 3 for numbers.
func samePrinted(v any, printed string) bool {
	switch x := v.(type) {
	case string:
		return "'"+x+"'" == printed
	case float64:
		f, err := strconv.ParseFloat(printed, 64)
		return err == nil && float32(f) == float32(x)
	}
	return false
}

func equalShape(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the binary builtBinary made.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// builtBinary builds cmd/sparkbench once per test run.
func builtBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sparkbench-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "sparkbench")
		out, err := exec.Command("go", "build", "-tags", "migrated_fynedo", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = &buildError{err, string(out)}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// Fyne logs "Error parsing user locale C" at start-up under the POSIX locale; the CLI must not.
func TestBinaryUnderPOSIXLocaleIsQuiet(t *testing.T) {
	bin := builtBinary(t)
	for _, lang := range []string{"C", "C.UTF-8", "POSIX"} {
		cmd := exec.Command(bin, "version")
		cmd.Env = append(os.Environ(), "LANG="+lang, "LC_ALL="+lang)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("LANG=%s: %v: %s", lang, err, e.String())
		}
		if e.Len() != 0 || !strings.HasPrefix(o.String(), "sparkbench ") {
			t.Errorf("LANG=%s: stdout %q, stderr %q", lang, o.String(), e.String())
		}
	}
}
