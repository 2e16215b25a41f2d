package ui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
)

// ServerFlagLister lists the flags the llama-server that would run the capacity form's plans
// accepts (its --help, as `capacity validate` reads it) and that binary's path. A
// CapacityService that implements it has every server configuration's flags (the rows' fields
// and their other flags) checked as they are typed; registering checks them again.
type ServerFlagLister interface {
	ServerFlags(ctx context.Context) (known map[string]bool, bin string, err error)
}

// configField is one llama-server flag a server configuration row has a field for: the
// spellings llama-server's --help gives it (the first is the one a new value is written with),
// the field's label and its hint.
type configField struct {
	key, label, hint string
	spellings        []string
	choices          []string
	check            func(string) error
}

// Choices the throughput and capacity forms offer for ubatch and flash attention
// (llama-bench's and llama-server's -ub, -fa [on|off|auto]).
var (
	ubatchChoices    = []string{"128", "256", "512", "1024", "2048"}
	flashAttnChoices = []string{"auto", "on", "off"}
)

// nConfigFields is how many flag fields a row has.
const nConfigFields = 10

// configFields are the row's flag fields in the order a new row writes them.
var configFields = [nConfigFields]configField{
	{key: "ctk", label: "KV cache type K", hint: "KV cache data type for K (-ctk); empty: the build's default (f16)",
		spellings: []string{"-ctk", "--cache-type-k"}, choices: study.KVTypeNames(), check: oneOf("KV cache type", study.KVTypeNames())},
	{key: "ctv", label: "KV cache type V", hint: "KV cache data type for V (-ctv); empty: the build's default (f16)",
		spellings: []string{"-ctv", "--cache-type-v"}, choices: study.KVTypeNames(), check: oneOf("KV cache type", study.KVTypeNames())},
	{key: "ub", label: "ubatch", hint: "physical batch size in tokens (-ub); empty: llama-server's default (512)",
		spellings: []string{"-ub", "--ubatch-size"}, choices: ubatchChoices, check: positiveInt},
	{key: "b", label: "batch", hint: "logical batch size in tokens (-b); empty: llama-server's default (2048)",
		spellings: []string{"-b", "--batch-size"}, choices: []string{"512", "1024", "2048", "4096"}, check: positiveInt},
	{key: "fa", label: "Flash attention", hint: "on, off or auto (-fa); empty: the build's default (auto)",
		spellings: []string{"-fa", "--flash-attn"}, choices: flashAttnChoices, check: oneOf("flash attention", flashAttnChoices)},
	{key: "t", label: "Threads", hint: "CPU threads for generation (-t); empty: llama-server's default (the CPU count)",
		spellings: []string{"-t", "--threads"}, choices: []string{"1", "2", "4", "8", "16"}, check: positiveInt},
	{key: "ngl", label: "ngl", hint: "layers stored on the device (-ngl): a number, auto or all; empty: llama-server's default",
		spellings: []string{"-ngl", "--gpu-layers", "--n-gpu-layers"}, choices: []string{"0", "99", "auto", "all"}, check: nglValue},
	{key: "dev", label: "Device", hint: "devices to offload to (-dev), comma-separated; none: the CPU only; empty: llama-server's default",
		spellings: []string{"-dev", "--device"}, choices: fixedDevices, check: noSpace},
	{key: "sm", label: "Split mode", hint: "how the model is split across devices (-sm): " + strings.Join(study.SplitModes, ", ") + "; empty: layer",
		spellings: []string{"-sm", "--split-mode"}, choices: study.SplitModes, check: oneOf("split mode", study.SplitModes)},
	{key: "ts", label: "Tensor split", hint: "fraction of the model per device (-ts), comma list of proportions, e.g. 3,1",
		spellings: []string{"-ts", "--tensor-split"}, choices: []string{"1,1", "3,1"}, check: noSpace},
}

func noSpace(s string) error {
	if strings.ContainsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		return fmt.Errorf("%q holds a space: one value, no spaces (more flags go in other flags)", s)
	}
	return nil
}

func positiveInt(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n < 1 {
		return fmt.Errorf("%q is not a whole number of at least 1", s)
	}
	return nil
}

func nglValue(s string) error {
	if s == "auto" || s == "all" {
		return nil
	}
	if n, err := strconv.Atoi(s); err != nil || n < 0 {
		return fmt.Errorf("%q is not a number of layers, auto or all", s)
	}
	return nil
}

