// Command testsummary reads `go test -json` on stdin and prints what a plain `go test` prints
// (each failed test's output, each package's ok/FAIL line, build errors), then how many tests
// were skipped and why, one line each. `make test` pipes the suite through it (with pipefail,
// so go test's exit status is the target's). A skipped real-binary test under make test is a
// finding to read, not a pass: the count says how many there were.
//
// The events are go's own test2json stream, decoded leniently (encoding/json): a later Go may
// add fields, and a line that is not an event is printed as it came.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one test2json event (go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
}

// skip is one skipped test and the message it skipped with.
type skip struct {
	pkg, test, why string
}

func main() {
	skips, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	report(os.Stdout, skips)
}

// summarize copies the stream's plain-go-test view to w and returns the skipped tests.
func summarize(r io.Reader, w io.Writer) ([]skip, error) {
	// output of each running top-level test (with its subtests'), printed if it fails
	pending := map[string]*strings.Builder{}
	// each skipped test's own output, for its reason
	own := map[string]*strings.Builder{}
	var skips []skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		if e.Action == "build-output" {
			fmt.Fprint(w, e.Output)
			continue
		}
		if e.Test == "" {
			if e.Action == "output" && e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
				fmt.Fprint(w, e.Output)
			}
			continue
		}
		top, _, _ := strings.Cut(e.Test, "/")
		key, topKey := e.Package+" "+e.Test, e.Package+" "+top
		switch e.Action {
		case "run":
			if pending[topKey] == nil {
				pending[topKey] = &strings.Builder{}
			}
			own[key] = &strings.Builder{}
		case "output":
			if b := pending[topKey]; b != nil && !strings.HasPrefix(e.Output, "=== ") {
				b.WriteString(e.Output)
			}
			if b := own[key]; b != nil {
				b.WriteString(e.Output)
			}
		case "skip":
			skips = append(skips, skip{e.Package, e.Test, reason(own[key])})
			delete(own, key)
			if key == topKey {
				delete(pending, topKey)
			}
		case "pass":
			delete(own, key)
			if key == topKey {
				delete(pending, topKey)
			}
		case "fail":
			delete(own, key)
			if key == topKey {
				if b := pending[topKey]; b != nil {
					fmt.Fprint(w, b.String())
				}
				delete(pending, topKey)
			}
		}
	}
	// a test still running when the stream ended (a timeout, a crash): show what it printed
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "(unfinished) %s:\n%s", k, pending[k].String())
	}
	return skips, sc.Err()
}

// reason is a skipped test's message: what it printed (a -json run streams it before the
// "--- SKIP" line), without the framework's "=== RUN" and "--- SKIP" lines, joined.
func reason(b *strings.Builder) string {
	if b == nil {
		return ""
	}
	var out []string
	for l := range strings.Lines(b.String()) {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

func report(w io.Writer, skips []skip) {
	fmt.Fprintf(w, "\n%d test(s) skipped\n", len(skips))
	for _, s := range skips {
		fmt.Fprintf(w, "  SKIP %s %s: %s\n", s.pkg, s.test, s.why)
	}
}
