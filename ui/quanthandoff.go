package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/quant"
)

// Make a capacity plan…: a finished ladder's selected quant and runner-up as a capacity plan
// (quant.CapacityPlan), written to a new file the user names. The file is asked for in a form
// rather than Fyne's save dialog, which creates (and so would truncate) the chosen file before
// sparkbench can refuse an existing one: nothing is overwritten.

// handOffPlaceholder is the file field's hint (tests find the field by it).
const handOffPlaceholder = "the capacity plan file to write (a new file)"

// HandOff writes the shown ladder's capacity plan to out through the service and shows its
// path and SHA-256, or why not (an unfinished ladder, an existing file), in HandOffMsg and a
// dialog; done (optional) gets the same on the UI goroutine.
func (v *QuantPanel) HandOff(out string, h quant.HandOff, done func(sum string, err error)) {
	finish := func(sum string, err error) {
		if err != nil {
			v.HandOffMsg.SetText("no capacity plan: " + err.Error())
			dialog.ShowError(fmt.Errorf("no capacity plan was written: %w", err), v.win)
		} else {
			v.HandOffMsg.SetText(fmt.Sprintf("capacity plan %s, plan sha256 %s", out, sum))
			dialog.ShowInformation("Capacity plan written", fmt.Sprintf("%s\nplan sha256 %s\n\nOpen it in New study (capacity: Open plan…) to register it, or run `sparkbench capacity register %s`.", out, sum, out), v.win)
		}
		if done != nil {
			done(sum, err)
		}
		v.signal()
	}
	st := v.study
	switch {
	case v.svc == nil || st == nil:
		finish("", fmt.Errorf("no ladder is shown"))
		return
	case st.Status != "complete" && st.Status != "incomplete":
		finish("", fmt.Errorf("study %d is %s: a ladder hands off its choice once it is finished (Run it to the end first)", st.ID, st.Status))
		return
	case handOffBlocked(st) != "":
		finish("", errors.New(handOffBlocked(st)))
		return
	case strings.TrimSpace(out) == "" || !filepath.IsAbs(out):
		finish("", fmt.Errorf("%q: give the new file's full path", out))
		return
	}
	id := st.ID
	go func() {
		sum, err := v.svc.HandOff(context.Background(), id, out, h)
		onUI(func() { finish(sum, err) })
	}()
}

// handOffDialog asks for the file and the hand-off's options (empty: the defaults of
// quant.HandOff), then hands off.
func (v *QuantPanel) handOffDialog() {
	if v.study == nil {
		return
	}
	file := widget.NewEntry()
	file.SetPlaceHolder(handOffPlaceholder)
	dir := ""
	if l := lastLocation(prefLastPlans); l != nil {
		dir = l.Path()
	} else if home, err := os.UserHomeDir(); err == nil {
		dir = home
	}
	file.SetText(filepath.Join(dir, slugify(v.study.Name)+"-capacity.json"))
	folder := widget.NewButton("Folder…", func() {
		pickFolder(prefLastPlans, v.win, func(path string) { file.SetText(filepath.Join(path, filepath.Base(file.Text))) })
	})
	slots, clients := widget.NewEntry(), widget.NewEntry()
	slots.SetPlaceHolder("server slots P, comma list (empty: 1,2,4)")
	clients.SetPlaceHolder("clients C, comma list (empty: the slots)")
	ttft, e2e, rss := widget.NewEntry(), widget.NewEntry(), widget.NewEntry()
	ttft.SetPlaceHolder("ms (empty: 5000)")
	e2e.SetPlaceHolder("ms (empty: 60000)")
	rss.SetPlaceHolder("MiB (empty: twice the larger candidate's peak)")
	items := []*widget.FormItem{
		widget.NewFormItem("File", container.NewBorder(nil, nil, nil, folder, file)),
		widget.NewFormItem("Slots P", slots), widget.NewFormItem("Clients C", clients),
		widget.NewFormItem("SLO: TTFT p95 max", ttft), widget.NewFormItem("SLO: E2E p95 max", e2e),
		widget.NewFormItem("Peak RSS max", rss),
	}
	d := dialog.NewForm("Make a capacity plan", "Write", "Cancel", items, func(ok bool) {
		if !ok {
			return
		}
		h, err := handOffOptions(slots.Text, clients.Text, ttft.Text, e2e.Text, rss.Text)
		if err != nil {
			dialog.ShowError(err, v.win)
			return
		}
		path := strings.TrimSpace(file.Text)
		rememberLocation(prefLastPlans, filepath.Dir(path))
		v.HandOff(path, h, nil)
	}, v.win)
	d.Resize(fyne.NewSize(640, 360))
	d.Show()
}

// handOffOptions parses the dialog's fields (empty: quant.HandOff's default).
func handOffOptions(slots, clients, ttft, e2e, rss string) (quant.HandOff, error) {
	var h quant.HandOff
	var err error
	if h.Slots, err = parseInts("slots", slots); err != nil {
		return h, err
	}
	if h.Clients, err = parseInts("clients", clients); err != nil {
		return h, err
	}
	for _, f := range []struct {
		field, text string
		to          *float64
	}{{"TTFT p95 max", ttft, &h.TTFTMsP95Max}, {"E2E p95 max", e2e, &h.E2EMsP95Max}, {"peak RSS max", rss, &h.PeakRSSMiBMax}} {
		x, err := optFloat(f.field, f.text)
		if err != nil {
			return h, err
		}
		if x != nil {
			*f.to = *x
		}
	}
	return h, nil
}
