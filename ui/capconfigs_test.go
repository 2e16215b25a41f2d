package ui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner/llamacpp"
)

// capacityPlanFiles are the capacity plans of the repository: docs/examples/*.json of the
// capacity schema, the seed fixture and the form's own round-trip plan.
func capacityPlanFiles(t *testing.T) []string {
	t.Helper()
	examples, err := filepath.Glob("../docs/examples/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range append(examples, "../app/capacity/testdata/seed/plan.json", "testdata/capacity-rows.json") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var head struct{ Schema string }
		if json.Unmarshal(data, &head) == nil && strings.HasPrefix(head.Schema, "sparkbench.capacity/") || strings.HasPrefix(head.Schema, "sparkbench.concurrency/") {
			out = append(out, f)
		}
	}
	if len(out) < 6 {
		t.Fatalf("capacity plans %v: want the examples, the seed and testdata/capacity-rows.json", out)
	}
	return out
}

// resolvedPlanSHA256 is the SHA-256 of the plan in file with its relative paths resolved
// against its folder, as the form holds them (LoadPlan: paths made absolute), defaults filled in.
func resolvedPlanSHA256(t *testing.T, file string) string {
	t.Helper()
	p, err := capacity.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	abs := func(path string) string {
		a, err := filepath.Abs(study.ResolvePath(filepath.Dir(file), path))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for i := range p.Candidates {
		p.Candidates[i].Model.Path = abs(p.Candidates[i].Model.Path)
	}
	if p.PromptPlan != capacity.DefaultPromptPlanRef() {
		p.PromptPlan.Path = abs(p.PromptPlan.Path)
	}
	if p.QualityCases != nil {
		p.QualityCases.Path = abs(p.QualityCases.Path)
	}
	for _, f := range servingFiles(p.Serving) {
		f.Path = abs(f.Path)
	}
	sum, _, err := p.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// formPlanSHA256 is the SHA-256 of the plan the form builds, saved as Save plan… writes it
// and read back.
func formPlanSHA256(t *testing.T, v *CapacityWizard) string {
	t.Helper()
	back, errs := v.Plan()
	if len(errs) > 0 {
		t.Fatalf("the form's plan does not parse: %v", errs)
	}
	data, err := v.PlanJSON(context.Background(), back)
	if err != nil {
		t.Fatal(err)
	}
	reread, err := capacity.Decode("saved.json", data)
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := reread.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// Every capacity plan of the repository opened in the form builds back the same plan: its
// candidates from the configuration rows (each of them rebuilt from a row, or kept as they
// are where they are not models × configurations), and the same plan once the rows are
// written as the old "name: flags" text and read back.
func TestConfigRowsRoundTripThePlans(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *CapacityWizard { return newCapacityWizard(a.NewWindow("t"), nil, nil, nil, nil) })
	rowsBuilt := 0
	for _, file := range capacityPlanFiles(t) {
		want := resolvedPlanSHA256(t, file)
		p, err := capacity.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		Locked(func() {
			v.LoadPlan(p, filepath.Dir(file))
			if got := formPlanSHA256(t, v); got != want {
				t.Fatalf("%s opened and built back: plan SHA-256 %s, want %s\nrows:\n%s", file, got, want, v.Configs.Text())
			}
			if v.keepCands {
				// Candidates that are not models × configurations (their own IDs and labels)
				// are kept; the rows still show the first one's flags.
				if len(v.Configs.Rows) > 0 && !slices.Equal(v.Configs.Rows[0].config().flags, p.Candidates[0].ServerFlags) {
					t.Fatalf("%s: the first row holds %q, want %q", file, v.Configs.Rows[0].config().flags, p.Candidates[0].ServerFlags)
				}
				return
			}
			rowsBuilt++
			text := v.Configs.Text()
			if errs := v.Configs.SetText(text); errs != nil {
				t.Fatalf("%s: the rows as text do not parse back: %v", file, errs)
			}
			if got := formPlanSHA256(t, v); got != want || v.Configs.Text() != text {
				t.Fatalf("%s: rows → text → rows: SHA-256 %s (want %s), text %q (want %q)", file, got, want, v.Configs.Text(), text)
			}
		})
	}
	if rowsBuilt == 0 {
		t.Fatal("no plan was rebuilt from rows; want at least testdata/capacity-rows.json")
	}

	// The round-trip plan's rows: fields where a field stands for the flag, in the plan's order
	// and spelling; from the first flag no field stands for on, other flags, unchanged.
	Locked(func() {
		file := "testdata/capacity-rows.json"
		p, err := capacity.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		v.LoadPlan(p, filepath.Dir(file))
		if len(v.Configs.Rows) != 3 {
			t.Fatalf("rows %q", v.Configs.Text())
		}
		q8, cpu := v.Configs.Rows[1], v.Configs.Rows[2]
		for key, want := range map[string]string{"ctk": "q8_0", "ctv": "q8_0", "t": "1", "fa": "on", "ub": "256", "b": "1024", "ngl": ""} {
			if got := q8.Field(key).Text; got != want {
				t.Errorf("q8 row, %s: %q, want %q", key, got, want)
			}
		}
		if q8.Name.Text != "q8" || q8.Other.Text != "-lv 4" {
			t.Errorf("q8 row: name %q, other flags %q", q8.Name.Text, q8.Other.Text)
		}
		if cpu.Field("ngl").Text != "0" || cpu.Field("dev").Text != "none" || cpu.Field("sm").Text != "none" || cpu.Field("ctk").Text != "" || cpu.Other.Text != "--mlock -ctk q4_0 -lv 4" {
			t.Errorf("cpu row: ngl %q dev %q sm %q ctk %q other %q", cpu.Field("ngl").Text, cpu.Field("dev").Text, cpu.Field("sm").Text, cpu.Field("ctk").Text, cpu.Other.Text)
		}
	})
}

// The rows make the plan the "name: flags" text made: the same lines typed as text and built
// as rows (fields set one by one, a row added, duplicated and removed) give the same candidates.
func TestConfigRowsMakeThePlanOfTheText(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny)}
	v := build(func() *CapacityWizard {
		return newCapacityWizard(a.NewWindow("t"), nil, nil, func() []app.ModelEntry { return models }, nil)
	})
	var fromText, fromRows *capacity.Plan
	Locked(func() {
		v.Models.SetSelected([]string{tiny})
		v.Flags.SetText("-lv 4")
		if errs := v.Configs.SetText("f16: -ctk f16 -ctv f16 -t 1\nq8: -ctk q8_0 -ctv q8_0 -t 1 --mlock"); errs != nil {
			t.Fatal(errs)
		}
		var errs []string
		fromText, errs = v.Plan()
		if len(errs) > 0 {
			t.Fatal(errs)
		}

		v.Configs.SetConfigs(nil)
		r := v.Configs.Add(serverConfig{name: "f16"})
		r.Field("ctk").SetText("f16")
		r.Field("ctv").SetText("f16")
		r.Field("t").SetText("1")
		d := v.Configs.Duplicate(0)
		if d.Name.Text == "f16" || d.Field("ctk").Text != "f16" || d.Field("t").Text != "1" {
			t.Fatalf("duplicate: name %q ctk %q t %q", d.Name.Text, d.Field("ctk").Text, d.Field("t").Text)
		}
		d.Name.SetText("q8")
		d.Field("ctk").SetText("q8_0")
		d.Field("ctv").SetText("q8_0")
		d.Other.SetText("--mlock")
		extra := v.Configs.Add(serverConfig{name: v.Configs.freeName()})
		extra.Field("fa").SetText("on")
		v.Configs.Remove(2)
		fromRows, errs = v.Plan()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
	})
	if !sameCandidates(fromText.Candidates, fromRows.Candidates) {
		t.Fatalf("rows %+v\ntext %+v", fromRows.Candidates, fromText.Candidates)
	}
	if got := strings.Join(fromRows.Candidates[1].ServerFlags, " "); got != "-lv 4 -ctk q8_0 -ctv q8_0 -t 1 --mlock" {
		t.Fatalf("q8's flags %q", got)
	}
}