func oneOf(what string, choices []string) func(string) error {
	return func(s string) error {
		if !slices.Contains(choices, s) {
			return fmt.Errorf("%q is not a %s; want one of %s", s, what, strings.Join(choices, ", "))
		}
		return nil
	}
}

// fieldOfFlag is the index in configFields of the field a flag spelling belongs to, or -1.
func fieldOfFlag(flag string) int {
	for i, f := range configFields {
		if slices.Contains(f.spellings, flag) {
			return i
		}
	}
	return -1
}

// rowFlags is a server configuration's flags split the way a row shows them: a value per
// field (in configFields order), the fields in the order the flags gave them and the spelling
// each was given with (so that the row writes them back unchanged), and the other flags.
type rowFlags struct {
	values [nConfigFields]string
	spell  [nConfigFields]string
	order  []int
	other  []string
}

// splitRowFlags reads a configuration's flags into a row: the leading flags a field stands
// for, each once with a value its field accepts, go to their fields; from the first flag that
// is not one of them (or is given twice, or has no such value) on, every argument goes to the
// other flags unchanged, in order. rowFlags.flags gives back exactly the flags read.
func splitRowFlags(args []string) rowFlags {
	var r rowFlags
	i := 0
	for ; i+1 < len(args); i += 2 {
		k := fieldOfFlag(args[i])
		if k < 0 || slices.Contains(r.order, k) || configFields[k].check(args[i+1]) != nil || noSpace(args[i+1]) != nil {
			break
		}
		r.values[k], r.spell[k] = args[i+1], args[i]
		r.order = append(r.order, k)
	}
	r.other = slices.Clone(args[i:])
	return r
}

// flags are the configuration's llama-server arguments: the fields in the order they were
// read, then the other fields set in configFields order, each with its spelling, then the
// other flags.
func (r rowFlags) flags() []string {
	var out []string
	order := slices.Clone(r.order)
	for k := range configFields {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		if r.values[k] == "" {
			continue
		}
		spell := r.spell[k]
		if spell == "" {
			spell = configFields[k].spellings[0]
		}
		out = append(out, spell, r.values[k])
	}
	return append(out, r.other...)
}

// ConfigRow is one server configuration of the capacity form: its name, a field per flag of
// configFields (Fields, in that order; those with choices offer them in a drop-down), the
// other flags, and the buttons that duplicate and remove it.
type ConfigRow struct {
	Object       fyne.CanvasObject
	Name         *widget.Entry
	Fields       [nConfigFields]*widget.SelectEntry
	Other        *widget.Entry
	DuplicateBtn *widget.Button
	RemoveBtn    *widget.Button

	spell [nConfigFields]string // the spelling each field was read with ("" for the first)
	order []int                 // the fields in the order the opened plan gave them
}

// Field is the row's field for a configFields key (ctk, ctv, ub, b, fa, t, ngl, dev, sm, ts).
func (r *ConfigRow) Field(key string) *widget.SelectEntry {
	for k, f := range configFields {
		if f.key == key {
			return r.Fields[k]
		}
	}
	panic("no server configuration field " + key)
}

// Controls are the row's controls in the order Tab visits them.
func (r *ConfigRow) Controls() []fyne.Focusable {
	out := []fyne.Focusable{r.Name}
	for _, f := range r.Fields {
		out = append(out, f)
	}
	return append(out, r.Other, r.DuplicateBtn, r.RemoveBtn)
}

// ConfigRows are the capacity form's server configurations, a row each; none is one
// configuration, "default", with the flags of every configuration only.
type ConfigRows struct {
	Object fyne.CanvasObject
	Rows   []*ConfigRow
	AddBtn *widget.Button

	box      *fyne.Container
	onChange func()
	devices  []string // the Device fields' choices (SetDeviceChoices)
	asked    bool     // the build's devices were asked for (listDevices)
}

func newConfigRows(onChange func()) *ConfigRows {
	c := &ConfigRows{onChange: onChange, box: container.NewVBox(), devices: slices.Clone(fixedDevices)}
	c.AddBtn = widget.NewButton("Add server configuration", func() { c.Add(serverConfig{name: c.freeName()}) })
	c.Object = container.NewVBox(c.box, c.AddBtn)
	return c
}

func (c *ConfigRows) changed() {
	if c.onChange != nil {
		c.onChange()
	}
}

