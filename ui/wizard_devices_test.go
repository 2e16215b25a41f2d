package ui

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/study"
	"sparkbench/runner/llamacpp"
)

// deviceRegistrar is a Registrar that lists devices as the default prefix's build does on a
// machine without a GPU: the Vulkan backend loads, and Mesa's llvmpipe appears only with
// GGML_VK_VISIBLE_DEVICES=0; RPC endpoint 127.0.0.1:1 refuses the connection.
type deviceRegistrar struct {
	fakeRegistrar
	mu    sync.Mutex
	asked []string // the env of each listing
}

var llvmpipe = llamacpp.Device{Name: "Vulkan0", Description: "llvmpipe (LLVM 15.0.6, 256 bits)", TotalMiB: 2048, FreeMiB: 2048}

func (f *deviceRegistrar) BuildDevices(_ context.Context, p *study.Plan) (*study.BuildDevices, []study.Problem) {
	f.mu.Lock()
	f.asked = append(f.asked, strings.Join(p.Build.EnvList(), " "))
	f.mu.Unlock()
	if slices.Contains(p.Axes.RPC, "127.0.0.1:1") {
		return nil, []study.Problem{{Path: "axes.rpc", Severity: study.SevError,
			Msg: "RPC endpoint 127.0.0.1:1 refused the connection: start ggml-rpc-server there (ggml-rpc-server -H HOST -p PORT), or fix axes.rpc"}}
	}
	b := &study.BuildDevices{Backends: []string{"RPC (libggml-rpc.so)", "Vulkan (libggml-vulkan.so)", "CPU (libggml-cpu-zen4.so)"}, Listed: true}
	if p.Build.Env["GGML_VK_VISIBLE_DEVICES"] == "0" {
		b.Devices = []llamacpp.Device{llvmpipe}
	}
	return b, nil
}

var vkNote = app.DeviceNote{Backend: "Vulkan", Env: "GGML_VK_VISIBLE_DEVICES=0", CPUType: true, Devices: []llamacpp.Device{llvmpipe},
	Text: "Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free) appears only with GGML_VK_VISIBLE_DEVICES=0 (ggml skips Vulkan devices of CPU type): set build.env in a plan to use it"}

// newDeviceWizard is a New study form over the tiny models with the device registrar, its
// usual fields filled so that only the device fields can make problems.
func newDeviceWizard(t *testing.T) (*WizardView, *deviceRegistrar) {
	t.Helper()
	a := newTestApp(t)
	tiny := filepath.Join(modelsDir(), "tiny-llama-f32.gguf")
	moe := filepath.Join(modelsDir(), "tiny-moe-f32.gguf")
	models := []app.ModelEntry{app.InspectModel(tiny), app.InspectModel(moe)}
	reg := &deviceRegistrar{}
	v := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), reg, nil, func() []app.ModelEntry { return models }, nil)
	})
	Locked(func() {
		test.Type(v.Name, "devices")
		v.Models.SetSelected([]string{tiny, moe})
		v.Depths.SetText("0,64")
		v.NPrompt.SetText("32")
		v.NGen.SetText("16")
		v.Reps.SetText("3")
		v.Threads.SetText("1")
		v.Split.SetSelected(string(study.SplitCombined))
	})
	return v, reg
}

