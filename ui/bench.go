package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
)

// BenchView is the Bench section: which llama.cpp build sparkbench will drive, what it
// reports, and every missing piece with its fix.
type BenchView struct {
	Object fyne.CanvasObject

	Status      *widget.Label // "checking…", "all good", "N problem(s)"
	Folder      *widget.Label
	Version     *widget.Label
	Build       *widget.Label
	Backends    *widget.Label
	Devices     *widget.Label
	DeviceNotes *widget.Label // the doctor's device notes (a Vulkan device shown only with GGML_VK_VISIBLE_DEVICES …); hidden when none
	Hashes      *widget.Label
	Notebook    *widget.Label
	Machine     *widget.Label
	// Card is the Machine card's telemetry: the samplers and the live readings (bench_machine.go).
	Card          machineCard
	Display       *widget.Label
	ThemePick     *widget.Select // Preferences: the window's theme, System, Dark or Light (theme.go)
	Problems      *widget.Label
	RecheckButton *widget.Button
	AboutButton   *widget.Button // the About box (build, llama.cpp, notebook)
	Choose        *widget.Button
	// Measure memory bandwidth: the button (Cancel while it runs), its progress and result.
	MeasureBW  *widget.Button
	BWProgress *widget.ProgressBar
	BWResult   *widget.Label
	BWOptions  app.BandwidthOptions // zero: membw's defaults (3 x 256 MiB, every core, best of 10)
	bwCancel   context.CancelFunc
	BWMeasured chan struct{} // receives after each measurement ended (tests wait on it)
	// Hosts is the "Bench hosts" card: the notebook's hosts list (bench_hosts.go).
	Hosts *HostsCard

	win      fyne.Window
	prefs    fyne.Preferences
	doctor   func(ctx context.Context, llamaDir string) app.DoctorReport
	onModels func([]app.ModelEntry)
	onReport func(app.DoctorReport)

	mu        sync.Mutex
	cancel    context.CancelFunc
	seq       int
	flagDir   string        // the folder the app was started with (--llama-dir), "" for none
	chosenNow bool          // the user chose a folder in this window since it opened
	Checked   chan struct{} // receives after each finished check has been shown (tests wait on it)
}

func newBenchView(win fyne.Window, prefs fyne.Preferences, doctor func(context.Context, string) app.DoctorReport, onModels func([]app.ModelEntry)) *BenchView {
	v := &BenchView{win: win, prefs: prefs, doctor: doctor, onModels: onModels, Checked: make(chan struct{}, 16)}
	wrap := func() *widget.Label {
		l := widget.NewLabel("")
		l.Wrapping = fyne.TextWrapWord
		return l
	}
	v.Status = widget.NewLabel("checking…")
	v.Folder, v.Version, v.Build = wrap(), wrap(), wrap()
	v.Backends, v.Devices, v.Hashes = wrap(), wrap(), wrap()
	v.DeviceNotes = wrap()
	v.DeviceNotes.Importance = widget.WarningImportance
	v.DeviceNotes.Hide()
	v.Hashes.TextStyle = fyne.TextStyle{Monospace: true}
	v.Notebook, v.Display, v.Problems = wrap(), wrap(), wrap()
	v.Machine = wrap()
	v.Card = newMachineCard()
	v.ThemePick = newThemePicker(fyne.CurrentApp())
	v.ThemePick.PlaceHolder = "System"
	v.RecheckButton = widget.NewButton("Re-check", v.Recheck)
	v.AboutButton = widget.NewButton("About sparkbench…", nil) // the window sets it (about.go)
	v.Choose = widget.NewButton("Choose llama.cpp folder…", v.chooseFolder)
	v.BWMeasured = make(chan struct{}, 4)
	v.BWResult = wrap()
	v.BWResult.SetText("not measured in this window (studies with bandwidth \"measure\" measure it before they run)")
	v.BWProgress = widget.NewProgressBar()
	v.BWProgress.Hide()
	v.MeasureBW = widget.NewButton("Measure memory bandwidth", v.toggleBandwidth)
	v.Hosts = newHostsCard(win)

	form := widget.NewForm(
		widget.NewFormItem("Folder", v.Folder),
		widget.NewFormItem("Version", v.Version),
		widget.NewFormItem("Build", v.Build),
		widget.NewFormItem("Backends", v.Backends),
		widget.NewFormItem("Devices", container.NewVBox(v.Devices, v.DeviceNotes)),
		widget.NewFormItem("SHA-256", v.Hashes),
	)
	v.Object = container.NewVScroll(container.NewVBox(
		container.NewHBox(heading("Bench"), v.Status, v.Choose, v.RecheckButton, v.AboutButton),
		widget.NewCard("llama.cpp build", "the binaries sparkbench drives", form),
		widget.NewCard("Machine", "", container.NewVBox(v.Machine, v.Card.Samplers, v.Card.Readings)),
		widget.NewCard("Memory bandwidth", "STREAM-style copy and triad, best trial; the ceiling of memory-bound token generation",
			container.NewVBox(container.NewHBox(v.MeasureBW), v.BWProgress, v.BWResult)),
		v.Hosts.Object,
		widget.NewCard("Notebook", "", v.Notebook),
		widget.NewCard("Display", "", container.NewVBox(v.Display, widget.NewForm(widget.NewFormItem("Theme", v.ThemePick)))),
		widget.NewCard("What is missing", "each problem with the one command that fixes it", v.Problems),
	))
	return v
}