// freeName is the first of c1, c2, … no row is named.
func (c *ConfigRows) freeName() string {
	for n := len(c.Rows) + 1; ; n++ {
		name := "c" + strconv.Itoa(n)
		if !slices.ContainsFunc(c.Rows, func(r *ConfigRow) bool { return strings.TrimSpace(r.Name.Text) == name }) {
			return name
		}
	}
}

// Add appends a row holding a configuration (its flags split as splitRowFlags does).
func (c *ConfigRows) Add(cfg serverConfig) *ConfigRow {
	r := c.newRow(cfg)
	c.Rows = append(c.Rows, r)
	c.relayout()
	return r
}

// Duplicate inserts a copy of row i after it, named anew.
func (c *ConfigRows) Duplicate(i int) *ConfigRow {
	src := c.Rows[i]
	r := c.newRow(serverConfig{name: c.freeName()})
	r.spell, r.order = src.spell, slices.Clone(src.order)
	for k, f := range src.Fields {
		r.Fields[k].SetText(f.Text)
	}
	r.Other.SetText(src.Other.Text)
	c.Rows = slices.Insert(c.Rows, i+1, r)
	c.relayout()
	return r
}

// Remove takes row i out.
func (c *ConfigRows) Remove(i int) {
	c.Rows = slices.Delete(c.Rows, i, i+1)
	c.relayout()
}

// SetConfigs replaces the rows with one per configuration (none: no rows).
func (c *ConfigRows) SetConfigs(cfgs []serverConfig) {
	c.Rows = nil
	for _, cfg := range cfgs {
		c.Rows = append(c.Rows, c.newRow(cfg))
	}
	c.relayout()
}

func (c *ConfigRows) relayout() {
	objs := make([]fyne.CanvasObject, len(c.Rows))
	for i, r := range c.Rows {
		objs[i] = r.Object
	}
	c.box.Objects = objs
	c.box.Refresh()
	c.changed()
}

func (c *ConfigRows) indexOf(r *ConfigRow) int { return slices.Index(c.Rows, r) }

func (c *ConfigRows) newRow(cfg serverConfig) *ConfigRow {
	rf := splitRowFlags(cfg.flags)
	r := &ConfigRow{spell: rf.spell, order: rf.order}
	changed := func(string) { c.changed() }
	r.Name = widget.NewEntry()
	r.Name.SetText(cfg.name)
	r.Name.OnChanged = changed
	items := []*widget.FormItem{hinted("Name", r.Name, "the configuration's name: candidate IDs, labels and concurrency arms are the model's and this (no llama.cpp flag)")}
	for k, f := range configFields {
		choices := f.choices
		if f.key == "dev" {
			choices = c.devices
		}
		e := widget.NewSelectEntry(slices.Clone(choices))
		e.SetText(rf.values[k])
		e.OnChanged = changed
		r.Fields[k] = e
		items = append(items, hinted(f.label, e, f.hint))
	}
	r.Other = widget.NewEntry()
	r.Other.SetText(strings.Join(rf.other, " "))
	r.Other.OnChanged = changed
	items = append(items, hinted("Other flags", r.Other, "any other llama-server flags, separated by spaces, checked against the build's llama-server --help"))
	r.DuplicateBtn = widget.NewButton("Duplicate", func() { c.Duplicate(c.indexOf(r)) })
	r.RemoveBtn = widget.NewButton("Remove", func() { c.Remove(c.indexOf(r)) })
	r.Object = widget.NewCard("", "", container.NewVBox(widget.NewForm(items...), container.NewHBox(r.DuplicateBtn, r.RemoveBtn)))
	return r
}

// SetDeviceChoices offers none, auto, each device the build lists and, for two or more, all
// of them (llama-server's -dev takes a comma list) in every row's Device field. UI goroutine.
func (c *ConfigRows) SetDeviceChoices(names []string) {
	c.devices = append(slices.Clone(fixedDevices), names...)
	if len(names) > 1 {
		c.devices = append(c.devices, strings.Join(names, ","))
	}
	for _, r := range c.Rows {
		r.Field("dev").SetOptions(slices.Clone(c.devices))
	}
}

// DeviceChoices are the Device fields' choices.
func (c *ConfigRows) DeviceChoices() []string { return slices.Clone(c.devices) }

