package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the module path the rules are written in.
const Module = "sparkbench"

// Pure lists the packages that start no process, directly or through what they import.
var Pure = []string{
	"app/analysis", "app/bundle", "app/canon", "app/capacity", "app/charts", "app/energy", "app/kinds", "app/overview", "app/quant", "app/receipt",
	"app/study", "app/textsafe", "plots", "plots/lttb", "runner/benchfmt", "runner/devlog", "runner/evq", "runner/gguf",
	"runner/promptset", "runner/quantfmt", "runner/telemetry", "runner/vocab", "store",
}

// ProcessCode lists what starts processes: a pure package reaching one of these breaks a rule.
var ProcessCode = []string{
	"github.com/creack/pty", "os/exec",
	Module + "/runner", Module + "/runner/llamacpp", Module + "/runner/server",
	Module + "/runner/loadgen", Module + "/runner/quality",
}

// FyneDriver is the package that brings in Fyne's GL driver.
const FyneDriver = "fyne.io/fyne/v2/app"

// Graph maps an import path to the import paths it imports directly.
type Graph map[string][]string

// Violation is one broken rule: the package, the rule, and the chain of imports from the
// package to what it may not reach.
type Violation struct {
	Package string
	Rule    string
	Chain   []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s: %s", v.Package, v.Rule, strings.Join(v.Chain, " -> "))
}

// Check returns every broken rule of g, sorted.
func Check(g Graph) []Violation {
	var out []Violation
	for _, p := range Pure {
		pkg := Module + "/" + p
		if _, ok := g[pkg]; !ok {
			out = append(out, Violation{pkg, "a package the rules name is missing from the tree (rename it in app/layering too)", []string{pkg}})
			continue
		}
		for _, bad := range ProcessCode {
			if chain := path(g, pkg, bad); chain != nil {
				out = append(out, Violation{pkg, "a pure package reaches process code", chain})
			}
		}
	}
	for pkg, imps := range g {
		if pkg == Module+"/ui" || strings.HasPrefix(pkg, Module+"/ui/") && !strings.HasPrefix(pkg, Module+"/ui/uitest") {
			for _, imp := range imps {
				if strings.HasPrefix(imp, Module+"/runner/") || imp == Module+"/runner" || imp == Module+"/store" {
					out = append(out, Violation{pkg, "ui imports runner/... or the store (go through app or a service)", []string{pkg, imp}})
				}
			}
		}
		if strings.HasPrefix(pkg, Module+"/") && !strings.HasPrefix(pkg, Module+"/cmd/") && slices.Contains(imps, FyneDriver) {
			out = append(out, Violation{pkg, "only cmd/... imports Fyne's GL driver", []string{pkg, FyneDriver}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// path is the shortest import chain from a to b in g, or nil.
func path(g Graph, a, b string) []string {
	prev := map[string]string{a: ""}
	queue := []string{a}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == b {
			var chain []string
			for ; n != ""; n = prev[n] {
				chain = append([]string{n}, chain...)
			}
			return chain
		}
		for _, m := range g[n] {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}
