package receipt

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// adaptiveFixture reads testdata/adaptive's raw files (an adaptive bundle written before
// receipts said how adaptive cells ended; README.md there).
func adaptiveFixture(t *testing.T) Files {
	t.Helper()
	files := Files{}
	root := filepath.Join("testdata", "adaptive")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOlderAdaptiveBundleStillVerifies: the raw files of an adaptive bundle written by the
// version before (no receipt rules in bundle.json) re-make the receipt.md and study.json that
// version wrote, byte for byte: what verify compares.
func TestOlderAdaptiveBundleStillVerifies(t *testing.T) {
	files := adaptiveFixture(t)
	js, md, err := Assemble(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  []byte
	}{{"adaptive.v1.receipt.md", md}, {"adaptive.v1.study.json", js}} {
		want, err := os.ReadFile(filepath.Join("testdata", c.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.got, want) {
			line, g, w := firstLine(c.got, want)
			t.Errorf("%s: re-made from an older bundle's raw files, differs at line %d:\n got  %q\n want %q", c.name, line, g, w)
		}
	}
	if err := Finish(files); err != nil {
		t.Fatal(err)
	}
	if rep := Verify(files, VerifyOptions{HashPlots: true}); !rep.OK() {
		t.Errorf("verify: %v", rep.Problems)
	}
}
