package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
)

// prefModelPaths remembers files and folders the user added to the Models section.
const prefModelPaths = "models.paths"

// ModelsView lists GGUF files (found by the doctor, or added by the user) with their header
// metadata and their SHA-256 status; it hashes the selected file with a cancellable progress
// bar and takes the SHA-256 the source publishes.
type ModelsView struct {
	Object      fyne.CanvasObject
	Table       *widget.Table
	Count       *widget.Label
	Progress    *widget.ProgressBar
	ProgressMsg *widget.Label
	AddFiles    *widget.Button
	AddFolder   *widget.Button
	HashButton  *widget.Button
	CancelHash  *widget.Button
	ExpectedBtn *widget.Button
	SourceBtn   *widget.Button
	Provenance  *widget.Label // the selected derived model's provenance (hidden for others)

	win   fyne.Window
	prefs fyne.Preferences
	lib   app.ModelLibrary

	found    []app.ModelEntry // from the doctor
	added    []app.ModelEntry // from the user's files and folders
	rows     []app.ModelEntry
	status   map[string]app.ModelStatus
	selected int

	mu      sync.Mutex
	cancel  context.CancelFunc
	hashing string // path being hashed
	// Done receives after each finished background job (tests wait on it).
	Done chan struct{}
	// OnChanged runs (on the UI goroutine) after the list of models changed.
	OnChanged func()

	// The derived-model cache of the quantization ladders (SetDerived): its files are rows
	// like the others, marked derived, with their provenance by path.
	derivedSrc  func(ctx context.Context) ([]DerivedModel, error)
	derived     map[string]DerivedModel
	derivedRows []app.ModelEntry
}

type modelColumn struct {
	title string
	width float32
	cell  func(v *ModelsView, m app.ModelEntry) string
}

func factColumns() []modelColumn {
	out := make([]modelColumn, len(modelFacts))
	for i, f := range modelFacts {
		out[i] = modelColumn{f.title, f.width, func(_ *ModelsView, m app.ModelEntry) string { return f.cell(m) }}
	}
	return out
}

var modelColumns = slices.Concat([]modelColumn{
	{"File", 220, func(v *ModelsView, m app.ModelEntry) string { return v.fileText(m.Path) }},
}, factColumns(), []modelColumn{
	{"SHA-256", 330, func(v *ModelsView, m app.ModelEntry) string { return v.statusText(m) }},
	{"Source", 260, func(v *ModelsView, m app.ModelEntry) string {
		st := v.status[m.Path]
		if st.Source == "" {
			return "—"
		}
		if st.Revision != "" {
			return st.Source + " @ " + st.Revision
		}
		return st.Source
	}},
	{"Derived from", 300, func(v *ModelsView, m app.ModelEntry) string { return v.derivedText(m.Path) }},
})

func newModelsView(win fyne.Window, prefs fyne.Preferences, lib app.ModelLibrary) *ModelsView {
	v := &ModelsView{win: win, prefs: prefs, lib: lib, status: map[string]app.ModelStatus{}, selected: -1,
		Count: widget.NewLabel("no models yet"), Progress: widget.NewProgressBar(), ProgressMsg: widget.NewLabel(""),
		Done: make(chan struct{}, 16)}
	v.Table = widget.NewTableWithHeaders(
		func() (int, int) { return len(v.rows), len(modelColumns) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) {
			o.(*widget.Label).SetText(modelColumns[id.Col].cell(v, v.rows[id.Row]))
		})
	v.Table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	v.Table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		if id.Row < 0 {
			l.SetText(modelColumns[id.Col].title)
			l.TextStyle.Bold = true
		} else {
			l.SetText(fmt.Sprint(id.Row + 1))
		}
	}
	for i, c := range modelColumns {
		v.Table.SetColumnWidth(i, c.width)
	}
	v.Table.OnSelected = func(id widget.TableCellID) { v.Select(id.Row) }

	v.AddFiles = widget.NewButton("Add files…", v.addFilesDialog)
	v.AddFolder = widget.NewButton("Add folder…", v.addFolderDialog)
	v.HashButton = widget.NewButton("Hash selected", v.HashSelected)
	v.CancelHash = widget.NewButton("Cancel", v.Cancel)
	v.ExpectedBtn = widget.NewButton("Expected SHA-256…", v.expectedDialog)
	v.SourceBtn = widget.NewButton("Source…", v.sourceDialog)
	v.HashButton.Disable()
	v.CancelHash.Disable()
	v.ExpectedBtn.Disable()
	v.SourceBtn.Disable()
	v.Progress.Hide()
	v.Provenance = widget.NewLabel("")
	v.Provenance.Wrapping = fyne.TextWrapWord
	v.Provenance.Hide()

	top := container.NewVBox(
		container.NewHBox(heading("Models"), v.Count, v.AddFiles, v.AddFolder, v.HashButton, v.ExpectedBtn, v.SourceBtn, v.CancelHash),
		v.Progress,
		v.ProgressMsg,
		widget.NewLabel("Drop .gguf files or folders on the window to add them. A model is VERIFIED only when its SHA-256 equals the one its source publishes."),
		v.Provenance,
	)
	v.Object = container.NewBorder(top, nil, nil, nil, v.Table)
	if win != nil {
		win.SetOnDropped(func(_ fyne.Position, uris []fyne.URI) {
			var paths []string
			for _, u := range uris {
				paths = append(paths, u.Path())
			}
			v.Add(paths)
		})
	}
	v.Add(v.prefs.StringList(prefModelPaths))
	return v
}

