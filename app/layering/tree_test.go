package layering

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// repoRoot is the checkout's top folder (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// trackedFiles lists the files git tracks in the checkout.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the test reads the tracked files of the checkout)", err)
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files
}

// TestNoBuildOutputsCommitted: no tracked file is a compiled program (an ELF executable or
// object, such as the mkmodel binary once committed at the root). Build outputs go to bin/ and
// are ignored.
func TestNoBuildOutputsCommitted(t *testing.T) {
	root := repoRoot(t)
	files := trackedFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files; expected the whole checkout", len(files))
	}
	for _, f := range files {
		if isELF(t, filepath.Join(root, f)) {
			t.Errorf("%s is a compiled ELF binary tracked by git: remove it (git rm --cached %s) and ignore it in .gitignore", f, f)
		}
	}
}

func isELF(t *testing.T, path string) bool {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false // deleted in the work tree, or a link
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := f.Read(head)
	return n == 4 && bytes.Equal(head, []byte("\x7fELF"))
}

// TestIsELFSeesABinary: the check above recognises a real executable (the test binary itself),
// so that it can fail.
func TestIsELFSeesABinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !isELF(t, exe) {
		t.Fatalf("isELF(%s) = false for the running test binary", exe)
	}
	if isELF(t, filepath.Join(repoRoot(t), "go.mod")) {
		t.Fatal("isELF(go.mod) = true")
	}
}

// TestTrackedFilesCiteDocsThatExist: every docs page named in the schema's migrations and the
// Go sources (not their tests) exists in the repository (the first migration once cited docs/DOMAIN.md, the
// spec's name outside the repo; the repo's glossary is docs/domain.md).
func TestTrackedFilesCiteDocsThatExist(t *testing.T) {
	root := repoRoot(t)
	cite := regexp.MustCompile(`(^|[^/A-Za-z0-9_.-])(docs/[A-Za-z0-9_./-]+\.md)`)
	checked := 0
	for _, f := range trackedFiles(t, root) {
		if !strings.HasSuffix(f, ".sql") && !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue // the sources and the schema; tests may name files that must not exist
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cite.FindAllSubmatch(b, -1) {
			doc := string(m[2]) // a path inside a URL (…/blob/main/docs/…) is another project's
			checked++
			if _, err := os.Stat(filepath.Join(root, doc)); err != nil {
				t.Errorf("%s cites %s, which is not in the repository", f, doc)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no docs/….md citation found in the sources: the pattern is wrong")
	}
}
