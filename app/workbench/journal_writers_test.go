package workbench

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The journal kinds the code writes, read from the code itself: every call of the journal's
// append functions — the store's appendJournalTx and AppendJournal, and the recorders' Note
// (store.StudyRecorder, store.CapacityRecorder and the engines' Recorder interfaces) — in the
// module's non-test Go sources, with its kind argument resolved to the constant strings it can
// be: a string literal, a constant of its own or another package of the module (through any
// chain of constants), a local variable (every value assigned to it in the function), a
// parameter (the argument at that position of every call of the function in its package), a
// struct field set in its package's composite literals, or a call of a function of its package
// (every value it returns). A kind argument the scan cannot resolve fails the test unless it is
// one of dynamicJournalKinds below, with why its kinds are known. So a new writer, or a new kind
// written by an old one, is found without anyone listing it; the renderer's own list is never
// read to decide what must be covered.

// journalAppendFuncs are the append functions by name, with the index of their kind argument
// and their number of arguments.
var journalAppendFuncs = map[string]struct{ arg, nargs int }{
	"appendJournalTx": {1, 4}, // (tx, kind, study, entry)
	"AppendJournal":   {1, -1},
	"Note":            {2, 4}, // (ctx, study, kind, payload)
}

// dynamicJournalKinds are the kind arguments the scan does not resolve (file: expression), and
// why their kinds are nonetheless kinds of the list.
var dynamicJournalKinds = map[string]string{
	// A bundle's import re-journals the origin study's own engine notes (the study.* entries
	// cmd/sparkbench's importbundle.go keeps): kinds some writer of this list wrote there.
	"store/bundleimport.go: note.Kind": "the origin's own notes, copied from an imported bundle",
}

// journalWrite is one call of an append function and the kinds it can write.
type journalWrite struct {
	where string // file:line
	kinds []string
}

type goPkg struct {
	path   string // import path
	files  []*goFile
	consts map[string]constDef
	funcs  map[string][]funcDef
}

type goFile struct {
	rel     string // slash path from the module root
	pkg     *goPkg
	ast     *ast.File
	imports map[string]string // local name → import path
}

type constDef struct {
	expr ast.Expr
	file *goFile
}

type funcDef struct {
	decl *ast.FuncDecl
	file *goFile
}

type journalScan struct {
	fset   *token.FileSet
	module string
	pkgs   map[string]*goPkg // by import path
	writes []journalWrite
	// unresolved: "file: expression" of each kind argument the scan could not resolve.
	unresolved map[string]string
}

// moduleRoot is the folder of go.mod above the test's folder.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
					return dir, f[1]
				}
			}
			t.Fatalf("%s: no module line", filepath.Join(dir, "go.mod"))
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// scanJournalWrites parses every non-test Go file of the module and resolves every append call.
func scanJournalWrites(t *testing.T, root, module string) *journalScan {
	t.Helper()
	s := &journalScan{fset: token.NewFileSet(), module: module, pkgs: map[string]*goPkg{}, unresolved: map[string]string{}}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(s.fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ipath := module
		if d := filepath.ToSlash(filepath.Dir(rel)); d != "." {
			ipath += "/" + d
		}
		pkg := s.pkgs[ipath]
		if pkg == nil {
			pkg = &goPkg{path: ipath, consts: map[string]constDef{}, funcs: map[string][]funcDef{}}
			s.pkgs[ipath] = pkg
		}
		gf := &goFile{rel: filepath.ToSlash(rel), pkg: pkg, ast: f, imports: map[string]string{}}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			local := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			gf.imports[local] = path
		}
		pkg.files = append(pkg.files, gf)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							pkg.consts[n.Name] = constDef{vs.Values[i], gf}
						}
					}
				}
			case *ast.FuncDecl:
				pkg.funcs[d.Name.Name] = append(pkg.funcs[d.Name.Name], funcDef{d, gf})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range s.pkgs {
		for _, f := range pkg.files {
			for _, decl := range f.ast.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					spec, ok := journalAppendFuncs[calledName(call)]
					if !ok || (spec.nargs >= 0 && len(call.Args) != spec.nargs) || len(call.Args) <= spec.arg {
						return true
					}
					arg := call.Args[spec.arg]
					// An append function handing its own kind parameter on is not a writer.
					if _, isAppend := journalAppendFuncs[fd.Name.Name]; isAppend && paramIndex(fd, arg) >= 0 {
						return true
					}
					r := &resolver{s: s, seen: map[string]bool{}}
					kinds := r.resolve(arg, f, fd, 0)
					w := journalWrite{where: fmt.Sprintf("%s:%d", f.rel, s.fset.Position(call.Pos()).Line), kinds: kinds}
					for _, u := range r.unresolved {
						s.unresolved[u] = w.where
					}
					s.writes = append(s.writes, w)
					return true
				})
			}
		}
	}
	return s
}

