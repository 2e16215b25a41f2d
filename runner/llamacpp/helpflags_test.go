package llamacpp_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
)

// helpWant is what each help text must declare (aliases included) and must not (argument
// names, description words, section rules).
var helpWant = map[string]struct{ has, hasNot []string }{
	"llama-bench": {
		has: []string{"-h", "--help", "--version", "-m", "--model", "-r", "--repetitions", "-o", "--output",
			"-oe", "--output-err", "-hf", "-hfr", "--hf-repo", "-p", "--n-prompt", "-pg", "-d", "--n-depth",
			"-ub", "--ubatch-size", "-ctk", "-ctv", "-t", "--threads", "-ngl", "--n-gpu-layers", "-fa",
			"--flash-attn", "-ot", "--override-tensor", "--no-warmup", "--progress", "--list-devices",
			"-fitt", "--fit-target", "--no-host", "--repack", "--offline", "-C", "--cpu-strict"},
		hasNot: []string{"<n>", "<filename>", "-----", "-", "--", "--parallel", "--port"},
	},
	"llama-server": {
		has: []string{"-h", "--help", "--usage", "--version", "-t", "--threads", "-c", "--ctx-size",
			"-n", "--predict", "--n-predict", "-fa", "--flash-attn", "--perf", "--no-perf", "-e", "--escape",
			"--no-escape", "-kvo", "--kv-offload", "-nkvo", "--no-kv-offload", "--repack", "-nr", "--no-repack",
			"-ngl", "--gpu-layers", "--n-gpu-layers", "-ctk", "--cache-type-k", "-ub", "--ubatch-size",
			"-np", "--parallel", "--port", "--host", "-m", "--model", "-lv", "--verbosity", "-v", "--verbose",
			"-lm", "--load-mode", "-r", "--reverse-prompt", "-hfr", "--hf-repo", "--spec-draft-type-k", "-ctkd", "--cache-type-k-draft",
			"--log-colors", "--ignore-eos", "-sm", "--split-mode", "--control-vector-layer-range"},
		hasNot: []string{"N", "FNAME", "-----", "-", "-1", "--ouput", "--n-depth", "--no-mmap", "PROMPT"},
	},
}

func checkHelpFlags(t *testing.T, tool string, flags map[string]bool) {
	t.Helper()
	w := helpWant[tool]
	for _, f := range w.has {
		if !flags[f] {
			t.Errorf("%s: %s not listed (got %d flags)", tool, f, len(flags))
		}
	}
	for _, f := range w.hasNot {
		if flags[f] {
			t.Errorf("%s: %q listed as a flag", tool, f)
		}
	}
	for f := range flags {
		if !strings.HasPrefix(f, "-") || strings.ContainsAny(f, " ,<>[]{}|=") {
			t.Errorf("%s: malformed flag %q", tool, f)
		}
	}
}

// The verbatim help texts in the shared reference folder (read in place).
func TestParseHelpFlagsSamples(t *testing.T) {
	for _, tool := range []string{"llama-bench", "llama-server"} {
		t.Run(tool, func(t *testing.T) {
			data, err := os.ReadFile(llamatest.SharedSample(t, tool+".help.txt"))
			if err != nil {
				t.Fatal(err)
			}
			flags := llamacpp.ParseHelpFlags(string(data))
			checkHelpFlags(t, tool, flags)
			// the server's help lists some 300 flags, the bench's some 60: a parser that
			// stops early or reads description words shows up here
			min, max := 50, 90
			if tool == "llama-server" {
				min, max = 250, 450
			}
			if n := len(flags); n < min || n > max {
				t.Errorf("%d flags, want %d–%d: %q", n, min, max, llamacpp.SortedFlags(flags))
			}
		})
	}
}

