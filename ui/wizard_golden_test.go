package ui

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/study"
)

// The plans the New study form builds when no device field is touched, recorded before the
// form had device fields (testdata/wizard_*.golden.json: the canonical JSON the SHA-256 is
// taken over): a form that leaves the device fields alone must produce these bytes, so a plan
// made in the window keeps its SHA-256. SPARKBENCH_UPDATE_GOLDEN=1 rewrites them (only ever
// from a form whose output is known to be the same as before).
func TestWizardPlanWithoutDeviceFieldsIsUnchanged(t *testing.T) {
	models := []app.ModelEntry{{Path: "/models/a.gguf"}, {Path: "/models/b-moe.gguf"}}
	cases := []struct {
		name string
		fill func(v *WizardView)
	}{
		{"defaults", func(v *WizardView) {
			test.Type(v.Name, "golden defaults")
			v.Models.SetSelected([]string{"/models/a.gguf"})
		}},
		{"filled", func(v *WizardView) {
			test.Type(v.Name, "golden filled")
			v.Models.SetSelected([]string{"/models/a.gguf", "/models/b-moe.gguf"})
			v.Depths.SetText("0,512,1024")
			v.NPrompt.SetText("64,128")
			v.NGen.SetText("32")
			v.Reps.SetText("3")
			v.Threads.SetText("1,2")
			v.Ubatch.SetSelected([]string{"256", "512"})
			v.FlashAttn.SetSelected([]string{"on", "off"})
			v.KV.SetSelected([]string{"f16/f16", "q8_0/q8_0"})
			v.Split.SetSelected(string(study.SplitCombined))
			v.CVTG.SetText("4")
			v.CVPPDepth.SetText("12")
			v.CVPPD0.SetText("6")
			v.Bandwidth.SetText("220")
			p, err := buildPrediction("band", "a tg at d0", "cell", "a", "tg", "0", "", "10", "1000", "", "", "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			v.AddPrediction(p)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newTestApp(t)
			v := build(func() *WizardView {
				return newWizardView(a.NewWindow("t"), &fakeRegistrar{}, nil, func() []app.ModelEntry { return models }, nil)
			})
			var p *study.Plan
			var errs []string
			Locked(func() {
				c.fill(v)
				p, errs = v.Plan()
			})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			p.Defaults()
			sum, canonical, err := p.SHA256()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", "wizard_"+c.name+".golden.json")
			if os.Getenv("SPARKBENCH_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(file, append(canonical, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(append(canonical, '\n'), want) {
				t.Fatalf("the form's plan changed (sha256 %s):\n got %s\nwant %s", sum, canonical, want)
			}
		})
	}
}
