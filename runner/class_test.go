package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

func scan(text string) *LogScanner {
	var s LogScanner
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r", ""), "\n") {
		s.Observe(l)
	}
	return &s
}

// The real llama-bench failures of the shared samples classify with llama.cpp's own words.
func TestClassifyRealFailures(t *testing.T) {
	cases := []struct {
		file  string
		class Class
		want  []string
	}{
		{"bad-bench-missing", ClassLoadFailed, []string{"failed to open GGUF file '/nonexistent/model.gguf' (No such file or directory)", "failed to load model '/nonexistent/model.gguf'"}},
		{"bad-bench-nongguf", ClassLoadFailed, []string{"invalid magic characters: '127.', expected 'GGUF'", "failed to load model '/etc/hosts'"}},
		{"bad-bench-empty", ClassLoadFailed, []string{"failed to read magic"}},
		{"bad-bench-trunc-header", ClassLoadFailed, []string{"failed to read key-value pairs"}},
		{"bad-bench-trunc-data", ClassLoadFailed, []string{"data is not within the file bounds, model is corrupted or incomplete"}},
		{"bad-bench-unknown-flag", ClassBadArgs, []string{"error: invalid parameter for argument: --no-such-flag"}},
		{"bad-bench-missing-m-arg", ClassBadArgs, []string{"error: invalid parameter for argument: -m"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			stderr, err := os.ReadFile(filepath.Join("testdata", "llama", c.file+".stderr"))
			if err != nil {
				t.Fatal(err)
			}
			rcb, _ := os.ReadFile(filepath.Join("testdata", "llama", c.file+".rc"))
			rc, _ := strconv.Atoi(strings.TrimSpace(string(rcb)))
			class, reason := Classify(ClassifyInput{Code: rc, Log: scan(string(stderr)), Bench: true, Expected: 2})
			if class != c.class {
				t.Fatalf("class %s (%q), want %s", class, reason, c.class)
			}
			for _, w := range c.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q lacks %q", reason, w)
				}
			}
			if strings.Contains(reason, "ggml_backend_load_best") || strings.Contains(reason, "load_backend") {
				t.Errorf("reason quotes start-up noise: %q", reason)
			}
		})
	}
}

func TestClassifyRules(t *testing.T) {
	log := func(lines ...string) *LogScanner { return scan(strings.Join(lines, "\n")) }
	cases := []struct {
		name  string
		in    ClassifyInput
		class Class
		want  string
	}{
		{"ok", ClassifyInput{Bench: true, Rows: 4, Expected: 4}, ClassOK, ""},
		{"ok without expectation", ClassifyInput{Bench: true, Rows: 1}, ClassOK, ""},
		{"generic process ok", ClassifyInput{}, ClassOK, ""},
		{"incomplete", ClassifyInput{Bench: true, Rows: 2, Expected: 4}, ClassIncomplete, "2 of 4"},
		{"no rows", ClassifyInput{Bench: true}, ClassIncomplete, "without any result row"},
		{"malformed counted", ClassifyInput{Bench: true, Rows: 3, Expected: 4, Malformed: 1}, ClassIncomplete, "1 malformed"},
		{"segv", ClassifyInput{Signal: syscall.SIGSEGV, Bench: true, Rows: 2, Expected: 4}, ClassCrashed, "SIGSEGV"},
		{"foreign sigkill", ClassifyInput{Signal: syscall.SIGKILL}, ClassCrashed, "OOM killer"},
		{"abort with assert", ClassifyInput{Signal: syscall.SIGABRT, Log: log("ggml/src/ggml.c:123: GGML_ASSERT(x) failed")}, ClassCrashed, "GGML_ASSERT"},
		{"device lost beats oom", ClassifyInput{Signal: syscall.SIGABRT, Log: log("ggml_vulkan: Device memory allocation of size 1 failed.", "vk::Queue::submit: ErrorDeviceLost")}, ClassDeviceLost, "ErrorDeviceLost"},
		{"not enough memory", ClassifyInput{Code: 1, Log: log("ggml_metal: Not enough memory for buffer")}, ClassOOM, "Not enough memory"},
		{"cuda oom", ClassifyInput{Signal: syscall.SIGABRT, Log: log("CUDA error: out of memory")}, ClassOOM, "out of memory"},
		{"oom beats load failure", ClassifyInput{Code: 1, Log: log("llama_model_load: failed to allocate buffer", "llama_bench: error: failed to load model 'x'")}, ClassOOM, "failed to allocate buffer"},
		{"batched-bench load failure, its earlier lines lost", ClassifyInput{Code: 1, Log: log("llama_batched_bench: error: unable to load model")}, ClassLoadFailed, "unable to load model"},
		{"unknown argument", ClassifyInput{Code: 1, Log: log("error: unknown argument: --frob")}, ClassBadArgs, "unknown argument: --frob"},
		{"exit 1 unknown", ClassifyInput{Code: 1, Log: log("something odd happened")}, ClassFailed, "status 1: something odd happened"},
		{"patterns ignored on success", ClassifyInput{Bench: true, Rows: 2, Expected: 2, Log: log("warning: failed to allocate pinned memory, falling back")}, ClassOK, ""},
		{"patterns explain missing rows", ClassifyInput{Bench: true, Rows: 1, Expected: 2, Log: log("main: error: failed to allocate compute buffers")}, ClassOOM, "compute buffers"},
		{"stopped beats signal", ClassifyInput{Cause: StopUser, Signal: syscall.SIGTERM, Escalated: true}, ClassStoppedByUser, "SIGKILL after the grace"},
		{"idle", ClassifyInput{Cause: StopIdleTimeout, CauseNote: "no output for 30s", Log: log("llama-bench: benchmark 1/2: prompt run 1/5", "last words")}, ClassTimeout, "no output for 30s; last output: last words"},
		{"gate", ClassifyInput{Cause: StopGate, GateClass: ClassFlagged, GateReason: "tg32: CV 9%"}, ClassFlagged, "tg32: CV 9%"},
		{"start error", ClassifyInput{StartErr: errors.New("exec: no such file")}, ClassFailed, "could not start"},
		{"refused args", ClassifyInput{StartErr: &BenchArgError{"-oe is not allowed"}}, ClassBadArgs, "-oe is not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class, reason := Classify(c.in)
			if class != c.class || !strings.Contains(reason, c.want) {
				t.Fatalf("got %s %q, want %s containing %q", class, reason, c.class, c.want)
			}
		})
	}
}