func TestParseHelpFlagsLayouts(t *testing.T) {
	text := "usage: x [options]\r\n" +
		"  -m, --model <filename>      (default: m.gguf)\r\n" +
		"-fa,   --flash-attn [on|off|auto]       set Flash Attention use\n" +
		"--no-mmap                               do not memory-map model\n" +
		"-ngl,  --gpu-layers, --n-gpu-layers N   max. number of layers\n" +
		"  -ot --override-tensor <pattern>=<type>\n" +
		"-kvo,  --kv-offload, -nkvo, --no-kv-offload\n" +
		"                                        -1 = all, --not-a-flag in a description\n" +
		"                                        - auto: mmap\n" +
		"----- sampling params -----\n" +
		"--keep N                                -1 keeps all\n"
	got := llamacpp.SortedFlags(llamacpp.ParseHelpFlags(text))
	want := []string{"--flash-attn", "--gpu-layers", "--keep", "--kv-offload", "--model", "--n-gpu-layers",
		"--no-kv-offload", "--no-mmap", "--override-tensor", "-fa", "-kvo", "-m", "-ngl", "-nkvo", "-ot"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestUnknownFlags(t *testing.T) {
	known := map[string]bool{"-t": true, "--threads": true, "-fa": true, "--seed": true, "-lv": true}
	cases := []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"-t", "4", "-fa", "off", "-lv", "4"}, nil},
		{[]string{"--seed", "-1", "-t", "-2.5"}, nil},
		{[]string{"-t", "4", "--no-such-flag", "x", "--no-such-flag", "-Z"}, []string{"--no-such-flag", "-Z"}},
		{[]string{"--threads=4"}, []string{"--threads=4"}}, // llama.cpp refuses the joined form
		{[]string{"-", "--", "-1x"}, []string{"-", "--", "-1x"}},
	}
	for _, c := range cases {
		if got := llamacpp.UnknownFlags(c.args, known); !reflect.DeepEqual(got, c.want) {
			t.Errorf("UnknownFlags(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// The real binaries: their --help parses to the same kind of set, and a flag they refuse is
// reported unknown.
func TestRealHelpFlags(t *testing.T) {
	loc := llamatest.Binaries(t)
	for tool, bin := range map[string]string{"llama-bench": loc.Bench, "llama-server": loc.Server} {
		flags, err := llamacpp.HelpFlags(context.Background(), bin)
		if err != nil {
			t.Fatal(err)
		}
		checkHelpFlags(t, tool, flags)
		if u := llamacpp.UnknownFlags([]string{"-t", "1", "--no-such-flag", "1"}, flags); !reflect.DeepEqual(u, []string{"--no-such-flag"}) {
			t.Errorf("%s: unknown = %q", tool, u)
		}
		again, err := llamacpp.HelpFlags(context.Background(), bin)
		if err != nil || len(again) != len(flags) {
			t.Errorf("%s: second call %d flags, %v", tool, len(again), err)
		}
	}
}

// A binary that is not a llama.cpp tool, one that fails, one that floods and one that hangs
// ignoring SIGTERM: each is an error, none hangs or keeps its whole output.
func TestFaultsHelpFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct{ name, body, want string }{
		{"silent", "exit 0", "--help listed no flags"},
		{"fails", "echo 'error: invalid argument: --help' >&2; exit 1", "exit status 1: error: invalid argument: --help"},
		{"flood", "yes 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | head -c 50000000; exit 0", "--help listed no flags"},
	}
	for _, c := range cases {
		_, err := llamacpp.HelpFlags(context.Background(), write(c.name, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// a hang: cancelled by the caller's context (HelpTimeout itself is 20 s)
	ctx, cancel := context.WithCancel(context.Background())
	hang := write("hang", "trap '' TERM; while :; do sleep 1; done")
	errc := make(chan error, 1)
	go func() { _, err := llamacpp.HelpFlags(ctx, hang); errc <- err }()
	cancel()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("hang: err = %v", err)
	}
	if _, err := llamacpp.HelpFlags(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("folder: err = %v", err)
	}
}
