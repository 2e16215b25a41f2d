package devlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sparkbench/runner/sharedtest"
	"strings"
	"testing"

	"sparkbench/runner/vocab"
)

// realLogs are the published logs with the most kinds of lines, and this build's -v log.
func realLogs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	dir := wildFolder(t)
	for _, name := range []string{"cli-log-cuda-2gpu-rtx4090-rtx5090-ot-b5622.log", "log-completion-hexagon-htp0-snapdragon-elided.log",
		"server-log-cpu-win-msvc-b5273-qwen3-30b.log", "server-sse-chat-completions-stream-final-timings-mainline-b5517-2025.txt",
		"server-completion-timings-json-with-ellipsis-pr15827-2025.txt", "bench-md-vulkan-rpc-verbose-log-interleaved-FRAGMENT-2025.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	b, err := os.ReadFile(filepath.Join(samplesFolder(t), "server-v.stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	out["server-v.stderr.log"] = b
	return out
}

// The same log captured under a pty (CRLF line ends, every line coloured) reads the same, and
// so does a log whose lines carry the timestamp and level newer builds print ("0.00.114.970 I
// "; a response body never has them).
func TestCRLFColourAndPrefixChangeNothing(t *testing.T) {
	for name, b := range realLogs(t) {
		var c, p bytes.Buffer
		for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
			fmt.Fprintf(&c, "\x1b[32m%s\x1b[0m\r\n", line)
			fmt.Fprintf(&p, "\x1b[34m0.00.114.970\x1b[0m \x1b[32mI \x1b[0m%s\n", line)
		}
		plain, coloured := ScanText(b, nil), ScanText(c.Bytes(), nil)
		if !reflect.DeepEqual(plain, coloured) {
			t.Errorf("%s: plain\n%+v\ncoloured\n%+v", name, plain, coloured)
		}
		if strings.Contains(name, "sse") || strings.Contains(name, "completion-timings") {
			continue
		}
		if prefixed := ScanText(p.Bytes(), nil); !reflect.DeepEqual(plain, prefixed) {
			t.Errorf("%s: plain\n%+v\nprefixed\n%+v", name, plain, prefixed)
		}
	}
}

