package ui

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/study"
	"sparkbench/runner/llamacpp"
	"sparkbench/ui/uitest"
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
	if got := wb.Bench.Devices.Text; got != "none besides the CPU" || wb.Bench.DeviceNotes.Visible() {
		t.Errorf("devices = %q, notes shown %v (%q)", got, wb.Bench.DeviceNotes.Visible(), wb.Bench.DeviceNotes.Text)
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

// The Bench section lists the devices with their memory, and the doctor's device note (a
// Vulkan device shown only with GGML_VK_VISIBLE_DEVICES) under them.
func TestBenchViewShowsDevicesAndNotes(t *testing.T) {
	a := newTestApp(t)
	note := app.DeviceNote{Backend: "Vulkan", Env: "GGML_VK_VISIBLE_DEVICES=0", CPUType: true,
		Devices: []llamacpp.Device{{Name: "Vulkan0", Description: "llvmpipe (LLVM 15.0.6, 256 bits)", TotalMiB: 2048, FreeMiB: 2048}},
		Text:    "Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free) appears only with GGML_VK_VISIBLE_DEVICES=0 (ggml skips Vulkan devices of CPU type): set build.env in a plan to use it"}
	rep := app.DoctorReport{
		Llama: &llamacpp.Build{
			Location: llamacpp.Location{Dir: "/opt/llama/bin", Source: llamacpp.SourcePrefix},
			Backends: []string{"RPC (libggml-rpc.so)", "Vulkan (libggml-vulkan.so)", "CPU (libggml-cpu-zen4.so)"},
			Devices:  []llamacpp.Device{{Name: "CUDA0", Description: "NVIDIA GeForce RTX 4090", TotalMiB: 24076, FreeMiB: 23000}},
		},
		DeviceNotes: []app.DeviceNote{note},
	}
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return rep }})
	})
	waitChecked(t, wb.Bench)
	Locked(func() {
		if got := wb.Bench.Devices.Text; got != "CUDA0: NVIDIA GeForce RTX 4090 (24076 MiB, 23000 MiB free)" {
			t.Errorf("devices = %q", got)
		}
		if got := wb.Bench.DeviceNotes.Text; got != "note: "+note.Text || !wb.Bench.DeviceNotes.Visible() {
			t.Errorf("notes = %q (shown %v)", got, wb.Bench.DeviceNotes.Visible())
		}
	})
	// A build that is not found any more clears the note.
	rep = app.DoctorReport{LlamaErr: "gone"}
	Locked(func() { test.Tap(wb.Bench.RecheckButton) })
	waitChecked(t, wb.Bench)
	Locked(func() {
		if wb.Bench.DeviceNotes.Visible() || wb.Bench.DeviceNotes.Text != "" {
			t.Errorf("a stale note stayed: %q", wb.Bench.DeviceNotes.Text)
		}
	})
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
		if wb.Window.Canvas().Focused() != wb.Find.Query {
			t.Errorf("Ctrl+F did not open Find (focus on %v)", wb.Window.Canvas().Focused())
		}
		wb.Window.Canvas().(interface{ TypedShortcut(fyne.Shortcut) }).TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.Key2, Modifier: fyne.KeyModifierShortcutDefault})
		if wb.nav.Selected().Text != "Studies" || wb.Studies.Tabs.Selected().Text != "Chart" {
			t.Errorf("Ctrl+2 opened %q, tab %q", wb.nav.Selected().Text, wb.Studies.Tabs.Selected().Text)
		}
	})
}

func waitBW(t *testing.T, v *BenchView, cond func() bool) {
	t.Helper()
	waitSignalled(t, v.BWMeasured, 60*time.Second, cond, func() string { return fmt.Sprintf("result %q", v.BWResult.Text) })
}

// Measure memory bandwidth runs the real probe (small arrays here) and shows copy and triad;
// pressing the button again while it runs cancels it.
func TestBenchMeasuresMemoryBandwidth(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *BenchView {
		return newBenchView(a.NewWindow("t"), a.Preferences(), func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }, nil)
	})
	Locked(func() {
		v.BWOptions = app.BandwidthOptions{ArrayBytes: 4 << 20, Threads: 1, Trials: 3}
		test.Tap(v.MeasureBW)
		if v.MeasureBW.Text != "Cancel" || !v.BWProgress.Visible() {
			t.Errorf("while measuring: button %q, progress visible %v", v.MeasureBW.Text, v.BWProgress.Visible())
		}
	})
	re := regexp.MustCompile(`^copy ([0-9.]+) GB/s · triad ([0-9.]+) GB/s \(best of 3 trials, 1 threads, 3 × 4 MiB arrays`)
	waitBW(t, v, func() bool { return re.MatchString(v.BWResult.Text) })
	Locked(func() {
		m := re.FindStringSubmatch(v.BWResult.Text)
		if m[1] == "0.0" || m[2] == "0.0" || v.MeasureBW.Text != "Measure memory bandwidth" || v.BWProgress.Visible() {
			t.Fatalf("after: %q, button %q", v.BWResult.Text, v.MeasureBW.Text)
		}
		// A long measurement, cancelled at once.
		v.BWOptions = app.BandwidthOptions{ArrayBytes: 64 << 20, Threads: 1, Trials: 1000}
		test.Tap(v.MeasureBW)
		test.Tap(v.MeasureBW)
	})
	waitBW(t, v, func() bool {
		return v.BWResult.Text == "cancelled: nothing measured" && v.MeasureBW.Text == "Measure memory bandwidth"
	})
}

