package runner

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestBenchConfigArgs(t *testing.T) {
	c := BenchConfig{
		Models: []string{"/m/a.gguf", "/m/b.gguf"}, Prompt: []int{512}, Gen: []int{128},
		PromptGen: []PG{{512, 128}}, Depths: []int{0, 4096}, Reps: 3, Batch: []int{2048},
		UBatch: []int{256, 512}, FlashAttn: []string{"on"}, TypeK: []string{"q8_0"}, TypeV: []string{"q8_0"},
		Threads: []int{1}, GPULayers: []int{99}, Extra: []string{"--no-warmup"},
	}
	want := "-m /m/a.gguf -m /m/b.gguf -p 512 -n 128 -pg 512,128 -d 0,4096 -r 3 -b 2048 -ub 256,512 -fa on -ctk q8_0 -ctv q8_0 -t 1 -ngl 99 --no-warmup"
	if got := strings.Join(c.Args(), " "); got != want {
		t.Fatalf("args\n got %s\nwant %s", got, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// 2 models x 2 depths x 2 ubatch x (pp + tg + pg)
	if n, ok := ExpectedTests(c.Args()); !ok || n != 24 {
		t.Fatalf("expected tests %d %v, want 24", n, ok)
	}
	// plain JSON round trip
	b, _ := json.Marshal(c)
	var back BenchConfig
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("json round trip: %v\n%s", err, b)
	}
	for _, bad := range []BenchConfig{{}, {Models: []string{"a,b.gguf"}}, {Models: []string{"a"}, Reps: -1},
		{Models: []string{"a"}, Depths: []int{-5}}, {Models: []string{"a"}, Extra: []string{"-oe", "md"}}} {
		if bad.Validate() == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

func TestExpectedTests(t *testing.T) {
	cases := []struct {
		args string
		n    int
		ok   bool
	}{
		{"-m x", 2, true}, // defaults: pp512, tg128
		{"-m x -p 64 -n 32 -r 2", 2, true},
		{"-m x -p 64 -n 32 -d 0,128", 4, true}, // bench-progress-jsonl: 4 tests
		{"-m x -p 0 -n 32", 1, true},
		{"-m x -n 0", 1, true},
		{"-m x -p 64-256*2 -n 0", 3, true},
		{"-m x -p 0-1024+256 -n 0", 4, true}, // 0 skipped, 256, 512, 768, 1024
		{"-m a,b -m c -p 1 -n 1", 6, true},
		{"-m x -pg 512,128 -pg 64,16", 4, true},
		{"-m x -t 1,2 -ngl -1 -fa on,off -ctk f16,q8_0", 16, true},
		{"-m x -ub 128-512*2 -p 512 -n 0", 3, true},
		{"-m x --progress -o jsonl -r 5 --delay 1 --no-warmup", 2, true},
		{"-m x --list-devices", 0, true},
		{"-m x --frobnicate 3", 0, false},
		{"-m x -p abc", 0, false},
		{"-m x -p", 0, false},
	}
	for _, c := range cases {
		n, ok := ExpectedTests(strings.Fields(c.args))
		if n != c.n || ok != c.ok {
			t.Errorf("%q: %d %v, want %d %v", c.args, n, ok, c.n, c.ok)
		}
	}
}

func TestRunnerArgs(t *testing.T) {
	cases := []struct {
		in       string
		progress bool
		want     string
	}{
		{"-m x", true, "-m x -o jsonl --progress"},
		{"-m x -o jsonl", true, "-m x -o jsonl --progress"},
		{"-m x --progress", false, "-m x --progress -o jsonl"},
		{"-m x", false, "-m x -o jsonl"},
	}
	for _, c := range cases {
		if got := strings.Join(RunnerArgs(strings.Fields(c.in), c.progress), " "); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
	if err := ValidateBenchArgs([]string{"-m", "x", "-o", "md"}); err == nil || !strings.Contains(err.Error(), "-o md") {
		t.Errorf("-o md: %v", err)
	}
	if err := ValidateBenchArgs([]string{"-m", "x", "-oe", "jsonl"}); err == nil {
		t.Error("-oe accepted")
	}
	if err := ValidateBenchArgs([]string{"-m", "x", "-o"}); err == nil {
		t.Error("-o without value accepted")
	}
}

func TestSplitLegs(t *testing.T) {
	c := BenchConfig{Models: []string{"a", "b"}, Depths: []int{0, 8192}, Prompt: []int{512}}
	names := func(legs []BenchConfig) string {
		var s []string
		for _, l := range legs {
			s = append(s, strings.Join(l.Args(), " "))
		}
		return strings.Join(s, " | ")
	}
	cases := []struct {
		split Split
		want  string
	}{
		{SplitNone, "-m a -m b -p 512 -d 0,8192"},
		{SplitDepth, "-m a -m b -p 512 -d 0 | -m a -m b -p 512 -d 8192"},
		{SplitModel, "-m a -p 512 -d 0,8192 | -m b -p 512 -d 0,8192"},
		{SplitModelDepth, "-m a -p 512 -d 0 | -m a -p 512 -d 8192 | -m b -p 512 -d 0 | -m b -p 512 -d 8192"},
	}
	for _, cs := range cases {
		legs, err := SplitLegs(c, cs.split)
		if err != nil || names(legs) != cs.want {
			t.Errorf("%q: %v %s", cs.split, err, names(legs))
		}
	}
	if _, err := SplitLegs(c, "weird"); err == nil {
		t.Error("unknown split accepted")
	}
	// no depths: a depth split is one leg
	legs, _ := SplitLegs(BenchConfig{Models: []string{"a"}}, SplitDepth)
	if len(legs) != 1 {
		t.Errorf("%d legs", len(legs))
	}
	// splitting does not alias the input
	legs, _ = SplitLegs(c, SplitModelDepth)
	legs[0].Models[0] = "changed"
	if c.Models[0] != "a" {
		t.Error("split aliases the config")
	}
}
