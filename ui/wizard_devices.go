package ui

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app"
	"sparkbench/app/study"
)

// DeviceLister lists the devices of the build that would run a plan, as its llama-bench
// --list-devices prints them with the plan's build.env and RPC endpoints, whether or not the
// plan has device axes. A Registrar that implements it fills the New study form's Devices
// choices and checks the device axes as they are typed (registering checks them again).
// Problems: an RPC endpoint that refuses or does not answer (an error at axes.rpc), a build that
// could not be asked (a warning); devices is nil then.
type DeviceLister interface {
	BuildDevices(ctx context.Context, p *study.Plan) (*study.BuildDevices, []study.Problem)
}

// The Devices choices the form always offers: llama-bench's -dev none (the CPU) and auto.
var fixedDevices = []string{"none", "auto"}

// Choices of the no_kv_offload axis (-nkvo 0|1).
const (
	kvOnDevice = "no"
	kvOnHost   = "yes"
)

// newDeviceForm builds the device axes' fields (docs/plans.md, "Devices"). Each is optional
// and reaches the plan only when set, so a plan made without them is the plan made before the
// form had them.
func (v *WizardView) newDeviceForm(entry func(text, hint string) *widget.Entry) fyne.CanvasObject {
	check := func(opts []string) *widget.CheckGroup {
		cg := widget.NewCheckGroup(opts, func([]string) { v.Validate() })
		cg.Horizontal = true
		return cg
	}
	v.Env = widget.NewSelectEntry(nil)
	v.Env.SetPlaceHolder("KEY=VALUE, several separated by spaces, e.g. GGML_VK_VISIBLE_DEVICES=0; only " + strings.Join(study.DeviceEnvNames, ", "))
	v.Env.OnChanged = func(string) { v.Validate() }
	v.EnvHint = widget.NewLabel("")
	v.EnvHint.Wrapping = fyne.TextWrapWord
	v.EnvHint.Importance = widget.WarningImportance
	v.EnvHint.Hide()
	v.Devices = check(append([]string(nil), fixedDevices...))
	v.DevicesNote = widget.NewLabel("the build's devices are listed here with the env above (none: the CPU; one leg per ticked device)")
	v.DevicesNote.Wrapping = fyne.TextWrapWord
	v.NGL = entry("", "layers on the device (-ngl), comma list, e.g. 0,16,99; empty: -1 (all)")
	v.SplitMode = check(study.SplitModes)
	v.TensorSplit = entry("", "-ts, comma list of splits with one proportion per device, e.g. 3/1")
	v.NCPUMoE = entry("", "-ncmoe, comma list: MoE layers whose experts stay on the CPU")
	presets := make([]string, 0, len(study.OverridePresets))
	for k := range study.OverridePresets {
		presets = append(presets, k)
	}
	sort.Strings(presets)
	v.Overrides = check(presets)
	v.OverrideCustom = widget.NewMultiLineEntry()
	v.OverrideCustom.SetPlaceHolder("-ot values, one per line: PATTERN=BUFFER_TYPE (several joined by ;), e.g. \\.ffn_up_exps=CPU")
	v.OverrideCustom.SetMinRowsVisible(2)
	v.OverrideCustom.OnChanged = func(string) { v.Validate() }
	v.NoKVOffload = check([]string{kvOnDevice, kvOnHost})
	v.LoadMode = check(study.LoadModes)
	v.RPC = entry("", "ggml-rpc-server endpoints, comma list of HOST:PORT; their devices are RPC0, RPC1 …")

	form := widget.NewForm(
		hinted("Env", container.NewVBox(v.Env, v.EnvHint), "environment variables of every llama-bench run (the plan's build.env; no llama.cpp flag)"),
		hinted("Devices", container.NewVBox(v.Devices, v.DevicesNote), "the devices each leg runs on (llama-bench -dev)"),
		hinted("ngl", v.NGL, "layers stored on the device (llama-bench -ngl)"),
		hinted("Split mode", v.SplitMode, "how the model is split across devices (llama-bench -sm)"),
		hinted("Tensor split", v.TensorSplit, "the share of the model on each device (llama-bench -ts)"),
		hinted("n_cpu_moe", v.NCPUMoE, "MoE layers whose experts stay on the CPU (llama-bench -ncmoe)"),
		hinted("Override tensors", container.NewVBox(v.Overrides, v.OverrideCustom), "tensors placed on a buffer type by pattern (llama-bench -ot)"),
		hinted("KV cache in host memory", v.NoKVOffload, "keep the KV cache off the device (llama-bench -nkvo)"),
		hinted("Load mode", v.LoadMode, "how the model file is loaded: mmap, mlock, direct I/O (llama-bench -lm)"),
		hinted("RPC endpoints", v.RPC, "ggml-rpc-server endpoints whose devices the legs may use (llama-bench --rpc)"),
	)
	return widget.NewCard("Devices", "optional: each field reaches the plan only when set", form)
}

