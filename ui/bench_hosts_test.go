package ui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/ui/uitest"
)

// fakeHosts is a HostsService in memory; it refuses a relative llama.cpp folder with the hosts
// file's words.
type fakeHosts struct {
	mu    sync.Mutex
	hosts map[string]HostEntry
	log   []string
}

func (f *fakeHosts) Hosts(context.Context) ([]HostEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []HostEntry
	for _, h := range f.hosts {
		out = append(out, h)
	}
	return out, nil
}

func (f *fakeHosts) PutHost(_ context.Context, h HostEntry) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.HasPrefix(h.LlamaDir, "/") && !strings.HasPrefix(h.LlamaDir, "~/") {
		return "", errors.New(`host ` + h.Name + `: llama_dir: "` + h.LlamaDir + `": give an absolute path or ~/… on the host`)
	}
	f.hosts[h.Name] = h
	f.log = append(f.log, "put "+h.Name)
	return "added", nil
}

func (f *fakeHosts) RemoveHost(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.hosts, name)
	f.log = append(f.log, "remove "+name)
	return nil
}

func (f *fakeHosts) CheckHost(_ context.Context, name string) (string, error) {
	return "host " + name + " (ssh lab@" + name + ")\n  llama.cpp:  version: 1\n", nil
}

func waitHosts(t *testing.T, c *HostsCard) {
	t.Helper()
	select {
	case <-c.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("the hosts card never finished its job")
	}
}

// A host added through the dialog is listed; a refused field keeps the dialog open with what
// was typed and the problem shown; Check shows the check's words; Remove takes it off the list.
func TestBenchHostsCardAddCheckRemove(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeHosts{hosts: map[string]HostEntry{}}
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }, Hosts: svc})
	})
	c := wb.Bench.Hosts
	waitHosts(t, c)
	Locked(func() {
		if len(c.Rows) != 0 || !strings.Contains(c.Status.Text, "no hosts in the notebook") {
			t.Errorf("empty list: %d rows, %q", len(c.Rows), c.Status.Text)
		}
		test.Tap(c.Add)
		if c.Form == nil {
			t.Fatal("Add… opened no dialog")
		}
		if txt := uitest.DialogText(wb.Window.Canvas()); !strings.Contains(txt, "Add bench host") || !strings.Contains(txt, "the folder of llama.cpp binaries on the host") {
			t.Errorf("the dialog reads %q", txt)
		}
		f := c.Form
		f.Name.SetText("spark")
		f.SSH.SetText("lab@spark")
		f.LlamaDir.SetText("llama/bin")
		f.ModelDirs.SetText("/models\n~/more\n")
		f.Labels.SetText("gpu=gb10")
		test.Tap(f.Save)
	})
	waitHosts(t, c)
	Locked(func() {
		f := c.Form
		if f == nil {
			t.Fatal("a refused host closed the dialog")
		}
		if !f.Error.Visible() || !strings.Contains(f.Error.Text, "llama_dir") || !strings.Contains(f.Error.Text, "absolute path") {
			t.Errorf("error shown: %v %q", f.Error.Visible(), f.Error.Text)
		}
		if f.Name.Text != "spark" || f.SSH.Text != "lab@spark" || f.LlamaDir.Text != "llama/bin" || f.Labels.Text != "gpu=gb10" {
			t.Errorf("the dialog lost its input: %q %q %q %q", f.Name.Text, f.SSH.Text, f.LlamaDir.Text, f.Labels.Text)
		}
		f.Labels.SetText("gpu")
		test.Tap(f.Save)
	})
	waitHosts(t, c)
	Locked(func() {
		f := c.Form
		if f == nil || !strings.Contains(f.Error.Text, `labels: "gpu": write each label as key=value`) {
			t.Fatalf("a malformed label: %+v", f)
		}
		f.Labels.SetText("gpu=gb10")
		f.LlamaDir.SetText("~/llama.cpp/build/bin")
		test.Tap(f.Save)
	})
	waitHosts(t, c)
	Locked(func() {
		if c.Form != nil {
			t.Error("the dialog stayed open after the host was recorded")
		}
		if len(c.Rows) != 1 {
			t.Fatalf("%d rows after adding", len(c.Rows))
		}
		want := "spark — ssh lab@spark, llama.cpp in ~/llama.cpp/build/bin, models in /models, ~/more, labels gpu=gb10"
		if got := c.Rows[0].Label.Text; got != want {
			t.Errorf("row:\n got %q\nwant %q", got, want)
		}
		// Add… with a name already listed is refused in the dialog, never a silent replace.
		c.OpenForm(nil)
		f := c.Form
		f.Name.SetText("spark")
		f.SSH.SetText("other@box")
		f.LlamaDir.SetText("/opt/llama")
		test.Tap(f.Save)
		if c.Form == nil || !f.Error.Visible() || !strings.Contains(f.Error.Text, "already has a host named spark") || f.SSH.Text != "other@box" {
			t.Fatalf("adding a listed name: error %q, dialog open %v", f.Error.Text, c.Form != nil)
		}
		test.Tap(f.Cancel)
	})
	waitHosts(t, c) // the refusal was shown
	Locked(func() { test.Tap(c.Rows[0].Check) })
	waitHosts(t, c)
	Locked(func() {
		r := c.Rows[0]
		if !r.Result.Visible() || !strings.HasPrefix(r.Result.Text, "host spark (ssh lab@spark)") || strings.HasSuffix(r.Result.Text, "\n") {
			t.Errorf("check result: %q", r.Result.Text)
		}
		test.Tap(r.Edit)
		if c.Form == nil || c.Form.Name.Text != "spark" || c.Form.Name.Disabled() == false || c.Form.ModelDirs.Text != "/models\n~/more" {
			t.Fatalf("Edit… dialog: %+v", c.Form)
		}
		test.Tap(c.Form.Cancel)
		if c.Form != nil {
			t.Error("Cancel left the dialog open")
		}
		test.Tap(r.Remove) // asks first
		if txt := uitest.DialogText(wb.Window.Canvas()); !strings.Contains(txt, "Remove host spark?") {
			t.Fatalf("Remove asked %q", txt)
		}
		if !uitest.TapDialogButton(wb.Window.Canvas(), "Yes") {
			t.Fatal("no Yes in the confirmation")
		}
	})
	waitHosts(t, c)
	Locked(func() {
		if len(c.Rows) != 0 {
			t.Errorf("%d rows after removal", len(c.Rows))
		}
	})
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if strings.Join(svc.log, ",") != "put spark,remove spark" {
		t.Errorf("service calls: %v", svc.log)
	}
}

// Without a hosts service (no notebook) the card says so and Add… is disabled.
func TestBenchHostsCardWithoutNotebook(t *testing.T) {
	a := newTestApp(t)
	wb := build(func() *Workbench {
		return NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }})
	})
	Locked(func() {
		if !wb.Bench.Hosts.Add.Disabled() || !strings.Contains(wb.Bench.Hosts.Status.Text, "notebook is not open") {
			t.Errorf("no service: %q", wb.Bench.Hosts.Status.Text)
		}
	})
}
