package ui

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// receiptPane is a study view's Export receipt… controls and the preview of its last export:
// the throughput view, the capacity panel and the ladder panel each have one.
type receiptPane struct {
	ReceiptButton *widget.Button
	ExportTarGz   *widget.Check               // Export receipt… writes a .tar.gz instead of a folder
	ExportBar     *widget.ProgressBarInfinite // shown while a receipt is written
	CancelExport  *widget.Button              // cancels the receipt being written
	exportOps     *opCancel
	Receipt       *widget.RichText // the last exported receipt.md, rendered
	ReceiptImgs   *fyne.Container  // its charts
}

// newReceiptPane makes the controls; export is the Export receipt… button's action.
func newReceiptPane(export func()) receiptPane {
	r := receiptPane{ReceiptButton: widget.NewButton("Export receipt…", export), ExportTarGz: widget.NewCheck("as .tar.gz", nil),
		ExportBar: widget.NewProgressBarInfinite(), exportOps: newOpCancel("Cancel export"), ReceiptImgs: container.NewVBox(),
		Receipt: widget.NewRichTextFromMarkdown("Export the study's receipt (Export receipt…) to preview it here.")}
	r.ExportBar.Stop()
	r.ExportBar.Hide()
	r.CancelExport = r.exportOps.Button
	r.Receipt.Wrapping = fyne.TextWrapWord
	return r
}

// receiptTab is the Receipt tab: the preview's charts, then receipt.md rendered.
func (r *receiptPane) receiptTab() *container.TabItem {
	return container.NewTabItem("Receipt", container.NewVScroll(container.NewVBox(r.ReceiptImgs, r.Receipt)))
}

// exportControls are the head row's Export receipt…, as .tar.gz and Cancel export.
func (r *receiptPane) exportControls() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.ReceiptButton, r.ExportTarGz, r.CancelExport}
}

// showReceipt previews an exported receipt (its charts, then receipt.md rendered) in the
// Receipt tab, the last of tabs, and shows it.
func (r *receiptPane) showReceipt(tabs *container.AppTabs, md []byte, imgs []fyne.Resource) {
	fillReceipt(r.ReceiptImgs, r.Receipt, md, imgs)
	tabs.SelectIndex(len(tabs.Items) - 1)
}

// ExportReceipt writes the shown study's receipt bundle into a new folder under parent, from
// the view of its kind (its progress, its .tar.gz choice, its preview).
func (v *StudiesView) ExportReceipt(parent string, done func(string, error)) {
	id := v.selected
	name := fmt.Sprintf("study-%d-receipt", id)
	pane, msg, tabs := &v.receiptPane, v.ProgressMsg, v.Tabs
	switch {
	case v.capShown && v.Cap.study != nil:
		name = fmt.Sprintf("%s-%d-receipt", slugify(v.Cap.study.Report.Study.Name), id)
		pane, msg, tabs = &v.Cap.receiptPane, v.Cap.ProgressMsg, v.Cap.Tabs
	case v.quantShown && v.Quant.study != nil:
		name = fmt.Sprintf("%s-%d-receipt", slugify(v.Quant.study.Name), id)
		pane, msg, tabs = &v.Quant.receiptPane, v.Quant.ProgressMsg, v.Quant.Tabs
	case v.report != nil:
		name = fmt.Sprintf("%s-%d-receipt", slugify(v.report.Study.Name), id)
	}
	out := filepath.Join(parent, name)
	if pane.ExportTarGz.Checked {
		out += ".tar.gz"
	}
	msg.SetText("writing the receipt to " + out + "…")
	bar := pane.ExportBar
	bar.Show()
	bar.Start()
	ctx, end := pane.exportOps.start()
	go func() {
		x, err := v.svc.Receipt(ctx, id, out)
		summary := x.Summary
		md, imgs := receiptPreview(x.Files)
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("the export was cancelled: nothing was written (%w)", err)
		}
		onUI(func() {
			end()
			bar.Stop()
			bar.Hide()
			if err == nil {
				msg.SetText(summary)
				pane.showReceipt(tabs, md, imgs)
			} else {
				msg.SetText("the receipt was not written: " + err.Error())
			}
			done(summary, err)
		})
	}()
}

