package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/ui/uitest"
)

// fakeLibrary is an in-memory app.ModelLibrary; block makes Hash wait for cancel.
type fakeLibrary struct {
	mu       sync.Mutex
	sums     map[string]string
	expected map[string]string
	block    bool
	hashed   int
}

func (f *fakeLibrary) st(path string, cached bool) app.ModelStatus {
	return app.ModelStatus{Path: path, SHA256: f.sums[path], Expected: f.expected[path],
		Status: app.CompareHash(f.sums[path], f.expected[path]), FromCache: cached}
}

func (f *fakeLibrary) Status(_ context.Context, path string) (app.ModelStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st(path, true), nil
}

func (f *fakeLibrary) Hash(ctx context.Context, path string, progress func(app.HashProgress)) (app.ModelStatus, error) {
	if progress == nil {
		progress = func(app.HashProgress) {}
	}
	progress(app.HashProgress{Path: path, Done: 50, Total: 100})
	if f.block {
		<-ctx.Done()
		return app.ModelStatus{}, ctx.Err()
	}
	progress(app.HashProgress{Path: path, Done: 100, Total: 100})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hashed++
	f.sums[path] = strings.Repeat("ab", 32)
	return f.st(path, false), nil
}

func (f *fakeLibrary) SetSource(_ context.Context, path, source, revision string) (app.ModelStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st(path, false)
	st.Source, st.Revision = source, revision
	return st, nil
}

func (f *fakeLibrary) SetExpected(_ context.Context, path, sha string) (app.ModelStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expected[path] = sha
	return f.st(path, false), nil
}

func modelsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "models")
}

func waitDone(t *testing.T, v *ModelsView) {
	t.Helper()
	select {
	case <-v.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("background job never finished")
	}
}

func rowOf(v *ModelsView, name string) int {
	for i, m := range v.rows {
		if filepath.Base(m.Path) == name {
			return i
		}
	}
	return -1
}

func TestModelsAddHashVerify(t *testing.T) {
	a := newTestApp(t)
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	w := a.NewWindow("t")
	v := build(func() *ModelsView { return newModelsView(w, a.Preferences(), lib) })
	v.Add([]string{modelsDir()})
	waitDone(t, v) // inspected
	waitDone(t, v) // statuses loaded
	i := rowOf(v, "tiny-moe-f32.gguf")
	files, _ := filepath.Glob(filepath.Join(modelsDir(), "*.gguf"))
	if i < 0 || len(files) < 3 || v.Count.Text != fmt.Sprintf("%d GGUF file(s)", len(files)) {
		t.Fatalf("rows %d, count %q", len(v.rows), v.Count.Text)
	}
	if got := v.statusText(v.rows[i]); got != "PENDING — not hashed yet" {
		t.Errorf("before hashing: %q", got)
	}
	if !v.HashButton.Disabled() {
		t.Error("Hash must wait for a selection")
	}
	v.Select(i)
	Locked(func() { test.Tap(v.HashButton) })
	waitDone(t, v)
	if got := v.statusText(v.rows[i]); got != "PENDING — abababababab…, no expected SHA-256" {
		t.Errorf("after hashing: %q", got)
	}
	if err := v.SetExpected("not-a-hash"); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Errorf("bad expected hash: %v", err)
	}
	if err := v.SetExpected(strings.Repeat("AB", 32)); err != nil {
		t.Fatal(err)
	}
	waitDone(t, v)
	if got := v.statusText(v.rows[i]); got != "VERIFIED abababababab…" {
		t.Errorf("verified: %q", got)
	}
	if err := v.SetExpected(strings.Repeat("cd", 32)); err != nil {
		t.Fatal(err)
	}
	waitDone(t, v)
	if got := v.statusText(v.rows[i]); !strings.HasPrefix(got, "MISMATCH") {
		t.Errorf("mismatch: %q", got)
	}
	if err := v.SetSource("", ""); err == nil {
		t.Error("an empty source must be refused")
	}
	if err := v.SetSource("org/tiny-gguf", "abc123"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, v)
	if got := modelColumns[8].cell(v, v.rows[i]); got != "org/tiny-gguf @ abc123" {
		t.Errorf("source column %q", got)
	}
	// The folder is remembered for the next start.
	if got := a.Preferences().StringList(prefModelPaths); len(got) != 1 || got[0] != modelsDir() {
		t.Errorf("remembered paths %q", got)
	}
}