// statusText is the SHA-256 column: plain words for what is known.
func (v *ModelsView) statusText(m app.ModelEntry) string {
	v.mu.Lock()
	busy := v.hashing == m.Path
	v.mu.Unlock()
	st, ok := v.status[m.Path]
	return hashStateText(m, st, ok, busy)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// show replaces the doctor's models. It runs on the UI goroutine.
func (v *ModelsView) show(models []app.ModelEntry) {
	v.found = models
	v.refreshRows()
	v.loadStatuses()
	v.LoadDerived()
}

func (v *ModelsView) refreshRows() {
	seen := map[string]bool{}
	v.rows = v.rows[:0]
	for _, list := range [][]app.ModelEntry{v.found, v.added, v.derivedRows} {
		for _, m := range list {
			if !seen[m.Path] {
				seen[m.Path] = true
				v.rows = append(v.rows, m)
			}
		}
	}
	sort.SliceStable(v.rows, func(i, j int) bool { return v.rows[i].Path < v.rows[j].Path })
	count := fmt.Sprintf("%d GGUF file(s)", len(v.rows))
	if n := len(v.derivedRows); n > 0 {
		count += fmt.Sprintf(", %d derived", n)
	}
	v.Count.SetText(count)
	if v.selected >= len(v.rows) {
		v.selected = -1
	}
	v.updateButtons()
	v.Table.Refresh()
	if v.OnChanged != nil {
		v.OnChanged()
	}
}

// loadStatuses reads every row's cached hash state in the background.
func (v *ModelsView) loadStatuses() {
	if v.lib == nil {
		return
	}
	paths := make([]string, 0, len(v.rows))
	for _, m := range v.rows {
		if m.Err == "" {
			paths = append(paths, m.Path)
		}
	}
	go func() {
		got := readStatuses(v.lib, paths)
		onUI(func() {
			for p, st := range got {
				v.status[p] = st
			}
			v.Table.Refresh()
			v.signal()
		})
	}()
}

// Add inspects files and folders (folders: their .gguf files) and remembers them.
func (v *ModelsView) Add(paths []string) {
	if len(paths) == 0 {
		return
	}
	go func() {
		var entries []app.ModelEntry
		var keep []string // what is remembered for the next launch: readable files and folders
		for _, p := range paths {
			st, err := os.Stat(p)
			switch {
			case err != nil:
				entries = append(entries, app.ModelEntry{Path: p, Err: err.Error()})
			case st.IsDir():
				ms, err := app.ScanModels(p)
				if err != nil {
					entries = append(entries, app.ModelEntry{Path: p, Err: err.Error()})
				} else {
					keep = append(keep, p)
				}
				entries = append(entries, ms...)
			default:
				m := app.InspectModel(p)
				if m.Err == "" {
					keep = append(keep, p)
				}
				entries = append(entries, m)
			}
		}
		onUI(func() {
			remembered := v.prefs.StringList(prefModelPaths)
			for _, p := range keep {
				if !contains(remembered, p) {
					remembered = append(remembered, p)
				}
			}
			v.prefs.SetStringList(prefModelPaths, remembered)
			var bad []string
			for _, e := range entries {
				if e.Err != "" {
					bad = append(bad, fmt.Sprintf("%s: %s", e.Path, e.Err))
				}
			}
			if len(bad) > 0 && v.win != nil {
				dialog.ShowError(fmt.Errorf("%d file(s) could not be read as GGUF models, and are not remembered:\n%s\n\nsparkbench reads llama.cpp's GGUF model files (*.gguf): add those, or convert the model to GGUF first (llama.cpp's convert_hf_to_gguf.py). Nothing was written to the notebook", len(bad), strings.Join(bad, "\n")), v.win)
			}
			for _, e := range entries {
				if !containsEntry(v.added, e.Path) {
					v.added = append(v.added, e)
				}
			}
			v.refreshRows()
			v.loadStatuses()
			v.signal()
		})
	}()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func containsEntry(es []app.ModelEntry, path string) bool {
	for _, e := range es {
		if e.Path == path {
			return true
		}
	}
	return false
}

// Select makes row i the subject of the buttons (and shows a derived model's provenance).
func (v *ModelsView) Select(i int) {
	v.selected = i
	v.updateButtons()
	v.showProvenance()
}

func (v *ModelsView) selectedPath() string {
	if v.selected < 0 || v.selected >= len(v.rows) || v.rows[v.selected].Err != "" {
		return ""
	}
	return v.rows[v.selected].Path
}

func (v *ModelsView) updateButtons() {
	v.mu.Lock()
	busy := v.hashing != ""
	v.mu.Unlock()
	ok := v.lib != nil && v.selectedPath() != ""
	setEnabled(v.HashButton, ok && !busy)
	setEnabled(v.ExpectedBtn, ok && !busy)
	setEnabled(v.SourceBtn, ok && !busy)
	setEnabled(v.CancelHash, busy)
}

func setEnabled(b *widget.Button, on bool) {
	if on {
		b.Enable()
	} else {
		b.Disable()
	}
}

// HashSelected hashes the selected model in the background, with progress (at most 10
// updates a second) and Cancel.
func (v *ModelsView) HashSelected() {
	path := v.selectedPath()
	if path == "" || v.lib == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.mu.Lock()
	if v.hashing != "" {
		v.mu.Unlock()
		cancel()
		return
	}
	v.hashing, v.cancel = path, cancel
	v.mu.Unlock()
	v.Progress.SetValue(0)
	v.Progress.Show()
	v.ProgressMsg.SetText("hashing " + filepath.Base(path))
	v.updateButtons()
	v.Table.Refresh()
	go func() {
		var last time.Time
		st, err := v.lib.Hash(ctx, path, func(p app.HashProgress) {
			if now := time.Now(); now.Sub(last) >= 100*time.Millisecond || p.Done == p.Total {
				last = now
				frac, done, total := p.Fraction(), p.Done, p.Total
				onUI(func() {
					v.Progress.SetValue(frac)
					v.ProgressMsg.SetText(fmt.Sprintf("hashing %s: %s of %s", filepath.Base(path), app.HumanBytes(done), app.HumanBytes(total)))
				})
			}
		})
		cancel()
		onUI(func() {
			v.mu.Lock()
			v.hashing, v.cancel = "", nil
			v.mu.Unlock()
			v.Progress.Hide()
			switch {
			case errors.Is(err, context.Canceled):
				v.ProgressMsg.SetText("hashing cancelled: " + filepath.Base(path) + " stays PENDING")
			case err != nil:
				v.ProgressMsg.SetText("hashing failed: " + err.Error())
				v.showError(fmt.Errorf("hashing %s failed: %w. Check that the file is still there and readable, then press Hash again", path, err))
			default:
				v.status[path] = st
				how := "hashed"
				if st.FromCache {
					how = "unchanged since it was hashed"
				}
				v.ProgressMsg.SetText(fmt.Sprintf("%s: %s (%s)", filepath.Base(path), st.Status, how))
				v.warnMismatch(st)
			}
			v.updateButtons()
			v.Table.Refresh()
			v.signal()
		})
	}()
}

func (v *ModelsView) showError(err error) {
	if v.win != nil {
		dialog.ShowError(err, v.win)
	}
}

// warnMismatch says plainly, in a dialog, that a model's SHA-256 differs from the expected one.
func (v *ModelsView) warnMismatch(st app.ModelStatus) {
	if st.Status != "MISMATCH" {
		return
	}
	v.showError(fmt.Errorf("%s is MISMATCH: its SHA-256 is\n%s\nbut its source publishes\n%s\nThe file is not the one published (a broken or changed download): download it again, or correct the expected SHA-256. Studies refuse to register or run on it", st.Path, st.SHA256, st.Expected))
}

// Cancel stops the running hash.
func (v *ModelsView) Cancel() {
	v.mu.Lock()
	c := v.cancel
	v.mu.Unlock()
	if c != nil {
		c()
	}
}

// SetExpected records the SHA-256 the source publishes for the selected model.
func (v *ModelsView) SetExpected(sha string) error {
	path := v.selectedPath()
	if path == "" || v.lib == nil {
		return errors.New("select a model first")
	}
	sha = strings.ToLower(strings.TrimSpace(sha))
	if len(sha) != 64 || strings.Trim(sha, "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not a SHA-256: paste the 64 hex digits the model's source publishes", sha)
	}
	go func() {
		st, err := v.lib.SetExpected(context.Background(), path, sha)
		onUI(func() {
			if err != nil {
				v.ProgressMsg.SetText("could not record the expected SHA-256: " + err.Error())
				v.showError(fmt.Errorf("the expected SHA-256 of %s was not recorded: %w. Check the notebook in the Bench section, then try again", path, err))
			} else {
				v.status[path] = st
				v.ProgressMsg.SetText(fmt.Sprintf("%s: %s", filepath.Base(path), st.Status))
				v.warnMismatch(st)
			}
			v.Table.Refresh()
			v.signal()
		})
	}()
	return nil
}

func (v *ModelsView) signal() {
	select {
	case v.Done <- struct{}{}:
	default:
	}
}

func (v *ModelsView) expectedDialog() {
	entry := widget.NewEntry()
	entry.SetPlaceHolder("64 hex digits, as the source publishes them")
	entry.Validator = func(s string) error {
		s = strings.ToLower(strings.TrimSpace(s))
		if len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "" {
			return errors.New("want 64 hex digits")
		}
		return nil
	}
	dialog.ShowForm("Expected SHA-256", "Record", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("SHA-256", entry)}, func(ok bool) {
			if ok {
				if err := v.SetExpected(entry.Text); err != nil {
					dialog.ShowError(err, v.win)
				}
			}
		}, v.win)
}

