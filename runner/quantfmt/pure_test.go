package quantfmt

import (
	"os/exec"
	"strings"
	"testing"
)

// The package is pure (docs/architecture.md): nothing it imports, directly or not, starts a
// process. (app/layering checks the packages its Pure list names; this one checks itself.)
func TestPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "sparkbench/runner/quantfmt").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "os/exec", dep == "github.com/creack/pty", dep == "sparkbench/runner",
			strings.HasPrefix(dep, "sparkbench/runner/") && dep != "sparkbench/runner/quantfmt":
			t.Errorf("runner/quantfmt reaches %s: keep process code (and the runner) out of it", dep)
		}
	}
}
