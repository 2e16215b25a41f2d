package main

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
	"sparkbench/ui"
)

// TestWizardDevicesOnTheRealBuild drives the window's New study form against the default
// prefix's real build, doctor and study service: the doctor's note offers
// GGML_VK_VISIBLE_DEVICES=0, choosing it lists the Vulkan device (llvmpipe) among the Devices,
// a plan on the CPU and on that device registers with them (one leg each), and the register
// path refuses the same device without the variable and an RPC endpoint that refuses.
func TestWizardDevicesOnTheRealBuild(t *testing.T) {
	_, dev := vulkanDevice(t)
	nb, tmp, _ := tempNotebook(t)
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{
			Doctor: func(ctx context.Context, dir string) app.DoctorReport {
				return app.Doctor(ctx, app.DoctorOptions{LlamaDir: dir, ModelDirs: []string{llamatest.ModelsDir()}})
			},
			Library:   notebookLibrary{nb},
			Studies:   svc,
			Registrar: svc,
		})
	})
	defer ui.Locked(func() { wb.Window.Close() })
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	w := wb.Wizard
	waitFor(t, "the doctor's note in the form", func() bool { return slices.Contains(w.EnvChoices(), vkEnv) })
	waitFor(t, "the models", func() bool { return slices.Contains(w.Models.Options, tiny) })
	ui.Locked(func() {
		if !w.EnvHint.Visible() || !strings.Contains(w.EnvHint.Text, "appears only with "+vkEnv) {
			t.Errorf("env hint %q", w.EnvHint.Text)
		}
		if slices.Contains(w.Devices.Options, dev) {
			t.Errorf("%s offered without the variable: %v", dev, w.Devices.Options)
		}
		test.Type(w.Name, "window cpu vs vulkan")
		w.Models.SetSelected([]string{tiny})
		w.Depths.SetText("0")
		w.NPrompt.SetText("16")
		w.NGen.SetText("4")
		w.Reps.SetText("3")
		w.Threads.SetText("1")
		for _, e := range []*widget.Entry{w.CVTG, w.CVPPDepth, w.CVPPD0} {
			e.SetText("100")
		}
		w.Env.SetText(vkEnv)
	})
	waitFor(t, dev+" among the devices", func() bool { return slices.Contains(w.Devices.Options, dev) })
	ui.Locked(func() {
		w.Devices.SetSelected([]string{"none", dev})
		w.NGL.SetText("99")
	})
	waitFor(t, "a clean check", func() bool { return w.Problems.Text == "no problems: ready to register" && !w.RegisterBtn.Disabled() })

	// Without the variable the form shows the device's problem, naming the variable.
	ui.Locked(func() { w.Env.SetText("") })
	waitFor(t, "the unknown device's problem", func() bool {
		return strings.Contains(w.Problems.Text, "axes.devices[1]: "+dev+": no such device") && strings.Contains(w.Problems.Text, "GGML_VK_VISIBLE_DEVICES") && w.RegisterBtn.Disabled()
	})
	// … and the register path refuses it, as it refuses an endpoint that refuses.
	var p *study.Plan
	ui.Locked(func() { p, _ = w.Plan() })
	var refused *study.RefusedError
	if _, err := svc.Register(context.Background(), p); !errors.As(err, &refused) || !strings.Contains(err.Error(), dev+": no such device") {
		t.Fatalf("register without the variable: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	p.Build.Env = map[string]string{"GGML_VK_VISIBLE_DEVICES": "0"}
	p.Axes.RPC = []string{closed}
	if _, err := svc.Register(context.Background(), p); !errors.As(err, &refused) || !strings.Contains(err.Error(), "RPC endpoint "+closed+" refused the connection") {
		t.Fatalf("register with a closed endpoint: %v", err)
	}
	list, err := nb.Studies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == "window cpu vs vulkan" {
			t.Fatalf("a refused plan reached the notebook: %+v", s)
		}
	}

	ui.Locked(func() { w.Env.SetText(vkEnv) })
	waitFor(t, "a clean check again", func() bool { return w.Problems.Text == "no problems: ready to register" && !w.RegisterBtn.Disabled() })
	result := make(chan error, 1)
	var reg study.Registration
	ui.Locked(func() {
		w.Register(func(r study.Registration, err error) {
			reg = r
			result <- err
		})
	})
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	st, err := store.StudyRecorder{N: nb}.Study(context.Background(), reg.StudyID)
	if err != nil {
		t.Fatal(err)
	}
	frozen, err := study.Decode("plan", st.PlanJSON)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Legs != 2 || !slices.Equal(frozen.Axes.Devices, []string{"none", dev}) || frozen.Build.Env["GGML_VK_VISIBLE_DEVICES"] != "0" || !slices.Equal(frozen.Axes.NGL, []int{99}) {
		t.Fatalf("registered %d legs, plan %s", reg.Legs, st.PlanJSON)
	}
}
