package ui

import (
	"context"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
	"sparkbench/assets"
	"sparkbench/plots"
)

// Deps are the core functions the window calls; cmd wires the real ones, tests fakes.
type Deps struct {
	// Doctor inspects llama.cpp, models, notebook and display for a given llama.cpp folder
	// ("" = the default search order). It runs off the UI goroutine.
	Doctor func(ctx context.Context, llamaDir string) app.DoctorReport
	// LlamaDir is the llama.cpp folder given at launch (--llama-dir); the Bench section's
	// choice replaces it (see BenchView.LlamaDir).
	LlamaDir string
	// Library hashes models and keeps their expected hashes (nil: hashing is unavailable).
	Library app.ModelLibrary
	// Studies lists, shows and runs studies (nil: the notebook is not open).
	Studies StudyService
	// Registrar freezes plans built in the New study section (nil: registering is unavailable).
	Registrar Registrar
	// Notebook is the journal, its chain check and imports (nil: the notebook is not open).
	Notebook NotebookService
	// Capacity registers, shows and runs capacity and concurrency studies (nil: they are
	// listed, with a note that says where to see them).
	Capacity CapacityService
	// Quant builds, registers, shows and runs quantization ladders, and lists the derived
	// models (nil: ladders are listed, with a note that says where to see them).
	Quant QuantService
	// Compare compares throughput studies and exports comparisons (nil: the Compare section
	// says it is unavailable).
	Compare CompareService
	// Overview computes the badge table and constants ladder over every throughput study
	// (nil: the Overview section says it is unavailable).
	Overview OverviewService
	// Hosts is the notebook's bench hosts list, shown in the Bench section's "Bench hosts"
	// card (nil: the card says the notebook is not open).
	Hosts HostsService
}

// Preference keys: the llama.cpp folder the user chose, the window's size.
const (
	prefLlamaDir = "llama.dir"
	prefWidth    = "window.width"
	prefHeight   = "window.height"
	prefSection  = "window.section" // the section shown last (the next window opens on it)
)

// Workbench is the main window and its sections.
type Workbench struct {
	App      fyne.App
	Window   fyne.Window
	Bench    *BenchView
	Models   *ModelsView
	Studies  *StudiesView
	Wizard   *WizardView
	CapWiz   *CapacityWizard
	QuantWiz *QuantWizard
	Kind     *widget.RadioGroup // New study: throughput, capacity, concurrency or quant
	Notebook *NotebookView
	Compare  *CompareView
	Overview *OverviewView
	// About is the About box last shown (nil until then).
	About      dialog.Dialog
	lastReport *app.DoctorReport
	// Find is the Ctrl+F dialog: every study and journal entry, jumping to the hit.
	Find *FindView
	nav  *container.AppTabs
}

