package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/quantfmt"
)

// fakeTool writes a shell script standing in for a llama.cpp tool: it prints a captured
// transcript (runner/quantfmt/testdata/NAME.txt), runs then (shell code, e.g. writing the
// output file) and exits with code.
func fakeTool(t *testing.T, fixture, then string, code int) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("quantfmt", "testdata", fixture+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fake-tool")
	script := "#!/bin/sh\ncat '" + abs + "'\n" + then + "\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func quantTypes(t *testing.T) quantfmt.QuantTypes {
	t.Helper()
	text, _ := quantFixture(t, "quantize-help")
	ts, err := quantfmt.ParseQuantizeHelp(text)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

var quickLimits = Limits{Start: 20 * time.Second, Idle: 20 * time.Second, Total: time.Minute, Grace: time.Second}

func TestQuantizeArgv(t *testing.T) {
	s := QuantizeSpec{Tool: "q", Input: "in.gguf", Type: "Q4_0", Threads: 1, IMatrix: "m.gguf", Args: []string{"--pure"}}
	if got := s.Argv("out.part"); !reflect.DeepEqual(got, []string{"q", "--imatrix", "m.gguf", "--pure", "in.gguf", "out.part", "Q4_0", "1"}) {
		t.Errorf("argv %q", got)
	}
	s = QuantizeSpec{Tool: "q", Input: "in.gguf", Type: "Q4_K_M", DryRun: true}
	if got := s.Argv(""); !reflect.DeepEqual(got, []string{"q", "--dry-run", "in.gguf", "Q4_K_M"}) {
		t.Errorf("dry-run argv %q", got)
	}
	for _, bad := range [][]string{{"--dry-run"}, {"--imatrix", "x"}, {"--keep-split"}, {"--help"}, {"model.gguf"}} {
		if err := ValidateQuantizeArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := ValidateQuantizeArgs([]string{"--pure", "--output-tensor-type", "q8_0", "--tensor-type", "attn_q=q8_0"}); err != nil {
		t.Error(err)
	}
}

// A run of a stand-in that prints the real Q4_0 transcript and writes its file: progress
// tensor by tensor up to 75 of 75, class ok, the file under its name, no temporary left.
func TestQuantizeFake(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model-q4_0.gguf")
	tool := fakeTool(t, "quantize-q4_0", `printf 'GGUF-bytes' > "$2"`, 0)
	r := StartQuantize(context.Background(), QuantizeSpec{Tool: tool, Input: "in.gguf", Output: out, Type: "q4_0", Threads: 1,
		Types: quantTypes(t), Limits: quickLimits, NoFingerprint: true})
	evs := collect(t, r.Events(), time.Minute)
	res := r.Result()
	if res.Exit.Class != ClassOK || res.Output != out || res.Bytes != 10 || res.Exit.Rows != 75 || res.Exit.Expected != 75 || res.Err != nil {
		t.Fatalf("exit %+v output %q bytes %d err %v", res.Exit, res.Output, res.Bytes, res.Err)
	}
	if res.Type == nil || res.Type.Name != "Q4_0" || res.Argv[len(res.Argv)-2] != "q4_0" {
		t.Errorf("type %+v argv %q", res.Type, res.Argv)
	}
	if b, _ := os.ReadFile(out); string(b) != "GGUF-bytes" {
		t.Errorf("output %q", b)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("folder holds %v", names)
	}
	prog := ofType(evs, EventProgress)
	if len(prog) == 0 {
		t.Fatal("no progress")
	}
	last := prog[len(prog)-1].Progress
	if last.Done != 75 || last.Total != 75 || last.Test != 75 || !strings.HasPrefix(last.Phase, "blk.7.ffn_up.weight f16 -> q4_0") {
		t.Errorf("last progress %+v", last)
	}
	assertGone(t, r.Pid())
}

// Refusals never start the tool and never touch the destination: an existing file, a
// missing folder, an unknown type (the typed error lists the build's types).
func TestQuantizeRefusals(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "there.gguf")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool := fakeTool(t, "quantize-q4_0", `printf 'x' > "$2"`, 0)
	types := quantTypes(t)
	cases := []struct {
		name string
		spec QuantizeSpec
		want any
		msg  string
	}{
		{"exists", QuantizeSpec{Output: existing, Type: "Q4_0"}, &OutputExistsError{}, "never overwrites"},
		{"no folder", QuantizeSpec{Output: filepath.Join(dir, "nope", "x.gguf"), Type: "Q4_0"}, nil, "create it first"},
		{"unknown type", QuantizeSpec{Output: filepath.Join(dir, "x.gguf"), Type: "Q9_9"}, &quantfmt.UnknownTypeError{}, "Q4_K_M"},
		{"dry run with output", QuantizeSpec{Output: filepath.Join(dir, "x.gguf"), Type: "Q4_0", DryRun: true}, nil, "leave Output empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.spec
			s.Tool, s.Input, s.Types, s.Limits, s.NoFingerprint = tool, "in.gguf", types, quickLimits, true
			r := StartQuantize(context.Background(), s)
			collect(t, r.Events(), time.Minute)
			res := r.Result()
			if res.Exit.Class != ClassBadArgs || r.Pid() != 0 || !strings.Contains(res.Exit.Reason, c.msg) || res.Output != "" {
				t.Fatalf("exit %+v pid %d", res.Exit, r.Pid())
			}
			switch c.want.(type) {
			case *OutputExistsError:
				var e *OutputExistsError
				if !errors.As(res.Err, &e) || e.Path != existing {
					t.Errorf("err %v", res.Err)
				}
			case *quantfmt.UnknownTypeError:
				var e *quantfmt.UnknownTypeError
				if !errors.As(res.Err, &e) || len(e.Valid) != 39 {
					t.Errorf("err %v", res.Err)
				}
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the existing file became %q", b)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("folder holds %v", names)
	}
}

// A tool that fails (here: the real requantize refusal, exit 1) or exits 0 having printed
// half of its tensors leaves nothing behind; the class says why.
func TestQuantizeFakeFailures(t *testing.T) {
	for _, c := range []struct {
		fixture string
		code    int
		class   Class
		reason  string
	}{
		{"quantize-requant", 1, ClassBadArgs, "requantizing from type q8_0 is disabled"},
		{"quantize-missing-input", 1, ClassLoadFailed, "failed to open GGUF file"},
		{"quantize-needs-imatrix", 0, ClassBadArgs, "requires an importance matrix"},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "x.gguf")
			tool := fakeTool(t, c.fixture, `printf 'partial' > "$2"`, c.code)
			r := StartQuantize(context.Background(), QuantizeSpec{Tool: tool, Input: "in.gguf", Output: out, Type: "Q4_0",
				Types: quantTypes(t), Limits: quickLimits, NoFingerprint: true})
			collect(t, r.Events(), time.Minute)
			res := r.Result()
			if res.Exit.Class != c.class || !strings.Contains(res.Exit.Reason, c.reason) || res.Output != "" {
				t.Fatalf("exit %+v", res.Exit)
			}
			if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
				t.Errorf("left behind: %v", names)
			}
			if names, _ := filepath.Glob(filepath.Join(dir, ".*")); len(names) != 0 {
				t.Errorf("left behind: %v", names)
			}
		})
	}
}

// commit never replaces a file that appeared after the run started.
func TestPartialNoClobber(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "m.gguf")
	p, err := newPartial(dest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.tmp, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = p.commit()
	var oe *OutputExistsError
	if !errors.As(err, &oe) {
		t.Fatalf("commit over an existing file: %v", err)
	}
	if b, _ := os.ReadFile(dest); string(b) != "someone else's" {
		t.Errorf("dest became %q", b)
	}
	p.abort()
	if _, err := os.Stat(p.tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
}