// calledName is the name of the function or method a call calls ("" for anything else).
func calledName(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// paramIndex is the position of the identifier e among fd's parameters (-1: not one).
func paramIndex(fd *ast.FuncDecl, e ast.Expr) int {
	id, ok := e.(*ast.Ident)
	if !ok || fd.Type.Params == nil {
		return -1
	}
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, n := range field.Names {
			if n.Name == id.Name {
				return i
			}
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	return -1
}

type resolver struct {
	s          *journalScan
	seen       map[string]bool
	unresolved []string
}

func (r *resolver) src(f *goFile, e ast.Expr) string {
	return fmt.Sprintf("%s: %s", f.rel, exprText(e))
}

// exprText prints an expression as written (enough for the few forms a kind argument takes).
func exprText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprText(x.X) + "." + x.Sel.Name
	case *ast.CallExpr:
		return exprText(x.Fun) + "(…)"
	case *ast.BasicLit:
		return x.Value
	case *ast.ParenExpr:
		return "(" + exprText(x.X) + ")"
	}
	return fmt.Sprintf("%T", e)
}

func (r *resolver) fail(f *goFile, e ast.Expr) []string {
	r.unresolved = append(r.unresolved, r.src(f, e))
	return nil
}

// resolve is every constant string e can be, read in file f inside function fd (nil: at
// package level).
func (r *resolver) resolve(e ast.Expr, f *goFile, fd *ast.FuncDecl, depth int) []string {
	if depth > 12 {
		return r.fail(f, e)
	}
	key := fmt.Sprintf("%s:%d", f.rel, r.s.fset.Position(e.Pos()).Offset)
	if r.seen[key] {
		return nil // a cycle: its other paths are resolved where they start
	}
	r.seen[key] = true
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			v, err := strconv.Unquote(x.Value)
			if err == nil {
				return []string{v}
			}
		}
	case *ast.ParenExpr:
		return r.resolve(x.X, f, fd, depth+1)
	case *ast.Ident:
		if fd != nil {
			if vals, ok := localValues(fd, x.Name); ok {
				var out []string
				for _, v := range vals {
					out = append(out, r.resolve(v, f, fd, depth+1)...)
				}
				return out
			}
			if i := paramIndex(fd, x); i >= 0 {
				return r.callers(f.pkg, fd, i, e, f, depth)
			}
		}
		if c, ok := f.pkg.consts[x.Name]; ok {
			return r.resolve(c.expr, c.file, nil, depth+1)
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if path, ok := f.imports[id.Name]; ok {
				if pkg := r.s.pkgs[path]; pkg != nil {
					if c, ok := pkg.consts[x.Sel.Name]; ok {
						return r.resolve(c.expr, c.file, nil, depth+1)
					}
				}
				return r.fail(f, e)
			}
		}
		if _, dynamic := dynamicJournalKinds[r.src(f, e)]; dynamic {
			r.unresolved = append(r.unresolved, r.src(f, e))
			return nil
		}
		return r.fieldValues(f.pkg, x.Sel.Name, e, f, depth)
	case *ast.CallExpr:
		if id, ok := x.Fun.(*ast.Ident); ok {
			if defs := f.pkg.funcs[id.Name]; len(defs) > 0 {
				var out []string
				for _, d := range defs {
					ast.Inspect(d.decl.Body, func(n ast.Node) bool {
						if _, lit := n.(*ast.FuncLit); lit {
							return false
						}
						if ret, ok := n.(*ast.ReturnStmt); ok && len(ret.Results) > 0 {
							out = append(out, r.resolve(ret.Results[0], d.file, d.decl, depth+1)...)
						}
						return true
					})
				}
				return out
			}
		}
	}
	return r.fail(f, e)
}

// callers resolves parameter i of fd: the argument at i of every call of fd in its package.
func (r *resolver) callers(pkg *goPkg, fd *ast.FuncDecl, i int, e ast.Expr, f *goFile, depth int) []string {
	var out []string
	found := false
	for _, cf := range pkg.files {
		for _, decl := range cf.ast.Decls {
			caller, ok := decl.(*ast.FuncDecl)
			if !ok || caller.Body == nil {
				continue
			}
			ast.Inspect(caller.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || calledName(call) != fd.Name.Name || len(call.Args) <= i {
					return true
				}
				found = true
				out = append(out, r.resolve(call.Args[i], cf, caller, depth+1)...)
				return true
			})
		}
	}
	if !found {
		return r.fail(f, e)
	}
	return out
}

// fieldValues resolves a struct field: every value its package's composite literals give it.
func (r *resolver) fieldValues(pkg *goPkg, field string, e ast.Expr, f *goFile, depth int) []string {
	var out []string
	found := false
	for _, cf := range pkg.files {
		for _, decl := range cf.ast.Decls {
			fd, _ := decl.(*ast.FuncDecl)
			ast.Inspect(decl, func(n ast.Node) bool {
				kv, ok := n.(*ast.KeyValueExpr)
				if !ok {
					return true
				}
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == field {
					found = true
					out = append(out, r.resolve(kv.Value, cf, fd, depth+1)...)
				}
				return true
			})
		}
	}
	if !found {
		return r.fail(f, e)
	}
	return out
}