// NewWorkbench builds the main window and starts the first doctor check in the background.
func NewWorkbench(a fyne.App, deps Deps) *Workbench {
	if c := a.Preferences().String(prefTheme); c == "Dark" || c == "Light" {
		ApplyTheme(a, c) // "System" is the app's own default
	}
	w := a.NewWindow("sparkbench")
	w.SetIcon(assets.Icon)
	wb := &Workbench{App: a, Window: w}
	wb.Models = newModelsView(w, a.Preferences(), deps.Library)
	wb.Bench = newBenchView(w, a.Preferences(), deps.Doctor, wb.Models.show)
	wb.Bench.flagDir = deps.LlamaDir
	wb.Bench.Hosts.SetService(deps.Hosts)
	wb.Studies = newStudiesView(a, w, deps.Studies)
	wb.Studies.SetCapacity(deps.Capacity) // nil: capacity studies are listed, with a note
	wb.Studies.SetQuant(deps.Quant)
	wb.Notebook = newNotebookView(w, deps.Notebook)
	wb.Compare = newCompareView(w, deps.Compare)
	wb.Overview = newOverviewView(deps.Overview)
	wb.Studies.onListed = func(list []StudySummary) {
		wb.Compare.SetStudies(list)
		wb.Overview.SetStudies(list)
	}
	wb.Studies.onTelemetry = wb.Bench.ShowLive // the machine card's live readings
	if deps.Studies != nil {
		wb.Notebook.SetStudies(deps.Studies)
	}
	wb.Find = newFindView(func() []StudySummary { return wb.Studies.studies }, func() []JournalRow { return wb.Notebook.all }, wb.jumpTo)
	wb.Notebook.onLoaded = func() {
		if wb.Find.Query.Text != "" {
			wb.Find.Search(wb.Find.Query.Text)
		}
	}
	newStudy := wb.newStudySection(deps)
	wb.Bench.onReport = func(r app.DoctorReport) {
		wb.lastReport = &r
		wb.Overview.SetMachine(r.Machine)
		wb.Studies.SetMeta(chartMeta(r))
		wb.Wizard.SetDoctorReport(r) // its device notes offer their env; the devices are listed again
		wb.QuantWiz.RefreshTypes()   // the build may have changed
	}
	wb.nav = container.NewAppTabs(
		container.NewTabItem("Overview", wb.Overview.Object),
		container.NewTabItem("Studies", wb.Studies.Object),
		container.NewTabItem("New study", newStudy),
		container.NewTabItem("Bench", wb.Bench.Object),
		container.NewTabItem("Models", wb.Models.Object),
		container.NewTabItem("Notebook", wb.Notebook.Object),
		container.NewTabItem("Compare", wb.Compare.Object),
	)
	wb.nav.OnSelected = func(t *container.TabItem) {
		if i := wb.nav.SelectedIndex(); i >= 0 && i < len(Sections) {
			a.Preferences().SetString(prefSection, Sections[i])
		}
		switch t.Text {
		case "New study":
			wb.Wizard.RefreshModels()
			wb.CapWiz.RefreshModels()
			wb.QuantWiz.RefreshModels()
		case "Models":
			wb.Models.LoadDerived() // a ladder may have made some since
		case "Notebook":
			wb.Notebook.Reload()
			wb.Notebook.loadBoard()
		case "Compare":
			wb.Studies.Reload(0) // the list offered is the Studies section's, read again
		case "Overview":
			wb.Overview.Load() // warm: primed at start, only what changed is read
		}
	}
	wb.nav.SetTabLocation(container.TabLocationLeading)
	w.SetContent(wb.nav)
	w.Resize(fyne.NewSize(float32(a.Preferences().FloatWithFallback(prefWidth, 1280)), float32(a.Preferences().FloatWithFallback(prefHeight, 800))))
	wb.addShortcuts()
	wb.addAbout()
	w.SetOnClosed(func() {
		sz := w.Canvas().Size()
		if sz.Width >= 400 && sz.Height >= 300 {
			a.Preferences().SetFloat(prefWidth, float64(sz.Width))
			a.Preferences().SetFloat(prefHeight, float64(sz.Height))
		}
		wb.Studies.close()
		wb.Compare.Chart.Close()
	})
	// Background work starts last, once every widget exists (Fyne's test driver runs fyne.Do
	// inline, so a job started earlier could update widgets still being built).
	wb.Studies.Start()
	wb.Bench.Recheck()
	wb.Overview.Prime() // the first reading of every study happens now, not when the section opens
	if deps.Quant != nil {
		wb.Models.SetDerived(deps.Quant.DerivedModels)
	}
	return wb
}

// newStudySection builds the New study section: the kind chooser over the three forms
// (throughput; capacity and concurrency; quantization ladders), each registering into the
// Studies section, offered the Models section's files.
func (wb *Workbench) newStudySection(deps Deps) fyne.CanvasObject {
	w := wb.Window
	rows := func() []app.ModelEntry { return wb.Models.rows }
	registered := func(id int64) {
		wb.nav.SelectIndex(0)
		wb.Studies.Reload(id)
	}
	wb.Wizard = newWizardView(w, deps.Registrar, deps.Library, rows, registered)
	wb.CapWiz = newCapacityWizard(w, deps.Capacity, deps.Library, rows, registered)
	wb.QuantWiz = newQuantWizard(w, deps.Quant, deps.Library, rows, registered)
	wb.Models.OnChanged = func() {
		wb.Wizard.RefreshModels()
		wb.CapWiz.RefreshModels()
		wb.QuantWiz.RefreshModels()
	}
	wb.CapWiz.Object.Hide()
	wb.QuantWiz.Object.Hide()
	wb.Kind = widget.NewRadioGroup(kinds.All, func(k string) {
		if kinds.Server(k) {
			wb.CapWiz.SetKind(k)
		}
		setVisible(wb.Wizard.Object, k == kinds.Throughput || k == "")
		setVisible(wb.CapWiz.Object, kinds.Server(k))
		setVisible(wb.QuantWiz.Object, k == kinds.Quant)
	})
	wb.Kind.Horizontal = true
	wb.Kind.Required = true
	wb.Kind.SetSelected(kinds.Throughput)
	wb.CapWiz.OnKind = func(k string) {
		if wb.Kind.Selected != k {
			wb.Kind.SetSelected(k)
		}
	}
	// Either wizard's Open plan… hands a plan of the other kind to the other wizard.
	wb.Wizard.openOther = func(path string) bool {
		p, err := capacity.Load(path)
		if err != nil {
			return false
		}
		wb.CapWiz.LoadPlan(p, filepath.Dir(path))
		return true
	}
	wb.CapWiz.openOther = func(path string) bool {
		p, err := study.Load(path)
		if err != nil {
			return false
		}
		wb.Kind.SetSelected(kinds.Throughput)
		wb.Wizard.LoadPlan(p, filepath.Dir(path))
		return true
	}
	return container.NewBorder(container.NewHBox(heading("Kind of study"), wb.Kind), nil, nil, nil,
		container.NewStack(wb.Wizard.Object, wb.CapWiz.Object, wb.QuantWiz.Object))
}