// axesJSON is the device part of the form's plan as JSON (build.env and the device axes), for
// comparing with what a test filled in.
func axesJSON(t *testing.T, p *study.Plan) string {
	t.Helper()
	a := p.Axes
	part := struct {
		Env             map[string]string `json:"env,omitempty"`
		NGL             []int             `json:"ngl,omitempty"`
		Devices         []string          `json:"devices,omitempty"`
		SplitMode       []string          `json:"split_mode,omitempty"`
		TensorSplit     []string          `json:"tensor_split,omitempty"`
		NCPUMoE         []int             `json:"n_cpu_moe,omitempty"`
		OverrideTensors []string          `json:"override_tensors,omitempty"`
		NoKVOffload     []bool            `json:"no_kv_offload,omitempty"`
		LoadMode        []string          `json:"load_mode,omitempty"`
		RPC             []string          `json:"rpc,omitempty"`
	}{p.Build.Env, a.NGL, a.Devices, a.SplitMode, a.TensorSplit, a.NCPUMoE, a.OverrideTensors, a.NoKVOffload, a.LoadMode, a.RPC}
	b, err := json.Marshal(part)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWizardDeviceFieldsMakeThePlan fills every device field as a user would: the doctor's
// note offers GGML_VK_VISIBLE_DEVICES=0, choosing it lists Vulkan0 among the devices, and the
// plan the form produces (its saved JSON, what Register receives, its legs) carries exactly
// what was filled in.
func TestWizardDeviceFieldsMakeThePlan(t *testing.T) {
	v, reg := newDeviceWizard(t)
	waitValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" })
	Locked(func() {
		if !slices.Equal(v.Devices.Options, []string{"none", "auto"}) || !strings.Contains(v.DevicesNote.Text, "lists no device") {
			t.Errorf("devices offered without env: %v (%q)", v.Devices.Options, v.DevicesNote.Text)
		}
		if v.EnvHint.Visible() || len(v.EnvChoices()) != 0 {
			t.Errorf("an env offered before the doctor said anything: %v", v.EnvChoices())
		}
		v.SetDoctorReport(app.DoctorReport{DeviceNotes: []app.DeviceNote{vkNote}})
		if !slices.Equal(v.EnvChoices(), []string{"GGML_VK_VISIBLE_DEVICES=0"}) || !v.EnvHint.Visible() || v.EnvHint.Text != "doctor: "+vkNote.Text {
			t.Errorf("env choices %v, hint %q", v.EnvChoices(), v.EnvHint.Text)
		}
		v.Env.SetText(v.EnvChoices()[0]) // as choosing it from the drop-down does
	})
	waitValidated(t, v, func() bool { return slices.Contains(v.Devices.Options, "Vulkan0") })
	Locked(func() {
		if want := "the build lists Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free)"; v.DevicesNote.Text != want {
			t.Errorf("devices note %q, want %q", v.DevicesNote.Text, want)
		}
		v.Devices.SetSelected([]string{"none", "Vulkan0"})
		v.NGL.SetText("0, 99")
		v.SplitMode.SetSelected([]string{"layer"})
		v.TensorSplit.SetText("1")
		v.NCPUMoE.SetText("0,2")
		v.Overrides.SetSelected([]string{"experts_on_cpu"})
		v.OverrideCustom.SetText(`\.ffn_up_exps=CPU` + "\n\n")
		v.NoKVOffload.SetSelected([]string{kvOnDevice, kvOnHost})
		v.LoadMode.SetSelected([]string{"mmap", "none"})
	})
	waitValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" && !v.RegisterBtn.Disabled() })

	var saved []byte
	var err error
	Locked(func() { saved, err = v.PlanJSON() })
	if err != nil {
		t.Fatal(err)
	}
	p, err := study.Decode("saved.json", saved)
	if err != nil {
		t.Fatalf("the saved plan does not decode: %v\n%s", err, saved)
	}
	want := `{"env":{"GGML_VK_VISIBLE_DEVICES":"0"},"ngl":[0,99],"devices":["none","Vulkan0"],"split_mode":["layer"],"tensor_split":["1"],` +
		`"n_cpu_moe":[0,2],"override_tensors":["experts_on_cpu","\\.ffn_up_exps=CPU"],"no_kv_offload":[false,true],"load_mode":["mmap","none"]}`
	if got := axesJSON(t, p); got != want {
		t.Fatalf("device part of the plan:\n got %s\nwant %s", got, want)
	}
	legs, err := study.Expand(p, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range legs {
		ids = append(ids, l.ID)
	}
	if !slices.Equal(ids, []string{"tiny-llama-f32/dev-none", "tiny-moe-f32/dev-none", "tiny-llama-f32/dev-Vulkan0", "tiny-moe-f32/dev-Vulkan0"}) {
		t.Errorf("legs %v", ids)
	}
	args := study.JoinArgs(legs[2].Args)
	for _, a := range []string{"-dev Vulkan0", "-ngl 0,99", "-sm layer", "-ts 1", "-ncmoe 0,2", "-nkvo 0,1", "-lm mmap,none"} {
		if !strings.Contains(args, a) {
			t.Errorf("leg %s lacks %q: %s", legs[2].ID, a, args)
		}
	}

	// Register receives the same plan.
	result := make(chan error, 1)
	Locked(func() { v.Register(func(_ study.Registration, err error) { result <- err }) })
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	if got := axesJSON(t, reg.got); got != want {
		t.Fatalf("registered device part:\n got %s\nwant %s", got, want)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if !slices.Contains(reg.asked, "") || !slices.Contains(reg.asked, "GGML_VK_VISIBLE_DEVICES=0") {
		t.Errorf("listings asked with env %q", reg.asked)
	}
}

// The form's live check shows the device fields' problems: a tensor split with the wrong
// number of entries, a device the build does not list (naming the ones it does, and for a
// missing Vulkan device the variable), an RPC endpoint that refuses, and env keys that are
// not device visibility variables. Register stays disabled meanwhile.
func TestWizardDeviceProblems(t *testing.T) {
	v, _ := newDeviceWizard(t)
	Locked(func() { v.Env.SetText("GGML_VK_VISIBLE_DEVICES=0") })
	waitValidated(t, v, func() bool { return slices.Contains(v.Devices.Options, "Vulkan0") })
	Locked(func() {
		v.Devices.SetSelected([]string{"none", "Vulkan0"})
		v.TensorSplit.SetText("3/1")
	})
	shows := func(want string) {
		t.Helper()
		waitValidated(t, v, func() bool { return strings.Contains(v.Problems.Text, want) && v.RegisterBtn.Disabled() })
	}
	shows(`error: axes.tensor_split[0]: "3/1" has 2 entries, and devices "Vulkan0" names 1 devices: give one entry per device`)

	// Without the variable, the build lists no Vulkan device: Vulkan0 stays ticked (and
	// offered), and its problem says why.
	Locked(func() {
		v.TensorSplit.SetText("")
		v.Env.SetText("")
	})
	shows("error: axes.devices[1]: Vulkan0: no such device (the build lists none); the Vulkan backend loaded but found no device")
	Locked(func() {
		if !strings.Contains(v.Problems.Text, "set build.env GGML_VK_VISIBLE_DEVICES") || !slices.Contains(v.Devices.Options, "Vulkan0") {
			t.Errorf("problems %q, options %v", v.Problems.Text, v.Devices.Options)
		}
	})

	// A device the build does not have, named by a plan: the problem lists the ones there are.
	Locked(func() {
		p, errs := v.Plan()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		p.Build.Env = map[string]string{"GGML_VK_VISIBLE_DEVICES": "0"}
		p.Axes.Devices = []string{"CUDA1"}
		v.LoadPlan(p, "")
		if !slices.Contains(v.Devices.Options, "CUDA1") || !slices.Equal(v.Devices.Selected, []string{"CUDA1"}) {
			t.Errorf("an opened plan's device is not shown: %v of %v", v.Devices.Selected, v.Devices.Options)
		}
	})
	shows("error: axes.devices[0]: CUDA1: no such device; the build lists Vulkan0 (llama-bench --list-devices with the plan's env)")

	Locked(func() {
		v.Devices.SetSelected(nil)
		v.RPC.SetText("127.0.0.1:1")
	})
	shows("error: axes.rpc: RPC endpoint 127.0.0.1:1 refused the connection")
	Locked(func() { v.RPC.SetText("nohost") })
	shows(`error: axes.rpc[0]: "nohost": want HOST:PORT of a ggml-rpc-server`)

	Locked(func() {
		v.RPC.SetText("")
		v.Env.SetText("PATH=/tmp")
	})
	shows("error: build.env.PATH: not a device visibility variable; a plan may set CUDA_VISIBLE_DEVICES, GGML_VK_VISIBLE_DEVICES")
	Locked(func() { v.Env.SetText("GGML_VK_VISIBLE_DEVICES") })
	shows(`env: "GGML_VK_VISIBLE_DEVICES": want KEY=VALUE`)
	Locked(func() {
		v.Env.SetText("")
		v.NCPUMoE.SetText("two")
	})
	shows(`n_cpu_moe: "two" is not a whole number`)
	Locked(func() {
		v.NCPUMoE.SetText("")
		v.Overrides.SetSelected([]string{"experts_on_cpu"})
		v.OverrideCustom.SetText("experts_on_cpu")
	})
	shows(`override tensors: "experts_on_cpu" is given twice`)
	Locked(func() {
		v.Overrides.SetSelected(nil)
		v.OverrideCustom.SetText("blk=")
	})
	shows(`error: axes.override_tensors[0]: "blk=": want PATTERN=BUFFER_TYPE`)
	Locked(func() { v.OverrideCustom.SetText("") })
	waitValidated(t, v, func() bool { return v.Problems.Text == "no problems: ready to register" && !v.RegisterBtn.Disabled() })
}

// A plan with device axes opens into the form and saves back to the same plan (same
// SHA-256), override values in their order (a custom value before a preset stays first).
func TestWizardOpensAndSavesDevicePlans(t *testing.T) {
	v, _ := newDeviceWizard(t)
	var p *study.Plan
	Locked(func() {
		var errs []string
		p, errs = v.Plan()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
	})
	p.Build.Env = map[string]string{"GGML_VK_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "0,1"}
	a := &p.Axes
	a.Devices = []string{"Vulkan0", "none", "auto"}
	a.NGL = []int{99}
	a.SplitMode = []string{"row", "none"}
	a.TensorSplit = []string{"1"}
	a.NCPUMoE = []int{4}
	a.OverrideTensors = []string{`\.ffn_up_exps=CPU`, "experts_on_cpu"}
	a.NoKVOffload = []bool{true}
	a.LoadMode = []string{"dio"}
	a.RPC = []string{"127.0.0.1:50052", "10.0.0.2:50052"}
	p.Defaults()
	wantSum, _, err := p.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	var saved []byte
	Locked(func() {
		v.LoadPlan(p, "")
		if v.Env.Text != "CUDA_VISIBLE_DEVICES=0,1 GGML_VK_VISIBLE_DEVICES=0" || len(v.Overrides.Selected) != 0 ||
			v.OverrideCustom.Text != "\\.ffn_up_exps=CPU\nexperts_on_cpu" || v.RPC.Text != "127.0.0.1:50052,10.0.0.2:50052" {
			t.Errorf("form: env %q, presets %v, custom %q, rpc %q", v.Env.Text, v.Overrides.Selected, v.OverrideCustom.Text, v.RPC.Text)
		}
		saved, err = v.PlanJSON()
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := study.Decode("saved.json", saved)
	if err != nil {
		t.Fatal(err)
	}
	if sum, _, _ := got.SHA256(); sum != wantSum {
		t.Fatalf("round trip changed the plan:\n%s", saved)
	}
}

// An -ngl sweep alone asks for offload: on a build that lists no device the form warns, as
// study validate does, and the plan may still be registered.
func TestWizardWarnsOfOffloadWithoutDevices(t *testing.T) {
	v, _ := newDeviceWizard(t)
	Locked(func() { v.NGL.SetText("0,99") })
	waitValidated(t, v, func() bool {
		return strings.Contains(v.Problems.Text, "warning: axes.ngl[1]: -ngl 99 on a build that lists no device") && !v.RegisterBtn.Disabled()
	})
}
