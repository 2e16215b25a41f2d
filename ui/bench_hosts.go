package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// HostEntry is a bench host of the notebook's hosts list as the window shows and edits it
// (the hosts file's fields, docs/fleet.md).
type HostEntry struct {
	Name       string
	SSH        string
	LlamaDir   string
	ModelDirs  []string
	RPCAddress string
	Labels     map[string]string
}

// HostsService is the notebook's bench hosts list; cmd wires it over the store and
// runner/remote. Every method runs off the UI goroutine.
type HostsService interface {
	// Hosts is the current list, sorted by name.
	Hosts(ctx context.Context) ([]HostEntry, error)
	// PutHost validates the host with the hosts file's rules (the error names each problem's
	// field) and records it: "added", "changed" or "unchanged".
	PutHost(ctx context.Context, h HostEntry) (string, error)
	// RemoveHost records the host's removal.
	RemoveHost(ctx context.Context, name string) error
	// CheckHost is `sparkbench host check NAME`: connect, fingerprint, and the result in words.
	CheckHost(ctx context.Context, name string) (string, error)
}

// HostsCard is the Bench section's "Bench hosts" card: the notebook's hosts with Add…,
// Edit…, Remove and Check.
type HostsCard struct {
	Object fyne.CanvasObject
	Status *widget.Label // how many hosts, or why there are none
	Add    *widget.Button
	Rows   []*HostRow
	// Form is the add/edit dialog while it is open (nil otherwise).
	Form *HostForm
	// Done receives after each background job (load, save, remove, check) was shown.
	Done chan struct{}

	win  fyne.Window
	svc  HostsService
	list *fyne.Container
}

// HostRow is one host of the card.
type HostRow struct {
	Host   HostEntry
	Label  *widget.Label
	Edit   *widget.Button
	Remove *widget.Button
	Check  *widget.Button
	Result *widget.Label // the last check's result
}

// HostForm is the add/edit dialog: its fields keep what was typed when saving fails.
type HostForm struct {
	Name, SSH, LlamaDir, ModelDirs, RPCAddress, Labels *widget.Entry
	Error                                              *widget.Label
	Save, Cancel                                       *widget.Button
	dlg                                                dialog.Dialog
}

func newHostsCard(win fyne.Window) *HostsCard {
	c := &HostsCard{win: win, Done: make(chan struct{}, 16)}
	c.Status = widget.NewLabel("")
	c.Status.Wrapping = fyne.TextWrapWord
	c.Add = widget.NewButton("Add…", func() { c.OpenForm(nil) })
	c.list = container.NewVBox()
	c.Object = widget.NewCard("Bench hosts", "the notebook's hosts list: the hosts studies and fleets reach over ssh (a hosts file named by --hosts or $SPARKBENCH_HOSTS comes first)",
		container.NewVBox(container.NewHBox(c.Add), c.Status, c.list))
	c.SetService(nil)
	return c
}

// SetService shows the service's hosts (nil: the notebook is not open).
func (c *HostsCard) SetService(svc HostsService) {
	c.svc = svc
	if svc == nil {
		c.Status.SetText("unavailable: the notebook is not open")
		c.Add.Disable()
		return
	}
	c.Add.Enable()
	c.Reload()
}

// Reload reads the list again in the background.
func (c *HostsCard) Reload() {
	svc := c.svc
	if svc == nil {
		return
	}
	c.Status.SetText("reading…")
	go func() {
		hs, err := svc.Hosts(context.Background())
		onUI(func() {
			if err != nil {
				c.Status.SetText("could not read the hosts list: " + err.Error())
			} else {
				c.show(hs)
			}
			c.done()
		})
	}()
}

func (c *HostsCard) done() {
	select {
	case c.Done <- struct{}{}:
	default:
	}
}