// parseEnv reads KEY=VALUE pairs separated by spaces (values such as CUDA_VISIBLE_DEVICES=0,1
// hold commas); nil when there are none. Which keys a plan may set is study.Validate's rule.
func parseEnv(s string) (map[string]string, error) {
	var env map[string]string
	for _, kv := range strings.Fields(s) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("env: %q: want KEY=VALUE, e.g. GGML_VK_VISIBLE_DEVICES=0", kv)
		}
		if _, dup := env[k]; dup {
			return nil, fmt.Errorf("env: %s is given twice", k)
		}
		if env == nil {
			env = map[string]string{}
		}
		env[k] = val
	}
	return env, nil
}

// deviceAxes fills the plan's build.env and device axes from the form, each only when set.
// It returns the fields that do not parse.
func (v *WizardView) deviceAxes(p *study.Plan) []string {
	var errs []string
	env, err := parseEnv(v.Env.Text)
	if err != nil {
		errs = append(errs, err.Error())
	}
	p.Build.Env = env
	a := &p.Axes
	a.Devices = slices.Clone(v.Devices.Selected)
	if a.NGL, err = parseInts("ngl", v.NGL.Text); err != nil {
		errs = append(errs, err.Error())
	}
	a.SplitMode = slices.Clone(v.SplitMode.Selected)
	a.TensorSplit = splitList(v.TensorSplit.Text)
	if a.NCPUMoE, err = parseInts("n_cpu_moe", v.NCPUMoE.Text); err != nil {
		errs = append(errs, err.Error())
	}
	a.OverrideTensors = slices.Clone(v.Overrides.Selected)
	for _, line := range strings.Split(v.OverrideCustom.Text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if slices.Contains(a.OverrideTensors, line) {
			errs = append(errs, fmt.Sprintf("override tensors: %q is given twice", line))
			continue
		}
		a.OverrideTensors = append(a.OverrideTensors, line)
	}
	for _, s := range v.NoKVOffload.Selected {
		a.NoKVOffload = append(a.NoKVOffload, s == kvOnHost)
	}
	a.LoadMode = slices.Clone(v.LoadMode.Selected)
	a.RPC = splitList(v.RPC.Text)
	return errs
}

// loadDeviceFields fills the device fields from a plan (LoadPlan).
func (v *WizardView) loadDeviceFields(p *study.Plan) {
	v.Env.SetText(strings.Join(p.Build.EnvList(), " "))
	a := p.Axes
	v.offerDeviceChoices(nil, a.Devices)
	v.Devices.SetSelected(slices.Clone(a.Devices))
	v.NGL.SetText(joinIntList(a.NGL))
	v.SplitMode.SetSelected(slices.Clone(a.SplitMode))
	v.TensorSplit.SetText(strings.Join(a.TensorSplit, ","))
	v.NCPUMoE.SetText(joinIntList(a.NCPUMoE))
	// Presets go to their boxes only when they come first, so the values keep their order
	// (and the plan its SHA-256); otherwise every value is a line of the custom field.
	var presets, custom []string
	for _, ot := range a.OverrideTensors {
		if _, ok := study.OverridePresets[ot]; ok && len(custom) == 0 {
			presets = append(presets, ot)
		} else {
			custom = append(custom, ot)
		}
	}
	v.Overrides.SetSelected(presets)
	v.OverrideCustom.SetText(strings.Join(custom, "\n"))
	var kv []string
	for _, b := range a.NoKVOffload {
		if b {
			kv = append(kv, kvOnHost)
		} else {
			kv = append(kv, kvOnDevice)
		}
	}
	v.NoKVOffload.SetSelected(kv)
	v.LoadMode.SetSelected(slices.Clone(a.LoadMode))
	v.RPC.SetText(strings.Join(a.RPC, ","))
}

