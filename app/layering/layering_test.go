package layering

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestImportRules: the tree keeps every rule of the package doc. A failure names the package,
// the rule and the chain of imports, e.g.
//
//	sparkbench/app/receipt: a pure package reaches process code: sparkbench/app/receipt -> sparkbench/app/capacity/caprun -> sparkbench/runner
func TestImportRules(t *testing.T) {
	g := treeGraph(t)
	for _, v := range Check(g) {
		t.Error(v)
	}
	if t.Failed() {
		t.Log("move the process-driving code into its kind's run package (app/study/studyrun, app/capacity/caprun) or the data into runner/vocab; docs/architecture.md has the map")
	}
}

// TestCheckNamesTheEdge: the check fails on each kind of forbidden import, naming the chain,
// and passes a graph that keeps the rules.
func TestCheckNamesTheEdge(t *testing.T) {
	m := func(p string) string { return Module + "/" + p }
	clean := Graph{}
	for _, p := range Pure {
		clean[m(p)] = nil
	}
	clean[m("app/receipt")] = []string{m("app/capacity"), m("runner/vocab")}
	clean[m("ui")] = []string{m("app"), m("app/capacity"), "fyne.io/fyne/v2"}
	clean[m("cmd/sparkbench")] = []string{FyneDriver, m("runner"), m("store")}
	clean[m("runner")] = []string{"os/exec", "github.com/creack/pty"}
	if vs := Check(clean); len(vs) != 0 {
		t.Fatalf("a graph that keeps the rules: %v", vs)
	}
	cases := []struct {
		name        string
		from, to    string
		wantPackage string
		wantChain   string
	}{
		{"pure reaches the runner through a kind's run package", m("app/capacity"), m("app/capacity/caprun"),
			m("app/capacity"), m("app/capacity") + " -> " + m("app/capacity/caprun") + " -> " + m("runner")},
		{"receipt through capacity", m("app/capacity"), m("runner/server"),
			m("app/receipt"), m("app/receipt") + " -> " + m("app/capacity") + " -> " + m("runner/server")},
		{"store starts a process", m("store"), "os/exec", m("store"), m("store") + " -> os/exec"},
		{"ui imports the store", m("ui"), m("store"), m("ui"), m("ui") + " -> " + m("store")},
		{"ui imports a runner leaf", m("ui"), m("runner/hashing"), m("ui"), m("ui") + " -> " + m("runner/hashing")},
		{"the GL driver outside cmd", m("plots"), FyneDriver, m("plots"), m("plots") + " -> " + FyneDriver},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Graph{}
			for k, v := range clean {
				g[k] = slices.Clone(v)
			}
			g[m("app/capacity/caprun")] = []string{m("app/capacity"), m("runner")}
			g[c.from] = append(g[c.from], c.to)
			var got []string
			for _, v := range Check(g) {
				got = append(got, v.String())
				if v.Package == c.wantPackage && strings.Join(v.Chain, " -> ") == c.wantChain {
					return
				}
			}
			t.Fatalf("no violation %s: %s; got %q", c.wantPackage, c.wantChain, got)
		})
	}
	delete(clean, m("app/study"))
	if vs := Check(clean); len(vs) != 1 || !strings.Contains(vs[0].Rule, "missing from the tree") {
		t.Fatalf("a renamed pure package must be named, not skipped: %v", vs)
	}
}

// treeGraph is the module's import graph (non-test imports, the build's tags) from go list.
func treeGraph(t *testing.T) Graph {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-tags", "migrated_fynedo", "-deps",
		"-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := Graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			g[f[0]] = f[1:]
		}
	}
	if _, ok := g[Module+"/cmd/sparkbench"]; !ok || len(g) < 50 {
		t.Fatalf("go list gave %d packages and no %s/cmd/sparkbench: not the module's graph", len(g), Module)
	}
	return g
}