// show lists hs. It runs on the UI goroutine.
func (c *HostsCard) show(hs []HostEntry) {
	c.Rows = nil
	c.list.RemoveAll()
	for _, h := range hs {
		r := c.newRow(h)
		c.Rows = append(c.Rows, r)
		c.list.Add(container.NewBorder(nil, r.Result, nil, container.NewHBox(r.Edit, r.Remove, r.Check), r.Label))
	}
	if len(hs) == 0 {
		c.Status.SetText("no hosts in the notebook: Add… one, or run `sparkbench host add` or `sparkbench host import-file F`")
	} else {
		c.Status.SetText(fmt.Sprintf("%d host(s)", len(hs)))
	}
	c.list.Refresh()
}

// HostText is a host in one line, as the card lists it.
func HostText(h HostEntry) string {
	s := fmt.Sprintf("%s — ssh %s, llama.cpp in %s", h.Name, h.SSH, h.LlamaDir)
	if len(h.ModelDirs) > 0 {
		s += ", models in " + strings.Join(h.ModelDirs, ", ")
	}
	if h.RPCAddress != "" {
		s += ", rpc " + h.RPCAddress
	}
	if l := labelText(h.Labels, " "); l != "" {
		s += ", labels " + l
	}
	return s
}

func labelText(m map[string]string, sep string) string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, sep)
}

func (c *HostsCard) newRow(h HostEntry) *HostRow {
	r := &HostRow{Host: h, Label: widget.NewLabel(HostText(h)), Result: widget.NewLabel("")}
	r.Label.Wrapping = fyne.TextWrapWord
	r.Result.Wrapping = fyne.TextWrapWord
	r.Result.TextStyle = fyne.TextStyle{Monospace: true}
	r.Result.Hide()
	r.Edit = widget.NewButton("Edit…", func() { c.OpenForm(&r.Host) })
	r.Remove = widget.NewButton("Remove", func() {
		dialog.ShowConfirm("Remove host "+h.Name+"?", "The notebook records the removal; the host's earlier entries stay in its history.",
			func(ok bool) {
				if ok {
					c.RemoveHost(h.Name)
				}
			}, c.win)
	})
	r.Check = widget.NewButton("Check", func() { c.check(r) })
	return r
}

// RemoveHost records the host's removal in the background and lists the hosts again.
func (c *HostsCard) RemoveHost(name string) {
	svc := c.svc
	go func() {
		err := svc.RemoveHost(context.Background(), name)
		onUI(func() {
			if err != nil {
				c.Status.SetText("could not remove " + name + ": " + err.Error())
				c.done()
				return
			}
			c.Reload()
		})
	}()
}

// check runs the host check in the background and shows its words under the row.
func (c *HostsCard) check(r *HostRow) {
	svc := c.svc
	r.Check.Disable()
	r.Result.SetText("checking " + r.Host.Name + " (connecting over ssh)…")
	r.Result.Show()
	go func() {
		text, err := svc.CheckHost(context.Background(), r.Host.Name)
		onUI(func() {
			r.Check.Enable()
			if err != nil {
				text = "check failed: " + err.Error()
			}
			r.Result.SetText(strings.TrimRight(text, "\n"))
			c.done()
		})
	}()
}