func (v *ModelsView) addFilesDialog() {
	pickFile(prefLastModels, v.win, func(path string) { v.Add([]string{path}) })
}

func (v *ModelsView) addFolderDialog() {
	pickFolder(prefLastModels, v.win, func(path string) { v.Add([]string{path}) })
}

// SetSource records where the selected model came from and at which revision.
func (v *ModelsView) SetSource(source, revision string) error {
	path := v.selectedPath()
	if path == "" || v.lib == nil {
		return errors.New("select a model first")
	}
	if strings.TrimSpace(source) == "" {
		return errors.New("the source is empty: name where the file came from, e.g. a repository")
	}
	go func() {
		st, err := v.lib.SetSource(context.Background(), path, source, revision)
		onUI(func() {
			if err != nil {
				v.ProgressMsg.SetText("could not record the source: " + err.Error())
				v.showError(fmt.Errorf("the source of %s was not recorded: %w. Check the notebook in the Bench section, then try again", path, err))
			} else {
				v.status[path] = st
				v.ProgressMsg.SetText(fmt.Sprintf("%s: source %s", filepath.Base(path), st.Source))
			}
			v.Table.Refresh()
			v.signal()
		})
	}()
	return nil
}

func (v *ModelsView) sourceDialog() {
	src, rev := widget.NewEntry(), widget.NewEntry()
	src.SetPlaceHolder("e.g. unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF")
	rev.SetPlaceHolder("e.g. the repository's commit, eea7b2be")
	if st, ok := v.status[v.selectedPath()]; ok {
		src.SetText(st.Source)
		rev.SetText(st.Revision)
	}
	dialog.ShowForm("Where the model came from", "Record", "Cancel",
		[]*widget.FormItem{widget.NewFormItem("Source", src), widget.NewFormItem("Revision", rev)}, func(ok bool) {
			if ok {
				if err := v.SetSource(src.Text, rev.Text); err != nil {
					dialog.ShowError(err, v.win)
				}
			}
		}, v.win)
}