func TestModelsHashCancel(t *testing.T) {
	a := newTestApp(t)
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}, block: true}
	v := build(func() *ModelsView { return newModelsView(a.NewWindow("t"), a.Preferences(), lib) })
	v.Add([]string{filepath.Join(modelsDir(), "tiny-llama-f32.gguf"), filepath.Join(modelsDir(), "absent.gguf")})
	waitDone(t, v)
	waitDone(t, v)
	if len(v.rows) != 2 || !strings.HasPrefix(v.statusText(v.rows[0]), "UNREADABLE") {
		t.Fatalf("rows: %+v", v.rows)
	}
	v.Select(rowOf(v, "tiny-llama-f32.gguf"))
	Locked(func() { test.Tap(v.HashButton) })
	deadline := time.Now().Add(5 * time.Second)
	for v.CancelHash.Disabled() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !v.HashButton.Disabled() || v.statusText(v.rows[v.selected]) != "hashing…" {
		t.Fatal("while hashing: Hash must be disabled and the row say so")
	}
	Locked(func() { test.Tap(v.CancelHash) })
	waitDone(t, v)
	if !strings.Contains(v.ProgressMsg.Text, "hashing cancelled") || lib.hashed != 0 {
		t.Errorf("after cancel: %q", v.ProgressMsg.Text)
	}
	if v.HashButton.Disabled() || !v.CancelHash.Disabled() {
		t.Error("buttons not restored after cancel")
	}
}

// A file that is not a GGUF model: a dialog names it and says what to add instead; it is not
// remembered for the next launch, and the notebook is not touched (the library is not called).
// A MISMATCH after hashing is said in a dialog too.
func TestModelsBadInputDialogs(t *testing.T) {
	a := newTestApp(t)
	lib := &fakeLibrary{sums: map[string]string{}, expected: map[string]string{}}
	w := build(func() fyne.Window { return a.NewWindow("t") })
	v := build(func() *ModelsView { return newModelsView(w, a.Preferences(), lib) })
	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	Locked(func() { v.Add([]string{notes, tiny}) })
	waitDone(t, v)
	var txt string
	waitSignalled(t, nil, 5*time.Second, func() bool {
		txt = uitest.DialogText(w.Canvas())
		return strings.Contains(txt, "could not be read as GGUF models")
	}, func() string { return "dialog: " + uitest.DialogText(w.Canvas()) })
	if !strings.Contains(txt, notes) || !strings.Contains(txt, "*.gguf") {
		t.Errorf("dialog %q", txt)
	}
	if got := a.Preferences().StringList(prefModelPaths); len(got) != 1 || got[0] != tiny {
		t.Errorf("remembered %q: the unreadable file must not be", got)
	}
	lib.mu.Lock()
	if lib.hashed != 0 || len(lib.expected) != 0 {
		t.Error("adding files touched the library")
	}
	lib.mu.Unlock()
	Locked(func() {
		for w.Canvas().Overlays().Top() != nil {
			w.Canvas().Overlays().Remove(w.Canvas().Overlays().Top())
		}
	})

	lib.mu.Lock()
	lib.expected[tiny] = strings.Repeat("0", 64)
	lib.mu.Unlock()
	Locked(func() {
		v.Select(rowOf(v, "tiny-llama-f32.gguf"))
		test.Tap(v.HashButton)
	})
	waitSignalled(t, nil, 5*time.Second, func() bool {
		txt = uitest.DialogText(w.Canvas())
		return strings.Contains(txt, "is MISMATCH")
	}, func() string { return "dialog: " + uitest.DialogText(w.Canvas()) })
	if !strings.Contains(txt, strings.Repeat("ab", 32)) || !strings.Contains(txt, "download it again") {
		t.Errorf("mismatch dialog %q", txt)
	}
}
