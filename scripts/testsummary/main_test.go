package main

import (
	"os"
	"strings"
	"testing"
)

func run(t *testing.T, file string) (string, []skip) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	skips, err := summarize(f, &out)
	if err != nil {
		t.Fatal(err)
	}
	report(&out, skips)
	return out.String(), skips
}

// A recorded `go test -json` of a package with a passing, a skipped, a failing (in a subtest)
// and a subtest-skipping test: the failure's output and the package's FAIL lines are shown,
// the passing test's and the skipped tests' are not, and both skips are counted with their
// messages.
func TestSummarizeMixed(t *testing.T) {
	out, skips := run(t, "testdata/mixed.jsonl")
	for _, want := range []string{"x_test.go:5: boom", "--- FAIL: TestC/sub", "--- FAIL: TestC (", "FAIL\tx\t",
		"\n2 test(s) skipped\n", "  SKIP x TestB: x_test.go:4: no thing here\n", "  SKIP x TestD/s: x_test.go:6: sub skip 3\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, not := range []string{"=== RUN", "TestA", "--- SKIP", "--- PASS", "\nPASS\n"} {
		if strings.Contains(out, not) {
			t.Errorf("%q in\n%s", not, out)
		}
	}
	if len(skips) != 2 {
		t.Errorf("skips %+v", skips)
	}
}

// A package that does not build: the compiler's message and the package's FAIL line are shown.
func TestSummarizeBuildFailure(t *testing.T) {
	out, skips := run(t, "testdata/buildfail.jsonl")
	for _, want := range []string{"./y_test.go:3:27: undefined: undefinedThing\n", "FAIL\ty [build failed]\n", "\n0 test(s) skipped\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if len(skips) != 0 {
		t.Errorf("skips %+v", skips)
	}
}

// A line that is not an event (a stray print to stdout) is kept as it came; a test still
// running when the stream ends (a timeout) has its output shown.
func TestSummarizeOddLines(t *testing.T) {
	in := "not json\n" +
		`{"Action":"run","Package":"p","Test":"TestHang"}` + "\n" +
		`{"Action":"output","Package":"p","Test":"TestHang","Output":"    h_test.go:9: waiting\n"}` + "\n" +
		`{"Action":"output","Package":"p","Output":"panic: test timed out after 1s\n"}` + "\n"
	var out strings.Builder
	if _, err := summarize(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not json\n", "panic: test timed out after 1s\n", "(unfinished) p TestHang:\n    h_test.go:9: waiting\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