// localValues is every value assigned to the local name in fd (false: not a local of fd).
func localValues(fd *ast.FuncDecl, name string) ([]ast.Expr, bool) {
	var vals []ast.Expr
	found := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == name {
					found = true
					if len(s.Lhs) == len(s.Rhs) {
						vals = append(vals, s.Rhs[i])
					} else {
						vals = append(vals, &ast.BadExpr{}) // a multi-value call: not a constant
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range s.Names {
				if id.Name == name {
					found = true
					if i < len(s.Values) {
						vals = append(vals, s.Values[i])
					}
				}
			}
		}
		return true
	})
	return vals, found
}

// writtenJournalKinds is every kind the module's code writes, with one place that writes it.
func writtenJournalKinds(t *testing.T) map[string]string {
	t.Helper()
	root, module := moduleRoot(t)
	s := scanJournalWrites(t, root, module)
	var problems []string
	for u, where := range s.unresolved {
		if _, ok := dynamicJournalKinds[u]; !ok {
			problems = append(problems, fmt.Sprintf("%s (in the call at %s)", u, where))
		}
	}
	for d := range dynamicJournalKinds {
		if _, ok := s.unresolved[d]; !ok {
			problems = append(problems, fmt.Sprintf("dynamicJournalKinds lists %q, which no append call has any more: remove it", d))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Errorf("a journal kind argument the scan cannot resolve to constant kinds: %s; journal a constant kind, or list it in dynamicJournalKinds with why its kinds are known", p)
	}
	kinds := map[string]string{}
	for _, w := range s.writes {
		for _, k := range w.kinds {
			if _, ok := kinds[k]; !ok {
				kinds[k] = w.where
			}
		}
	}
	return kinds
}

// TestEveryWrittenJournalKindHasASentence: every kind the code writes (found by scanning the
// code, not by asking the renderer) reads as a sentence of its own, never as "KIND entry (see
// its payload)".
func TestEveryWrittenJournalKindHasASentence(t *testing.T) {
	kinds := writtenJournalKinds(t)
	// The scan must see writers of every layer: the store's own entries, the engines' notes
	// through the recorders, the fleet's and the bundle import's. (A scan that found nothing
	// would pass everything.)
	for _, k := range []string{"study.created", "leg.finished", "verdict", "verdict.human", "host.recorded", "study.imported",
		"study.plan_source", "study.run", "study.adaptive", "study.fleet", "study.host", "capacity.run", "capacity.resumed",
		"capacity.rpc_server", "capacity.rpc_split", "study.rpc_server", "quant.handoff", "quant.assembled", "kv.kld"} {
		if _, ok := kinds[k]; !ok {
			t.Errorf("the scan found no writer of %s: the scan is broken", k)
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	t.Logf("%d journal kinds written: %s", len(names), strings.Join(names, " "))
	for _, k := range names {
		if _, ok := journalSentences[k]; !ok {
			t.Errorf("%s (written at %s) has no sentence: it reads as %q", k, kinds[k], JournalSentence(k, []byte(`{}`)))
			continue
		}
		// An entry with an empty payload (an older or newer schema) still reads as a sentence.
		if got := JournalSentence(k, []byte(`{}`)); strings.HasSuffix(got, "(see its payload)") || strings.TrimSpace(got) == "" {
			t.Errorf("%s with an empty payload reads as %q", k, got)
		}
	}
}

// TestJournalWriterScan: the scan resolves each form a kind argument takes, and names one it
// cannot resolve (a small module written for the test).
func TestJournalWriterScan(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod": "module m\n",
		"kinds/kinds.go": `package kinds

const (
	Base  = "a.base"
	Alias = Base
)
`,
		"w/w.go": `package w

import (
	"context"

	k "m/kinds"
)

type rec struct{}

func (rec) Note(ctx context.Context, id int64, kind string, payload any) error { return nil }

type T struct{ Kind string }

func viaParam(r rec, kind string) { _ = r.Note(context.Background(), 1, kind, nil) }

func pick(b bool) string {
	if b {
		return "a.picked"
	}
	return k.Alias
}

func writes(r rec, b bool, x T, dyn func() string) {
	_ = r.Note(nil, 1, "a.literal", nil)
	kind := "a.local"
	if b {
		kind = k.Base
	}
	_ = r.Note(nil, 1, kind, nil)
	viaParam(r, "a.param")
	_ = r.Note(nil, 1, pick(b), nil)
	_ = r.Note(nil, 1, x.Kind, nil)
	_ = T{Kind: "a.field"}
	_ = r.Note(nil, 1, dyn(), nil)
}
`,
	}
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := scanJournalWrites(t, root, "m")
	var got []string
	for _, w := range s.writes {
		got = append(got, w.kinds...)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	want := []string{"a.base", "a.field", "a.literal", "a.local", "a.param", "a.picked"}
	if !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	if len(s.writes) != 6 {
		t.Errorf("%d writes found, want 6", len(s.writes))
	}
	if _, ok := s.unresolved["w/w.go: dyn(…)"]; !ok || len(s.unresolved) != 1 {
		t.Errorf("unresolved %v, want the call of dyn only", s.unresolved)
	}
}