type fakeJournal struct{ rows []JournalRow }

func (f fakeJournal) Journal(context.Context) ([]JournalRow, error) { return f.rows, nil }
func (f fakeJournal) Verify(context.Context) (ChainStatus, error) {
	return ChainStatus{OK: true, Entries: len(f.rows)}, nil
}
func (f fakeJournal) Import(context.Context, []string) ([]string, error) { return nil, nil }
func (f fakeJournal) VerifyBundle(context.Context, string) (bool, []string, error) {
	return true, nil, nil
}

// The timeline filters by study, kind, date range and text together; a malformed date says how
// to write it and filters nothing.
func TestNotebookFilters(t *testing.T) {
	a := newTestApp(t)
	day := func(d int, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.Local) }
	rows := []JournalRow{
		{Seq: 1, At: day(1, 9), Kind: "study.registered", StudyID: 1, Summary: "demo"},
		{Seq: 2, At: day(2, 9), Kind: "leg.finished", StudyID: 1, Summary: "tiny/d0 ok"},
		{Seq: 3, At: day(2, 23), Kind: "leg.finished", StudyID: 2, Summary: "medium/d0 ok"},
		{Seq: 4, At: day(3, 0), Kind: "verdict", StudyID: 2, Summary: "P1 HIT"},
		{Seq: 5, At: day(4, 12), Kind: "import", Summary: "bench.jsonl"},
	}
	v := build(func() *NotebookView { return newNotebookView(a.NewWindow("t"), fakeJournal{rows}) })
	Locked(v.Reload)
	seqs := func() string {
		var s []string
		for _, r := range v.rows {
			s = append(s, fmt.Sprint(r.Seq))
		}
		return strings.Join(s, ",")
	}
	waitSignalled(t, v.Updated, 10*time.Second, func() bool { return len(v.rows) == 5 }, func() string { return "the journal never loaded" })
	Locked(func() {
		if strings.Join(v.Study.Options, "|") != "all studies|study 1|study 2|no study" {
			t.Fatalf("study choices %v", v.Study.Options)
		}
		for _, c := range []struct {
			study, kind, since, until, text, want string
		}{
			{"study 2", "all kinds", "", "", "", "3,4"},
			{"no study", "all kinds", "", "", "", "5"},
			{"all studies", "leg.finished", "", "", "", "2,3"},
			{"all studies", "all kinds", "2026-11-02", "2026-11-02", "", "2,3"}, // the whole day, both ends
			{"all studies", "all kinds", "2026-11-03", "", "", "4,5"},
			{"study 1", "leg.finished", "2026-11-02", "", "tiny", "2"},
			{"all studies", "all kinds", "", "", "medium", "3"},
		} {
			v.Study.SetSelected(c.study)
			v.Kind.SetSelected(c.kind)
			v.Since.SetText(c.since)
			v.Until.SetText(c.until)
			v.Filter.SetText(c.text)
			if got := seqs(); got != c.want || v.DateErr.Text != "" {
				t.Errorf("%+v: rows %s (date error %q)", c, got, v.DateErr.Text)
			}
		}
		v.Study.SetSelected("all studies")
		v.Kind.SetSelected("all kinds")
		v.Filter.SetText("")
		v.Until.SetText("")
		v.Since.SetText("2.11.2026")
		if got := seqs(); got != "1,2,3,4,5" || !strings.Contains(v.DateErr.Text, `from "2.11.2026": write the day as YYYY-MM-DD`) {
			t.Errorf("malformed date: rows %s, message %q", got, v.DateErr.Text)
		}
	})
}