// OpenForm opens the add dialog (h nil) or the edit dialog for h.
func (c *HostsCard) OpenForm(h *HostEntry) {
	f := &HostForm{Error: widget.NewLabel("")}
	entry := func(text, place string, multi bool) *widget.Entry {
		e := widget.NewEntry()
		if multi {
			e = widget.NewMultiLineEntry()
			e.SetMinRowsVisible(2)
		}
		e.SetPlaceHolder(place)
		e.SetText(text)
		return e
	}
	var cur HostEntry
	title := "Add bench host"
	if h != nil {
		cur, title = *h, "Edit bench host "+h.Name
	}
	f.Name = entry(cur.Name, "spark", false)
	f.SSH = entry(cur.SSH, "lab@spark.lan", false)
	f.LlamaDir = entry(cur.LlamaDir, "~/llama.cpp/build/bin", false)
	f.ModelDirs = entry(strings.Join(cur.ModelDirs, "\n"), "~/models", true)
	f.RPCAddress = entry(cur.RPCAddress, "10.0.0.7", false)
	f.Labels = entry(labelText(cur.Labels, "\n"), "gpu=gb10", true)
	if h != nil {
		f.Name.Disable() // a new name is a new host: Add… it and Remove this one
	}
	f.Error.Wrapping = fyne.TextWrapWord
	f.Error.Importance = widget.DangerImportance
	f.Error.Hide()
	form := widget.NewForm(
		&widget.FormItem{Text: "Name", Widget: f.Name, HintText: "sparkbench's name for the host: lower case letters, digits, . _ -"},
		&widget.FormItem{Text: "SSH", Widget: f.SSH, HintText: "the destination as you type it after ssh: an alias of your ~/.ssh/config, host or user@host"},
		&widget.FormItem{Text: "llama.cpp folder", Widget: f.LlamaDir, HintText: "the folder of llama.cpp binaries on the host: absolute, or ~/…"},
		&widget.FormItem{Text: "Model folders", Widget: f.ModelDirs, HintText: "one per line: where plan models are looked up by file name on the host"},
		&widget.FormItem{Text: "RPC address", Widget: f.RPCAddress, HintText: "optional: the address llama-bench --rpc uses for the host's ggml-rpc-server, without port"},
		&widget.FormItem{Text: "Labels", Widget: f.Labels, HintText: "optional: one key=value per line"},
	)
	f.Save = widget.NewButtonWithIcon("Save", nil, func() { c.save(f) })
	f.Save.Importance = widget.HighImportance
	f.Cancel = widget.NewButton("Cancel", func() { f.dlg.Hide() })
	f.dlg = dialog.NewCustomWithoutButtons(title, container.NewVBox(form, f.Error, container.NewHBox(f.Cancel, f.Save)), c.win)
	f.dlg.SetOnClosed(func() {
		if c.Form == f {
			c.Form = nil
		}
	})
	c.Form = f
	f.dlg.Resize(fyne.NewSize(640, 0))
	f.dlg.Show()
}

// Entry is the host the form's fields describe; an error names a malformed label line.
func (f *HostForm) Entry() (HostEntry, error) {
	h := HostEntry{Name: strings.TrimSpace(f.Name.Text), SSH: strings.TrimSpace(f.SSH.Text),
		LlamaDir: strings.TrimSpace(f.LlamaDir.Text), RPCAddress: strings.TrimSpace(f.RPCAddress.Text)}
	for _, l := range strings.Split(f.ModelDirs.Text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			h.ModelDirs = append(h.ModelDirs, l)
		}
	}
	for _, l := range strings.Split(f.Labels.Text, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return HostEntry{}, fmt.Errorf("labels: %q: write each label as key=value", l)
		}
		if h.Labels == nil {
			h.Labels = map[string]string{}
		}
		h.Labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return h, nil
}

// save records the form's host in the background: the dialog closes when it was recorded, and
// stays open, with every field as typed and the problems under them, when it was refused.
func (c *HostsCard) save(f *HostForm) {
	h, err := f.Entry()
	if err != nil {
		f.showError(err)
		c.done()
		return
	}
	svc := c.svc
	if svc == nil {
		f.showError(errors.New("the notebook is not open"))
		c.done()
		return
	}
	if !f.Name.Disabled() { // adding: a name in the list is changed with its Edit…, never replaced here
		for _, r := range c.Rows {
			if r.Host.Name == h.Name {
				f.showError(fmt.Errorf("the list already has a host named %s: change it with its Edit… button, or choose another name", h.Name))
				c.done()
				return
			}
		}
	}
	f.Save.Disable()
	go func() {
		_, err := svc.PutHost(context.Background(), h)
		onUI(func() {
			f.Save.Enable()
			if err != nil {
				f.showError(err)
				c.done()
				return
			}
			f.dlg.Hide()
			c.Reload()
		})
	}()
}

func (f *HostForm) showError(err error) {
	f.Error.SetText(strings.ReplaceAll(err.Error(), "; ", "\n"))
	f.Error.Show()
}