func TestClassNeedsCanary(t *testing.T) {
	for _, c := range Classes {
		want := c == ClassDeviceLost || c == ClassCrashed || c == ClassOOM
		if c.NeedsCanary() != want || !c.Valid() {
			t.Errorf("%s: canary %v valid %v", c, c.NeedsCanary(), c.Valid())
		}
	}
	if Class("nope").Valid() {
		t.Error("unknown class valid")
	}
}

// FuzzClassifyLog feeds arbitrary output to the log classifier with an arbitrary exit. The
// classifier must not panic, must return a known class with a short valid-UTF-8 reason, be
// deterministic, follow the exit-status rules, and find a DeviceLost line whatever surrounds it.
func FuzzClassifyLog(f *testing.F) {
	for _, name := range []string{"bad-bench-missing", "bad-bench-nongguf", "bad-bench-trunc-data", "bad-bench-unknown-flag"} {
		b, err := os.ReadFile(filepath.Join("testdata", "llama", name+".stderr"))
		if err == nil {
			f.Add(b, 1, uint8(0), uint8(0), uint8(2))
		}
	}
	f.Add([]byte("vk::Queue::submit: ErrorDeviceLost\n"), 0, uint8(6), uint8(1), uint8(4))
	f.Add([]byte("CUDA error: out of memory\r\n\x1b[31mfatal\x1b[0m"), 134, uint8(0), uint8(0), uint8(1))
	f.Add([]byte("{\"build_commit\": \"out of memory\"}\n"), 0, uint8(0), uint8(3), uint8(3))
	f.Fuzz(func(t *testing.T, out []byte, code int, sig uint8, rows uint8, expected uint8) {
		if code < 0 || code > 255 {
			code = 1
		}
		signal := syscall.Signal(sig % 32)
		feed := func() *LogScanner {
			var s LogScanner
			sp := newLineSplitter(512)
			emit := func(l []byte, _ int64) { s.Observe(string(l)) }
			sp.feed(out, emit)
			sp.flush(emit)
			return &s
		}
		in := ClassifyInput{Code: code, Signal: signal, Log: feed(), Bench: true, Rows: int(rows % 8), Expected: int(expected % 8)}
		class, reason := Classify(in)
		if !class.Valid() {
			t.Fatalf("class %q not valid", class)
		}
		if len(reason) > maxReason+len("…") || !utf8.ValidString(reason) {
			t.Fatalf("reason of %d bytes, valid UTF-8 %v", len(reason), utf8.ValidString(reason))
		}
		in.Log = feed()
		if c2, r2 := Classify(in); c2 != class || r2 != reason {
			t.Fatalf("not deterministic: %s %q then %s %q", class, reason, c2, r2)
		}
		complete := in.Rows > 0 && (in.Expected == 0 || in.Rows >= in.Expected)
		switch {
		case signal == 0 && code == 0 && complete:
			if class != ClassOK {
				t.Fatalf("clean exit with every row classified %s", class)
			}
		case class == ClassOK:
			t.Fatalf("ok for signal %d code %d rows %d/%d", signal, code, in.Rows, in.Expected)
		}
		if signal == 0 && code == 0 && !complete && class != ClassIncomplete {
			if m, _ := in.Log.Match(); m != class {
				t.Fatalf("exit 0 with rows missing classified %s, log says %q", class, m)
			}
		}
		// a DeviceLost line always wins on a failed run
		withDL := append(append([]byte{}, out...), "\nggml_vulkan: vk::Queue::submit: ErrorDeviceLost\n"...)
		var s LogScanner
		sp := newLineSplitter(512)
		emit := func(l []byte, _ int64) { s.Observe(string(l)) }
		sp.feed(withDL, emit)
		sp.flush(emit)
		if c, _ := Classify(ClassifyInput{Code: 1, Log: &s}); c != ClassDeviceLost {
			t.Fatalf("DeviceLost line classified %s", c)
		}
	})
}