// A row's field refuses a value llama-server would refuse, naming the row and the field; two
// rows may not share a name.
func TestConfigRowsRefuseBadValues(t *testing.T) {
	a := newTestApp(t)
	v := build(func() *CapacityWizard { return newCapacityWizard(a.NewWindow("t"), nil, nil, nil, nil) })
	Locked(func() {
		r := v.Configs.Add(serverConfig{name: "q8"})
		r.Field("ctk").SetText("q9_0")
		r.Field("fa").SetText("maybe")
		r.Field("ub").SetText("0")
		r.Field("ngl").SetText("some")
		v.Configs.Add(serverConfig{name: "q8"})
		_, errs := v.Configs.configs()
		joined := strings.Join(errs, "\n")
		for _, want := range []string{
			`server configuration 1 (q8), KV cache type K: "q9_0" is not a KV cache type; want one of f32, f16`,
			`server configuration 1 (q8), Flash attention: "maybe" is not a flash attention; want one of auto, on, off`,
			`server configuration 1 (q8), ubatch: "0" is not a whole number of at least 1`,
			`server configuration 1 (q8), ngl: "some" is not a number of layers, auto or all`,
			`server configuration 2: "q8" is the name of another configuration`,
		} {
			if !strings.Contains(joined, want) {
				t.Errorf("errors %q lack %q", joined, want)
			}
		}
	})
}