// ScanReader reads what ScanText reads, whatever the reader's chunking.
func TestScanReaderMatchesScanText(t *testing.T) {
	for name, b := range realLogs(t) {
		got, err := ScanReader(&oneByteReader{b: b}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := ScanText(b, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: reader\n%+v\ntext\n%+v", name, got, want)
		}
	}
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

// A line longer than MaxLineBytes is cut; the next line keeps its number.
func TestScanReaderCutsALongLine(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+5000) + " load_tensors: CUDA0 model buffer size = 1.00 MiB"
	log := "a\n" + long + "\nload_tensors:        CUDA1 model buffer size =    2.50 MiB\n"
	l, err := ScanReader(strings.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []vocab.Buffer{{Kind: vocab.BufferModel, Device: "CUDA1", MiB: 2.5, Line: 3}}
	if !reflect.DeepEqual(l.Evidence.Buffers, want) || l.Lines != 3 {
		t.Fatalf("lines %d buffers %+v", l.Lines, l.Evidence.Buffers)
	}
}

// Every prefix of a real log (a log cut anywhere, as a crash or a paste cuts it) reads without
// trouble, and never yields more than the whole log.
func TestTruncatedLogs(t *testing.T) {
	for name, b := range realLogs(t) {
		whole := ScanText(b, nil)
		step := max(1, len(b)/400)
		for cut := 0; cut < len(b); cut += step {
			l := ScanText(b[:cut], nil)
			if len(l.Timings) > len(whole.Timings) || len(l.Evidence.Devices) > len(whole.Evidence.Devices) || l.Evidence.Loads > whole.Evidence.Loads {
				t.Fatalf("%s cut at %d: %+v\nwhole %+v", name, cut, l, whole)
			}
		}
	}
}

// Lines of two processes interleaved (llama-bench -v between table rows, RPC servers): each
// kind of line still lands where it belongs, and the generation timings of two tasks
// printed alternately are kept apart by their task ids.
func TestInterleavedLines(t *testing.T) {
	log := strings.Join([]string{
		"| model | size | params | backend | ngl | test | t/s |",
		"llama_model_loader: loaded meta data with 30 key-value pairs",
		"| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | pp512 | 4035.47 ± 157.68 |",
		"....load_tensors: offloaded 33/33 layers to GPU",
		"slot print_timing: id  0 | task 7 | prompt eval time =  10.00 ms /  5 tokens ( 2.00 ms per token, 500.00 tokens per second)",
		"slot print_timing: id  1 | task 9 | prompt eval time =  20.00 ms / 10 tokens ( 2.00 ms per token, 500.00 tokens per second)",
		"slot print_timing: id  0 | task 7 |        eval time =  30.00 ms /  3 tokens (10.00 ms per token, 100.00 tokens per second)",
		"slot print_timing: id  0 | task 7 |       total time =  40.00 ms /  8 tokens",
		"slot print_timing: id  1 | task 9 |        eval time =  50.00 ms /  5 tokens (10.00 ms per token, 100.00 tokens per second)",
		"slot print_timing: id  1 | task 9 |       total time =  70.00 ms / 15 tokens",
	}, "\n")
	l := ScanText([]byte(log), nil)
	if n, of, ok := l.Evidence.OffloadedLayers(); !ok || n != 33 || of != 33 {
		t.Errorf("offloaded %d/%d %v", n, of, ok)
	}
	want := []Timing{
		{Source: "print_timing", Line: 5, Task: "7", PromptTokens: 5, PromptMS: 10, PromptTPS: 500, GenTokens: 3, GenMS: 30, GenTPS: 100, TotalMS: 40, TotalTokens: 8},
		{Source: "print_timing", Line: 6, Task: "9", PromptTokens: 10, PromptMS: 20, PromptTPS: 500, GenTokens: 5, GenMS: 50, GenTPS: 100, TotalMS: 70, TotalTokens: 15}}
	if !reflect.DeepEqual(l.Timings, want) {
		t.Errorf("timings\n got %+v\nwant %+v", l.Timings, want)
	}
}

// Floods: every list stops at vocab.MaxEvidenceEntries and counts the rest; a "timings"
// object that never closes is given up after maxObjectLines, and the next one still reads.
func TestFloodsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"timings": {` + "\n")
	for i := 0; i < 2*maxObjectLines; i++ {
		b.WriteString(`"prompt_n": 1,` + "\n")
	}
	b.WriteString(`data: {"timings":{"prompt_n":7,"predicted_n":9}}` + "\n")
	b.WriteString("llama_model_loader: loaded meta data with 30 key-value pairs\n")
	b.WriteString("common_memory_breakdown_print: | memory breakdown [MiB] | total   free    self   model   context   compute    unaccounted |\n")
	extra := 1000
	for i := 0; i < vocab.MaxEvidenceEntries+extra; i++ {
		fmt.Fprintf(&b, "llama_prepare_model_devices: using device RPC[10.0.0.1:%d] (RPC[10.0.0.1:%d]) - 1000 MiB free\n", i, i)
		b.WriteString("common_memory_breakdown_print: |   - Host  |   3 =  0 +  0 +  2  |\n")
		b.WriteString("prompt eval time = 1.00 ms / 1 tokens (1.00 ms per token, 1000.00 tokens per second)\n")
	}
	s := NewScanner(nil)
	for line := range strings.SplitSeq(b.String(), "\n") {
		s.Feed(line)
	}
	l := s.Result()
	ev := l.Evidence
	if len(ev.Devices) != vocab.MaxEvidenceEntries || len(ev.Breakdown) != vocab.MaxEvidenceEntries || ev.Omitted != 2*extra {
		t.Errorf("devices %d breakdown %d omitted %d", len(ev.Devices), len(ev.Breakdown), ev.Omitted)
	}
	// The last prompt line's generation is still open: it is listed beyond the cap.
	if len(l.Timings) != vocab.MaxEvidenceEntries+1 || l.TimingsOmitted != extra {
		t.Errorf("timings %d omitted %d", len(l.Timings), l.TimingsOmitted)
	}
	if s.obj != nil {
		t.Errorf("an unclosed object is still held (%d bytes)", len(s.obj))
	}
	if first := l.Timings[0]; first.Source != "timings_json" || first.PromptTokens != 7 || first.GenTokens != 9 {
		t.Errorf("first timing %+v", first)
	}
}

// Figures too large for a float64 read as 0 (JSON has no infinity), never as +Inf.
func TestHugeFigures(t *testing.T) {
	huge := strings.Repeat("9", 400)
	log := "load_tensors:        CUDA0 model buffer size = " + huge + " MiB\n" +
		"prompt eval time = " + huge + " ms / " + huge + " tokens (1.00 ms per token, " + huge + " tokens per second)\n" +
		"common_memory_breakdown_print: | memory breakdown [MiB] | self   model   context   compute |\n" +
		"common_memory_breakdown_print: |   - Host  |  " + huge + " =  0 +  0 +  2  |\n"
	l := ScanText([]byte(log), nil)
	if _, err := json.Marshal(l); err != nil {
		t.Fatal(err)
	}
	if l.Evidence.Buffers[0].MiB != 0 || l.Timings[0].PromptMS != 0 || l.Evidence.Breakdown[0].MiB["self"] != 0 {
		t.Errorf("%+v", l)
	}
}

func FuzzScan(f *testing.F) {
	for _, dir := range []string{filepath.Join(sharedtest.Root(), "wild"), filepath.Join(sharedtest.Root(), "llama-samples")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("llama_model_loader: loaded meta data with\ncommon_memory_breakdown_print: | memory breakdown [MiB] | a b |\ncommon_memory_breakdown_print: |  - X (y) | 1 = 2 |\n"))
	f.Add([]byte("ggml_cuda_init: found 2 CUDA devices:\n  Device 0: A, VRAM: 9 MiB\n  Device 1: B\n\"timings\":{\"prompt_n\":1"))
	rules, err := vocab.CompileMarkers([]string{"CUDA0"}, []string{"CPU model"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l := ScanText(b, rules)
		ev := l.Evidence
		for _, n := range []int{len(ev.Layers), len(ev.Buffers), len(ev.Devices), len(ev.Breakdown), len(l.Timings) - maxOpen} {
			if n > vocab.MaxEvidenceEntries {
				t.Fatalf("a list of %d entries", n)
			}
		}
		if _, err := json.Marshal(l); err != nil {
			t.Fatal(err)
		}
		_ = ev.DevicesUsed()
		_, _, _ = ev.OffloadedLayers()
		for _, d := range ev.DevicesUsed() {
			if _, ok := ev.PeakDeviceMiB(d); !ok {
				t.Fatalf("device %s used but no peak", d)
			}
		}
		if bytes.Count(b, []byte{'\n'}) < 1000 && len(b) < MaxLineBytes {
			got, err := ScanReader(bytes.NewReader(b), rules)
			if err != nil || !reflect.DeepEqual(got, l) {
				t.Fatalf("reader %+v (%v)\ntext %+v", got, err, l)
			}
		}
	})
}

// BenchmarkScanVerboseLog: the -v log of this build (2,000 lines of a server lifetime).
func BenchmarkScanVerboseLog(b *testing.B) {
	log, err := os.ReadFile(filepath.Join(sharedtest.Root(), "llama-samples", "server-v.stderr.log"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		ScanText(log, nil)
	}
}