// receiptPreview is an exported bundle's receipt.md and chart PNGs (by name), for the preview.
func receiptPreview(files map[string][]byte) ([]byte, []fyne.Resource) {
	var imgs []fyne.Resource
	for name, b := range files {
		if strings.HasPrefix(name, "plots/") && strings.HasSuffix(name, ".png") {
			imgs = append(imgs, fyne.NewStaticResource(filepath.Base(name), b))
		}
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].Name() < imgs[j].Name() })
	return files["receipt.md"], imgs
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

func (v *StudiesView) receiptDialog() {
	if v.selected == 0 {
		return
	}
	pickFolder(prefLastReceipts, v.win, func(path string) {
		v.ExportReceipt(path, func(summary string, err error) {
			if err != nil {
				dialog.ShowError(err, v.win)
				return
			}
			dialog.ShowInformation("Receipt written", summary, v.win)
		})
	})
}

// fillReceipt shows a receipt's charts, then its receipt.md rendered.
func fillReceipt(box *fyne.Container, text *widget.RichText, md []byte, imgs []fyne.Resource) {
	box.RemoveAll()
	for _, r := range imgs {
		img := canvas.NewImageFromResource(r)
		img.FillMode = canvas.ImageFillContain
		img.ScaleMode = canvas.ImageScaleFastest
		img.SetMinSize(fyne.NewSize(760, 475))
		box.Add(img)
	}
	text.ParseMarkdown(previewMarkdown(string(md)))
}

// imageLink is a Markdown image: ![ALT](PATH).
var imageLink = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)

// previewMarkdown prepares receipt.md for Fyne's RichText, which renders no tables: each
// table becomes a fenced block of aligned columns (inline code marks and escapes removed), so
// the preview reads as the receipt does. An image, a chart of the bundle (a path inside it,
// which RichText would look for in the working folder), becomes a note that the chart is
// shown above, as the preview shows the bundle's charts. Everything else is left as it is.
func previewMarkdown(md string) string {
	lines := strings.Split(md, "\n")
	var out []string
	fenced := false
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(strings.TrimSpace(line), "|") {
			if !fenced {
				line = imageLink.ReplaceAllString(line, "(chart above: $1)")
			}
			// A paragraph's next line joins it with a space, as Markdown renderers show a soft
			// line break (RichText would glue the two lines together).
			if n := len(out); !fenced && n > 0 && isProse(line) && isProse(out[n-1]) {
				out[n-1] += " " + strings.TrimSpace(line)
			} else {
				out = append(out, line)
			}
			i++
			continue
		}
		var rows [][]string
		sep := -1
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			cells := splitTableRow(strings.TrimSpace(lines[i]))
			if isSeparatorRow(cells) {
				sep = len(rows)
				continue
			}
			rows = append(rows, cells)
		}
		widths := map[int]int{}
		for _, r := range rows {
			for j, c := range r {
				widths[j] = max(widths[j], utf8.RuneCountInString(c))
			}
		}
		out = append(out, "```")
		for k, r := range rows {
			if k == sep {
				var dash []string
				for j := range r {
					dash = append(dash, strings.Repeat("-", widths[j]))
				}
				out = append(out, strings.Join(dash, "  "))
			}
			padded := make([]string, len(r))
			for j, c := range r {
				padded[j] = c + strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			}
			out = append(out, strings.TrimRight(strings.Join(padded, "  "), " "))
		}
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

// isProse says whether a Markdown line continues a paragraph: not blank, not a heading, list
// item, quote, table row, fence or indented code.
func isProse(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
		return false
	}
	for _, p := range []string{"#", "- ", "* ", "+ ", ">", "|", "```", "---", "==="} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	if i := strings.IndexByte(t, '.'); i > 0 && strings.Trim(t[:i], "0123456789") == "" {
		return false // "1. an ordered item"
	}
	return true
}

// splitTableRow splits "| a | b \| c |" into its cells, unescaped, without code marks.
func splitTableRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		case line[i] == '`':
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func isSeparatorRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || !strings.Contains(c, "-") {
			return false
		}
	}
	return len(cells) > 0
}
