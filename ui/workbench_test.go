package ui

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/runner/llamacpp"
)

func waitChecked(t *testing.T, v *BenchView) {
	t.Helper()
	select {
	case <-v.Checked:
	case <-time.After(10 * time.Second):
		t.Fatal("doctor result never shown")
	}
}

func TestBenchViewShowsReport(t *testing.T) {
	a := newTestApp(t)
	rep := app.DoctorReport{
		Llama: &llamacpp.Build{
			Location:    llamacpp.Location{Dir: "/opt/llama/bin", Source: llamacpp.SourcePrefix},
			VersionLine: "version: 0.7.0 (build 11669, commit Debian)", BuildNumber: 11669, Commit: "Debian",
			Backends: []string{"CPU (libggml-cpu-zen4.so)"},
			Binaries: []llamacpp.Binary{{Name: "llama-bench", SHA256: strings.Repeat("ab", 32)}},
		},
		Models: []app.ModelEntry{
			{Path: "/m/tiny.gguf", Architecture: "llama", Params: 164544, FileType: "F32", Context: 4096, Size: 665856},
			{Path: "/m/moe.gguf", Architecture: "llama", Experts: 4, ExpertsUsed: 2},
			{Path: "/m/bad.gguf", Err: "invalid magic"},
		},
		NotebookPath: "/data/notebook.db",
		Problems:     []app.Problem{{What: "display: none", Fix: "xvfb-run -a sparkbench"}},
	}
	var calls atomic.Int32
	var gotDir atomic.Value
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(_ context.Context, dir string) app.DoctorReport {
			calls.Add(1)
			gotDir.Store(dir)
			return rep
		}})
	})
	waitChecked(t, wb.Bench)
	Locked(func() { checkShown(t, wb, rep) })

	// The chosen folder is remembered and used by the next check.
	a.Preferences().SetString(prefLlamaDir, "/my/build/bin")
	Locked(func() { test.Tap(wb.Bench.RecheckButton) })
	waitChecked(t, wb.Bench)
	if calls.Load() != 2 || gotDir.Load().(string) != "/my/build/bin" {
		t.Fatalf("re-check: calls=%d dir=%v", calls.Load(), gotDir.Load())
	}
}

func checkShown(t *testing.T, wb *Workbench, rep app.DoctorReport) {
	t.Helper()
	if got := wb.Bench.Version.Text; got != rep.Llama.VersionLine {
		t.Errorf("version label = %q", got)
	}
	if got := wb.Bench.Folder.Text; got != "/opt/llama/bin (from installed prefix)" {
		t.Errorf("folder label = %q", got)
	}
	if got := wb.Bench.Status.Text; got != "1 problem(s)" {
		t.Errorf("status = %q", got)
	}
	if got := wb.Bench.Problems.Text; !strings.Contains(got, "display: none") || !strings.Contains(got, "fix: xvfb-run -a sparkbench") {
		t.Errorf("problems = %q", got)
	}
	if got := wb.Bench.Hashes.Text; !strings.Contains(got, strings.Repeat("ab", 32)+"  llama-bench") {
		t.Errorf("hashes = %q", got)
	}
	if got := wb.Bench.Notebook.Text; got != "/data/notebook.db (created on first use)" {
		t.Errorf("notebook = %q", got)
	}
	if got := wb.Models.Count.Text; got != "3 GGUF file(s)" {
		t.Errorf("models count = %q", got)
	}
	rows, cols := wb.Models.Table.Length()
	if rows != 3 || cols != len(modelColumns) {
		t.Fatalf("table is %dx%d", rows, cols)
	}
	if got := modelColumns[5].cell(wb.Models, rep.Models[1]); got != "4 (2 used)" {
		t.Errorf("experts cell = %q", got)
	}
	if got := modelColumns[7].cell(wb.Models, rep.Models[2]); got != "UNREADABLE: invalid magic" {
		t.Errorf("status cell = %q", got)
	}
}

func TestBenchViewMissingLlama(t *testing.T) {
	a := newTestApp(t)
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport {
			return app.DoctorReport{LlamaErr: "no llama.cpp binaries found", Problems: []app.Problem{{What: "llama.cpp: missing", Fix: "make llama"}}}
		}})
	})
	waitChecked(t, wb.Bench)
	Locked(func() {
		if got := wb.Bench.Folder.Text; got != "not found: no llama.cpp binaries found" {
			t.Errorf("folder = %q", got)
		}
		if wb.Bench.Version.Text != "—" {
			t.Errorf("version = %q", wb.Bench.Version.Text)
		}
		if got := wb.Bench.Problems.Text; !strings.Contains(got, "fix: make llama") {
			t.Errorf("problems = %q", got)
		}
	})
}

func TestShortcutsAndSections(t *testing.T) {
	a := newTestApp(t)
	var wb *Workbench
	Locked(func() {
		wb = NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }})
	})
	waitChecked(t, wb.Bench)
	Locked(func() {
		for i, name := range Sections {
			if !wb.ShowSection(name) || wb.nav.SelectedIndex() != i {
				t.Errorf("section %s: index %d", name, wb.nav.SelectedIndex())
			}
		}
		if wb.ShowSection("nope") {
			t.Error("an unknown section must be refused")
		}
		wb.Window.Canvas().(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault})
		if wb.nav.Selected().Text != "New study" {
			t.Errorf("Ctrl+N opened %q", wb.nav.Selected().Text)
		}
		wb.Window.Canvas().(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyF, Modifier: fyne.KeyModifierShortcutDefault})
		if wb.nav.Selected().Text != "Notebook" {
			t.Errorf("Ctrl+F opened %q", wb.nav.Selected().Text)
		}
	})
}