// SetDoctorReport gives the form what the doctor found: its device notes offer their
// variable (GGML_VK_VISIBLE_DEVICES=0 when the build shows a Vulkan device only with it) as an
// Env choice, and the devices are listed again (the build may have changed). UI goroutine.
func (v *WizardView) SetDoctorReport(r app.DoctorReport) {
	var opts, hints []string
	for _, n := range r.DeviceNotes {
		if n.Env != "" && !slices.Contains(opts, n.Env) {
			opts = append(opts, n.Env)
		}
		hints = append(hints, "doctor: "+n.Text)
	}
	v.envChoices = opts
	v.Env.SetOptions(opts)
	v.EnvHint.SetText(strings.Join(hints, "\n"))
	setVisible(v.EnvHint, len(hints) > 0)
	v.mu.Lock()
	if v.devQ != nil {
		v.devQ.cancel()
		v.devQ = nil
	}
	v.mu.Unlock()
	v.Validate()
}

// EnvChoices are the values the Env field's drop-down offers (from the doctor's notes).
func (v *WizardView) EnvChoices() []string { return slices.Clone(v.envChoices) }

// deviceQuery is one listing of the build's devices, for one build folder, env and endpoint
// list; the latest is kept and shared by the validations that ask for the same key.
type deviceQuery struct {
	key    string
	done   chan struct{}
	cancel context.CancelFunc
	devs   *study.BuildDevices
	probs  []study.Problem
	called bool // cancelled before it ended: not an answer
}

// listDevices lists the build's devices with the plan's env and endpoints through the
// Registrar (when it is a DeviceLister), reusing the last listing of the same key. It runs off
// the UI goroutine; ok is false when nothing was asked (no lister, an endpoint that does not
// parse, or a newer validation took over).
func (v *WizardView) listDevices(gen int, p *study.Plan) (devs *study.BuildDevices, probs []study.Problem, ok bool) {
	lister, isLister := v.reg.(DeviceLister)
	if !isLister {
		return nil, nil, false
	}
	for _, ep := range p.Axes.RPC {
		if _, err := study.ParseEndpoint(ep); err != nil {
			return nil, nil, false // the form's own check names it
		}
	}
	key := strings.Join([]string{p.Build.Dir, strings.Join(p.Build.EnvList(), " "), strings.Join(p.Axes.RPC, ",")}, "\x00")
	v.mu.Lock()
	q := v.devQ
	if q == nil || q.key != key || q.called {
		if gen != v.gen {
			v.mu.Unlock()
			return nil, nil, false // a newer validation asks for what it needs
		}
		if q != nil {
			q.cancel() // another env or endpoint list: the old answer is of no use
		}
		ctx, cancel := context.WithCancel(context.Background())
		q = &deviceQuery{key: key, done: make(chan struct{}), cancel: cancel}
		v.devQ = q
		query := &study.Plan{Build: p.Build, Axes: study.Axes{RPC: p.Axes.RPC}}
		go func() {
			defer close(q.done)
			d, pr := lister.BuildDevices(ctx, query)
			v.mu.Lock()
			q.devs, q.probs, q.called = d, pr, ctx.Err() != nil
			v.mu.Unlock()
		}()
	}
	v.mu.Unlock()
	<-q.done // bounded: the lister's --list-devices and endpoint dials are
	v.mu.Lock()
	defer v.mu.Unlock()
	if q.called {
		return nil, nil, false
	}
	return q.devs, q.probs, true
}

// offerDeviceChoices makes none, auto, the listed devices (and, for two or more, all of them
// joined by /, for a split across devices) the Devices choices, keeping every ticked value
// even when the build does not list it, so that its problem shows. UI goroutine.
func (v *WizardView) offerDeviceChoices(devs *study.BuildDevices, keep []string) {
	opts := slices.Clone(fixedDevices)
	if devs != nil {
		names := devs.Names()
		opts = append(opts, names...)
		if len(names) > 1 {
			opts = append(opts, strings.Join(names, "/"))
		}
		if len(names) == 0 {
			v.DevicesNote.SetText("the build lists no device with this env: only none (the CPU) and auto")
		} else {
			var ds []string
			for _, d := range devs.Devices {
				ds = append(ds, fmt.Sprintf("%s: %s (%d MiB, %d MiB free)", d.Name, d.Description, d.TotalMiB, d.FreeMiB))
			}
			v.DevicesNote.SetText("the build lists " + strings.Join(ds, "; "))
		}
	}
	for _, s := range append(slices.Clone(v.Devices.Selected), keep...) {
		if !slices.Contains(opts, s) {
			opts = append(opts, s)
		}
	}
	if !slices.Equal(opts, v.Devices.Options) {
		v.Devices.Options = opts
		v.Devices.Refresh()
	}
}