// fakeFlagLister is a capacity service whose build's llama-server knows a fixed flag set.
type fakeFlagLister struct {
	fakeCapacity
	known map[string]bool
}

func (f *fakeFlagLister) BuildDevices(context.Context, *study.Plan) (*study.BuildDevices, []study.Problem) {
	return &study.BuildDevices{Devices: []llamacpp.Device{{Name: "Vulkan0"}, {Name: "Vulkan1"}}, Listed: true}, nil
}

func (f *fakeFlagLister) ServerFlags(context.Context) (map[string]bool, string, error) {
	return f.known, "/build/llama-server", nil
}

// Other flags (and the fields' flags) are checked against the build's llama-server --help as
// they are typed.
func TestConfigRowsOtherFlagsCheckedAgainstTheBuild(t *testing.T) {
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny)}
	svc := &fakeFlagLister{known: map[string]bool{"-t": true, "-ctk": true, "-ctv": true, "--mlock": true}}
	v := build(func() *CapacityWizard {
		return newCapacityWizard(a.NewWindow("t"), svc, nil, func() []app.ModelEntry { return models }, nil)
	})
	Locked(func() {
		v.Name.SetText("flags")
		v.Models.SetSelected([]string{tiny})
		r := v.Configs.Add(serverConfig{name: "q8", flags: []string{"-ctk", "q8_0", "-t", "1"}})
		r.Other.SetText("--mlokc")
	})
	waitCapValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, `"--mlokc" is not a flag of llama-server (/build/llama-server --help does not list it`) && v.RegisterBtn.Disabled()
	})
	Locked(func() { v.Configs.Rows[0].Other.SetText("--mlock") })
	waitCapValidated(t, v, func() bool { return !strings.Contains(v.Problems.Text, "not a flag of llama-server") })

	// The Device fields offer the devices the build lists, and all of them as llama-server's
	// comma list.
	want := []string{"none", "auto", "Vulkan0", "Vulkan1", "Vulkan0,Vulkan1"}
	waitCapValidated(t, v, func() bool { return slices.Equal(v.Configs.DeviceChoices(), want) })
}

// Tab moves through every control of a new row in order: its name, each flag field, the other
// flags, then Duplicate and Remove.
func TestConfigRowsTabOrder(t *testing.T) {
	a := newTestApp(t)
	var w fyne.Window
	v := build(func() *CapacityWizard {
		w = a.NewWindow("t")
		v := newCapacityWizard(w, nil, nil, nil, nil)
		w.SetContent(v.Object)
		return v
	})
	defer Locked(func() { w.Close() })
	Locked(func() {
		v.Configs.Add(serverConfig{name: "c1"})
		r := v.Configs.Add(serverConfig{name: "c2"})
		// Each drop-down field is its entry, then its drop-down button (Entry.ActionItem).
		var want []fyne.Focusable
		for _, ctl := range r.Controls() {
			want = append(want, ctl)
			if se, ok := ctl.(*widget.SelectEntry); ok {
				btn, ok := se.ActionItem.(fyne.Focusable)
				if !ok {
					t.Fatalf("%s field has no drop-down button", se.PlaceHolder)
				}
				want = append(want, btn)
			}
		}
		if len(want) != 1+2*nConfigFields+3 {
			t.Fatalf("%d controls, want the name, %d drop-down fields, other flags, Duplicate and Remove", len(want), nConfigFields)
		}
		c := w.Canvas()
		c.Focus(r.Name)
		if c.Focused() != r.Name {
			t.Fatal("the row's name takes no focus")
		}
		for i, next := range want[1:] {
			test.FocusNext(c)
			if got := c.Focused(); got != next {
				t.Fatalf("Tab %d from the row's name: focus on %T %p, want control %d, %T %p", i+1, got, got, i+1, next, next)
			}
		}
	})
}