// The llama.cpp folder: the launch folder (--llama-dir) until the user chooses one in Bench;
// the choice is checked by the doctor, remembered, and used by the next window even when it
// is started without a folder.
func TestBenchFolderChoiceWinsAndIsRemembered(t *testing.T) {
	a := newTestApp(t)
	var mu sync.Mutex
	var checked []string
	doctor := func(_ context.Context, dir string) app.DoctorReport {
		mu.Lock()
		checked = append(checked, dir)
		mu.Unlock()
		return app.DoctorReport{}
	}
	wb := build(func() *Workbench { return NewWorkbench(a, Deps{LlamaDir: "/launch/bin", Doctor: doctor}) })
	waitChecked(t, wb.Bench)
	if got := wb.Bench.LlamaDir(); got != "/launch/bin" {
		t.Fatalf("before a choice: %q", got)
	}
	Locked(func() { wb.Bench.ChooseFolder("/chosen/bin") })
	waitChecked(t, wb.Bench)
	if got := wb.Bench.LlamaDir(); got != "/chosen/bin" {
		t.Fatalf("after the choice: %q", got)
	}
	mu.Lock()
	if len(checked) != 2 || checked[0] != "/launch/bin" || checked[1] != "/chosen/bin" {
		t.Errorf("the doctor checked %q", checked)
	}
	mu.Unlock()
	Locked(func() { wb.Window.Close() })
	again := build(func() *Workbench { return NewWorkbench(a, Deps{Doctor: doctor}) })
	defer Locked(func() { again.Window.Close() })
	waitChecked(t, again.Bench)
	if got := again.Bench.LlamaDir(); got != "/chosen/bin" {
		t.Fatalf("the next window's folder: %q, want the remembered choice", got)
	}
}

// The Notebook section's Predictions & findings tab shows the scoreboard and findings of the
// study chosen in the study filter, and records human verdicts and findings through the
// Studies service.
func TestNotebookBoard(t *testing.T) {
	a := newTestApp(t)
	w := build(func() fyne.Window { return a.NewWindow("t") })
	rows := []JournalRow{{Seq: 1, Kind: "study.registered", StudyID: 7, Summary: "demo"}}
	v := build(func() *NotebookView { return newNotebookView(w, fakeJournal{rows}) })
	svc := &boardStudies{fakeStudies: &fakeStudies{}}
	Locked(func() {
		v.SetStudies(svc)
		v.Reload()
	})
	waitSignalled(t, v.Updated, 5*time.Second, func() bool { return len(v.Study.Options) == 2 }, nil)
	Locked(func() {
		if !strings.HasPrefix(v.BoardNote.Text, "choose a study") || !v.HumanBt.Disabled() {
			t.Fatalf("before a study is chosen: %q", v.BoardNote.Text)
		}
		v.Study.SetSelected("study 7")
	})
	waitSignalled(t, v.Updated, 5*time.Second, func() bool {
		return strings.HasPrefix(v.BoardNote.Text, "study 7, demo: 1 prediction(s), 1 finding(s)")
	},
		func() string { return v.BoardNote.Text })
	Locked(func() {
		if v.boardCell(0, 0) != "P1" || v.boardCell(0, 2) != "HIT" || v.boardCell(0, 3) != "NOTE" || v.boardCell(0, 4) != "close to the line" ||
			v.findingCell(0, 0) != "F1" || v.findingCell(0, 2) != "tiny/d0, tiny/d128" {
			t.Fatalf("board %q %q %q %q / findings %q %q", v.boardCell(0, 0), v.boardCell(0, 2), v.boardCell(0, 3), v.boardCell(0, 4), v.findingCell(0, 0), v.findingCell(0, 2))
		}
		test.Tap(v.FindingBt)
	})
	waitSignalled(t, nil, 5*time.Second, func() bool { return uitest.DialogEntry(w.Canvas(), "what was found") != nil }, nil)
	Locked(func() {
		test.Type(uitest.DialogEntry(w.Canvas(), "what was found"), "pp scales")
		test.Type(uitest.DialogEntry(w.Canvas(), "predictions it bears on, e.g. P1, P3"), "P1")
		if !uitest.TapDialogButton(w.Canvas(), "Record") {
			t.Fatal("no Record button")
		}
	})
	waitSignalled(t, nil, 5*time.Second, func() bool { return strings.Contains(uitest.DialogText(w.Canvas()), "F1 is in the notebook") }, nil)
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.finding.Text != "pp scales" || len(svc.finding.Predictions) != 1 || svc.findingID != 7 {
		t.Fatalf("finding recorded: %+v for study %d", svc.finding, svc.findingID)
	}
}

// boardStudies shows study 7 with a prediction, a human verdict and a finding, and keeps the
// finding it is asked to record.
type boardStudies struct {
	*fakeStudies
	finding   study.FindingRequest
	findingID int64
}

func (b *boardStudies) Show(_ context.Context, id int64) (*study.Report, error) {
	r := &study.Report{Study: study.ReportStudy{ID: id, Name: "demo"},
		Scoreboard: []study.ReportScore{{Prediction: "P1", Text: "tg above 1000", Word: "HIT", Human: &study.StoredVerdict{Outcome: "NOTE", Rationale: "close to the line"}}},
		Findings:   []study.ReportFinding{{Label: "F1", Text: "tg falls", Legs: []string{"tiny/d0", "tiny/d128"}}}}
	return r, nil
}

func (b *boardStudies) AddFinding(_ context.Context, id int64, f study.FindingRequest) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finding, b.findingID = f, id
	return "F1", nil
}