func heading(text string) *widget.Label {
	return widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
}

// Sections are the names ShowSection takes (the CLI's --section).
var Sections = []string{"overview", "studies", "new", "bench", "models", "notebook", "compare"}

// LastSection is the section shown when the last window closed ("studies" the first time).
func (wb *Workbench) LastSection() string {
	return wb.App.Preferences().StringWithFallback(prefSection, "studies")
}

// ShowSection brings a section to the front: overview, studies, new, bench, models, notebook or compare
// ("" or "last": the section shown last).
func (wb *Workbench) ShowSection(name string) bool {
	if name == "" || name == "last" {
		name = wb.LastSection()
	}
	for i, s := range Sections {
		if s == name {
			wb.nav.SelectIndex(i)
			return true
		}
	}
	return false
}

// jumpTo shows a Find hit: a study in the Studies section, an entry expanded in the
// Notebook's timeline.
func (wb *Workbench) jumpTo(h FindHit) {
	if h.Seq == 0 {
		wb.ShowSection("studies")
		wb.Studies.Reload(h.StudyID)
		return
	}
	wb.ShowSection("notebook")
	wb.Notebook.SelectSeq(h.Seq)
}

// chartMeta names the build and the machine in chart titles.
func chartMeta(r app.DoctorReport) plots.Meta {
	var m plots.Meta
	if r.Llama != nil {
		m.Build = "llama.cpp " + strings.TrimPrefix(r.Llama.VersionLine, "version: ")
	}
	if r.Machine != "" {
		m.Machine = r.Machine
	}
	return m
}

// addShortcuts: Ctrl+N new study, Ctrl+R run the shown study, Ctrl+F find in the notebook,
// Ctrl+E export the shown study's receipt, Ctrl+M models, Ctrl+B bench, Ctrl+1 … Ctrl+6 the
// shown study's tabs.
func (wb *Workbench) addShortcuts() {
	c := wb.Window.Canvas()
	add := func(key fyne.KeyName, f func()) {
		c.AddShortcut(&desktop.CustomShortcut{KeyName: key, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { f() })
	}
	add(fyne.KeyN, func() { wb.ShowSection("new") })
	add(fyne.KeyR, func() {
		wb.ShowSection("studies")
		run := wb.Studies.RunButton
		if wb.Studies.capShown {
			run = wb.Studies.Cap.RunButton
		} else if wb.Studies.quantShown {
			run = wb.Studies.Quant.RunButton
		}
		if !run.Disabled() {
			wb.Studies.RunSelected()
		}
	})
	add(fyne.KeyF, func() {
		wb.Notebook.Reload() // the hits are searched again when the journal has loaded
		wb.Find.Show(wb.Window)
	})
	add(fyne.KeyE, func() {
		wb.ShowSection("studies")
		export := wb.Studies.ReceiptButton
		if wb.Studies.capShown {
			export = wb.Studies.Cap.ReceiptButton
		} else if wb.Studies.quantShown {
			export = wb.Studies.Quant.ReceiptButton
		}
		if !export.Disabled() {
			export.OnTapped()
		}
	})
	add(fyne.KeyM, func() { wb.ShowSection("models") })
	// Ctrl+1 … Ctrl+6: the shown study's tabs (Predictions, Chart, Results, Legs, Console,
	// Receipt; a capacity study's Envelope, Grid, Slots, Verdicts, Console, Receipt; a ladder's
	// Candidates, Pareto, Predictions, Console, Receipt).
	for i, key := range []fyne.KeyName{fyne.Key1, fyne.Key2, fyne.Key3, fyne.Key4, fyne.Key5, fyne.Key6} {
		add(key, func() {
			wb.ShowSection("studies")
			tabs := wb.Studies.Tabs
			if wb.Studies.capShown {
				tabs = wb.Studies.Cap.Tabs
			} else if wb.Studies.quantShown {
				tabs = wb.Studies.Quant.Tabs
			}
			if i < len(tabs.Items) {
				tabs.SelectIndex(i)
			}
		})
	}
	add(fyne.KeyB, func() { wb.ShowSection("bench") })
}