// listDevices asks the service, when it is a DeviceLister, for the build's devices once, in the
// background, and offers them in the Device fields; the choices stay none and auto otherwise.
func (c *ConfigRows) listDevices(svc CapacityService) {
	lister, ok := svc.(DeviceLister)
	if !ok || c.asked {
		return
	}
	c.asked = true
	go func() {
		devs, _ := lister.BuildDevices(context.Background(), &study.Plan{}) // bounded: --list-devices is
		if devs == nil {
			return
		}
		names := devs.Names()
		onUI(func() { c.SetDeviceChoices(names) })
	}()
}

// hinted is a form item with its hint under the field.
func hinted(label string, w fyne.CanvasObject, hint string) *widget.FormItem {
	it := widget.NewFormItem(label, w)
	it.HintText = hint
	return it
}

// config is the row's configuration: its name and flags (rowFlags.flags).
func (r *ConfigRow) config() serverConfig {
	rf := rowFlags{spell: r.spell, order: r.order, other: strings.Fields(r.Other.Text)}
	for k, f := range r.Fields {
		rf.values[k] = strings.TrimSpace(f.Text)
	}
	return serverConfig{name: strings.TrimSpace(r.Name.Text), flags: rf.flags()}
}

// configs are the rows' configurations (one, "default", without flags when there are no
// rows) and what is wrong with them: a missing or repeated name, a value its field refuses.
func (c *ConfigRows) configs() ([]serverConfig, []string) {
	var out []serverConfig
	var errs []string
	seen := map[string]bool{}
	for i, r := range c.Rows {
		cfg := r.config()
		at := fmt.Sprintf("server configuration %d", i+1)
		switch {
		case cfg.name == "":
			errs = append(errs, at+": give it a name (e.g. q8)")
			continue
		case seen[cfg.name]:
			errs = append(errs, fmt.Sprintf("%s: %q is the name of another configuration; give each its own", at, cfg.name))
			continue
		}
		seen[cfg.name] = true
		bad := false
		for k, f := range configFields {
			v := strings.TrimSpace(r.Fields[k].Text)
			if v == "" {
				continue
			}
			if err := noSpace(v); err != nil {
				errs, bad = append(errs, fmt.Sprintf("%s (%s), %s: %v", at, cfg.name, f.label, err)), true
			} else if err := f.check(v); err != nil {
				errs, bad = append(errs, fmt.Sprintf("%s (%s), %s: %v", at, cfg.name, f.label, err)), true
			}
		}
		if !bad {
			out = append(out, cfg)
		}
	}
	if len(c.Rows) == 0 {
		out = []serverConfig{{name: "default"}}
	}
	return out, errs
}

// Text is the configurations as the form once took them, a line each: "name: flags".
func (c *ConfigRows) Text() string {
	var lines []string
	for _, r := range c.Rows {
		cfg := r.config()
		lines = append(lines, cfg.name+": "+strings.Join(cfg.flags, " "))
	}
	return strings.Join(lines, "\n")
}

// SetText replaces the rows with the configurations of "name: flags" lines (parseConfigs);
// it returns the lines that do not parse, and then leaves the rows as they were.
func (c *ConfigRows) SetText(text string) []string {
	cfgs, errs := parseConfigs(text)
	if len(errs) > 0 {
		return errs
	}
	if strings.TrimSpace(text) == "" {
		cfgs = nil
	}
	c.SetConfigs(cfgs)
	return nil
}

// serverConfig is one server configuration: its name and llama-server flags.
type serverConfig struct {
	name  string
	flags []string
}

// parseConfigs reads "name: flags" lines (a paste of configurations): none is one
// configuration, "default", without flags.
func parseConfigs(text string) ([]serverConfig, []string) {
	var out []serverConfig
	var errs []string
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, flags, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("server configurations, line %d: %q has no name; write name: flags (e.g. q8: -ctk q8_0 -ctv q8_0)", i+1, line))
			continue
		case name == "":
			errs = append(errs, fmt.Sprintf("server configurations, line %d: empty name before the colon", i+1))
			continue
		case seen[name]:
			errs = append(errs, fmt.Sprintf("server configurations, line %d: %q is named twice", i+1, name))
			continue
		}
		seen[name] = true
		out = append(out, serverConfig{name, strings.Fields(flags)})
	}
	if len(out) == 0 && len(errs) == 0 {
		out = []serverConfig{{name: "default"}}
	}
	return out, errs
}
