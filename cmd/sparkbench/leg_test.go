package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner"
	"sparkbench/runner/llamatest"
)

// fakeLlamaDir builds the runner's fake llama-bench into a test folder that passes
// llamacpp.Check (llama-bench and llama-server).
func fakeLlamaDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "llama-bench")
	cmd := exec.Command("go", "build", "-o", bin, "../../runner/testdata/fakellama")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fake llama-bench: %v: %s", err, out)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "llama-server")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stubLlamaDir is a folder with executable stand-ins (for usage errors that never run them).
func stubLlamaDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"llama-bench", "llama-server"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runLeg(args ...string) (int, string, string) {
	var o, e bytes.Buffer
	code := cmdLeg(args, &o, &e)
	return code, o.String(), e.String()
}

func TestLegRunFakeText(t *testing.T) {
	dir := fakeLlamaDir(t)
	t.Setenv("FAKELLAMA_MODE", "")
	tr := filepath.Join(t.TempDir(), "leg.transcript")
	code, out, errOut := runLeg("run", "--llama-dir", dir, "--transcript", tr, "--",
		"-m", "fake.gguf", "-p", "16", "-n", "8", "-d", "0,16", "-r", "2", "-t", "1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("want 4 results and a summary, got %q", lines)
	}
	for i, test := range []string{"pp16 ", "tg8 ", "pp16 @ d16", "tg8 @ d16"} {
		if !strings.HasPrefix(lines[i], test) || !strings.Contains(lines[i], "fake.gguf") || !strings.Contains(lines[i], "t/s") {
			t.Errorf("result line %d: %q", i, lines[i])
		}
	}
	if !strings.HasPrefix(lines[4], "leg class=ok rows=4/4 duration=") || strings.Contains(lines[4], "reason=") {
		t.Errorf("summary %q", lines[4])
	}
	if !strings.Contains(errOut, "# test 4/4") || !strings.Contains(errOut, "build 11669") || strings.Contains(strings.Join(lines, " "), "--progress") {
		t.Errorf("stderr %q", errOut)
	}
	b, err := os.ReadFile(tr)
	if err != nil || !bytes.Contains(b, []byte("\"n_prompt\": 0, \"n_gen\": 8, \"n_depth\": 16,")) || !bytes.Contains(b, []byte("}\r\n")) {
		t.Errorf("transcript %v %q", err, b)
	}
}

func TestLegRunFakeJSON(t *testing.T) {
	dir := fakeLlamaDir(t)
	t.Setenv("FAKELLAMA_MODE", "")
	code, out, errOut := runLeg("run", "--llama-dir", dir, "--json", "--progress", "--", "-m", "fake.gguf", "-p", "16", "-n", "8", "-r", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	var samples []runner.Event
	var summary struct {
		Type    string      `json:"type"`
		Argv    []string    `json:"argv"`
		Exit    runner.Exit `json:"exit"`
		Results int         `json:"results"`
	}
	for sc.Scan() {
		var probe struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &probe); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		if probe.Type == "summary" {
			if err := json.Unmarshal(sc.Bytes(), &summary); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var ev runner.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, ev)
	}
	if len(samples) != 2 || samples[0].Sample.Result.NPrompt != 16 || samples[1].Sample.Result.NGen != 8 || !samples[0].Sample.Result.Complete() {
		t.Fatalf("samples %+v", samples)
	}
	argv := strings.Join(summary.Argv, " ")
	if summary.Exit.Class != runner.ClassOK || summary.Results != 2 || !strings.HasSuffix(argv, "-r 2 -o jsonl --progress") {
		t.Fatalf("summary %+v", summary)
	}
}

func TestLegRunFailuresExitOne(t *testing.T) {
	dir := fakeLlamaDir(t)
	cases := []struct {
		mode string
		args []string
		want string
	}{
		{"segv:1", nil, "class=crashed"},
		{"hang:1", []string{"--idle-timeout", "300ms"}, "class=timeout"},
		{"devicelost:1", nil, "class=device_lost"},
		{"", []string{"--idle-timeout", "5s"}, "class=flagged"}, // with FAKELLAMA_CV below
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			t.Setenv("FAKELLAMA_MODE", c.mode)
			if c.want == "class=flagged" {
				t.Setenv("FAKELLAMA_CV", "0.3")
			}
			args := append(append([]string{"run", "--llama-dir", dir}, c.args...), "--", "-m", "fake.gguf", "-p", "16", "-n", "8", "-r", "3")
			code, out, errOut := runLeg(args...)
			if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "reason=") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
		})
	}
}

func TestLegRunUsage(t *testing.T) {
	dir := stubLlamaDir(t)
	cases := []struct {
		args []string
		want string
	}{
		{nil, "want `sparkbench leg run"},
		{[]string{"walk"}, "want `sparkbench leg run"},
		{[]string{"run", "-m", "x"}, "flag provided but not defined"},
		{[]string{"run", "--llama-dir", dir}, "after --"},
		{[]string{"run", "--llama-dir", dir, "--"}, "no llama-bench arguments"},
		{[]string{"run", "--llama-dir", dir, "--", "-m", "x", "-oe", "md"}, "-oe"},
		{[]string{"run", "--llama-dir", dir, "--", "-m", "x", "-o", "md"}, "-o md"},
		{[]string{"run", "--llama-dir", "/nonexistent", "--", "-m", "x"}, "does not exist"},
		{[]string{"run", "--idle-timeout", "soon", "--", "-m", "x"}, "invalid value"},
	}
	for _, c := range cases {
		code, out, errOut := runLeg(c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%q: exit %d stdout %q stderr %q", c.args, code, out, errOut)
		}
	}
}

func TestLegRunRealTinyModel(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	code, out, errOut := runLeg("run", "--llama-dir", loc.Dir, "--no-cv-gate", "--", "-m", model, "-p", "32", "-n", "16", "-r", "2", "-t", llamatest.Threads)
	if code != 0 || !strings.Contains(out, "leg class=ok rows=2/2") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	t.Logf("stdout:\n%sstderr:\n%s", out, errOut)
	code, out, _ = runLeg("run", "--llama-dir", loc.Dir, "--", "-m", filepath.Join(t.TempDir(), "absent.gguf"), "-t", llamatest.Threads)
	if code != 1 || !strings.Contains(out, "class=load_failed") || !strings.Contains(out, "failed to open GGUF file") {
		t.Fatalf("missing model: exit %d %s", code, out)
	}
}