// toggleBandwidth starts a bandwidth measurement, or cancels the one running.
func (v *BenchView) toggleBandwidth() {
	v.mu.Lock()
	if v.bwCancel != nil {
		v.bwCancel()
		v.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.bwCancel = cancel
	v.mu.Unlock()
	v.MeasureBW.SetText("Cancel")
	v.BWProgress.SetValue(0)
	v.BWProgress.Show()
	v.BWResult.SetText("measuring… (the machine should be otherwise idle)")
	opts := v.BWOptions
	opts.Progress = func(done, total int) {
		onUI(func() { v.BWProgress.SetValue(float64(done) / float64(total)) })
	}
	go func() {
		res, err := app.MeasureBandwidth(ctx, opts)
		cancel()
		onUI(func() {
			v.mu.Lock()
			v.bwCancel = nil
			v.mu.Unlock()
			v.MeasureBW.SetText("Measure memory bandwidth")
			v.BWProgress.Hide()
			switch {
			case ctx.Err() != nil && err != nil:
				v.BWResult.SetText("cancelled: nothing measured")
			case err != nil:
				v.BWResult.SetText("could not measure: " + err.Error())
				dialog.ShowError(fmt.Errorf("memory bandwidth: %w", err), v.win)
			default:
				v.BWResult.SetText(fmt.Sprintf("copy %.1f GB/s · triad %.1f GB/s (best of %d trials, %d threads, 3 × %d MiB arrays, %.1f s)",
					res.CopyGBs, res.TriadGBs, res.Trials, res.Threads, res.ArrayBytes>>20, res.Elapsed))
			}
			select {
			case v.BWMeasured <- struct{}{}:
			default:
			}
		})
	}()
}

// Recheck runs the doctor in the background (latest wins) and shows its report.
func (v *BenchView) Recheck() {
	v.mu.Lock()
	if v.cancel != nil {
		v.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.seq++
	seq := v.seq
	v.mu.Unlock()

	v.Status.SetText("checking…")
	dir := v.LlamaDir()
	go func() {
		rep := v.doctor(ctx, dir)
		onUI(func() {
			v.mu.Lock()
			latest := seq == v.seq
			v.mu.Unlock()
			if latest {
				v.show(rep)
			}
			select {
			case v.Checked <- struct{}{}:
			default:
			}
		})
	}()
}

// LlamaDir is the llama.cpp folder the window works with: the one chosen in this section
// (remembered across launches), except that a folder given at launch (--llama-dir) wins until
// the user chooses one here; "" means the default search (or a plan's build.dir). Studies run
// with it and the doctor checks it. Safe from any goroutine.
func (v *BenchView) LlamaDir() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.flagDir != "" && !v.chosenNow {
		return v.flagDir
	}
	return v.prefs.String(prefLlamaDir)
}

// ChooseFolder makes dir the llama.cpp folder (remembered) and checks it again.
func (v *BenchView) ChooseFolder(dir string) {
	v.mu.Lock()
	v.chosenNow = true
	v.mu.Unlock()
	v.prefs.SetString(prefLlamaDir, dir)
	v.Recheck()
}

func (v *BenchView) chooseFolder() {
	pickFolder(prefLastLlama, v.win, v.ChooseFolder)
}

// show fills the widgets from a report. It runs on the UI goroutine.
func (v *BenchView) show(r app.DoctorReport) {
	if r.OK() {
		v.Status.SetText("all good")
	} else {
		v.Status.SetText(fmt.Sprintf("%d problem(s)", len(r.Problems)))
	}
	if b := r.Llama; b != nil {
		v.Folder.SetText(fmt.Sprintf("%s (from %s)", b.Dir, b.Source))
		v.Version.SetText(b.VersionLine)
		built := fmt.Sprintf("build %d, commit %s", b.BuildNumber, b.Commit)
		if b.BuiltWith != "" {
			built += ", built with " + b.BuiltWith
		}
		v.Build.SetText(built)
		v.Backends.SetText(joinOr(b.Backends, "none reported"))
		var devs []string
		for _, d := range b.Devices {
			devs = append(devs, fmt.Sprintf("%s: %s (%d MiB, %d MiB free)", d.Name, d.Description, d.TotalMiB, d.FreeMiB))
		}
		v.Devices.SetText(joinOr(devs, "none besides the CPU"))
		var notes []string
		for _, n := range r.DeviceNotes {
			notes = append(notes, "note: "+n.Text)
		}
		v.DeviceNotes.SetText(strings.Join(notes, "\n"))
		setVisible(v.DeviceNotes, len(notes) > 0)
		var hs []string
		for _, h := range b.Binaries {
			hs = append(hs, fmt.Sprintf("%s  %s", h.SHA256, h.Name))
		}
		for _, h := range b.Libraries { // the code itself: the tools are a few KiB over it
			hs = append(hs, fmt.Sprintf("%s  %s", h.SHA256, h.Name))
		}
		v.Hashes.SetText(strings.Join(hs, "\n"))
	} else {
		v.Folder.SetText("not found: " + r.LlamaErr)
		for _, l := range []*widget.Label{v.Version, v.Build, v.Backends, v.Devices, v.Hashes} {
			l.SetText("—")
		}
		v.DeviceNotes.SetText("")
		v.DeviceNotes.Hide()
	}
	v.Machine.SetText(r.Machine)
	v.showSamplers(r)
	switch {
	case r.NotebookPath == "":
		v.Notebook.SetText("no notebook path")
	case r.NotebookExists:
		v.Notebook.SetText(r.NotebookPath)
	default:
		v.Notebook.SetText(r.NotebookPath + " (created on first use)")
	}
	if r.Display != "" {
		v.Display.SetText(r.Display)
	} else {
		v.Display.SetText("none")
	}
	var ps []string
	for _, p := range r.Problems {
		ps = append(ps, "• "+p.What+"\n   fix: "+p.Fix)
	}
	v.Problems.SetText(joinOr(ps, "nothing: ready to bench"))
	if v.onModels != nil {
		v.onModels(r.Models)
	}
	if v.onReport != nil {
		v.onReport(r)
	}
}

func joinOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, "\n")
}
