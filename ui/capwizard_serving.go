package ui

import (
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/capacity"
)

// servingForm is the capacity form's open-loop serving section (docs/serving.md): the arrival
// process, the offered rates and the max-rate search, the SLO (or a named preset from a public
// source), the workload, and the validity settings. Off, the plan has no serving block and is
// the closed-loop study it was.
type servingForm struct {
	Object fyne.CanvasObject
	Enable *widget.Check

	Process                      *widget.Select
	Seed, Burstiness, RampFrom   *widget.Entry
	Rates                        *widget.Entry
	Search                       *widget.Check
	Lo, Hi, Tolerance, MaxProbes *widget.Entry
	Requests, Warmups            *widget.Entry
	MaxInFlight, Slack           *widget.Entry
	Preset                       *widget.Select
	TTFT, TPOT, E2E              *widget.Entry
	Percentile                   *widget.Select
	Completion                   *widget.Entry
	CachePrompt                  *widget.Check
	Contamination, Timing        *widget.Entry

	Workload                        *widget.Select
	WSeed, Input, Output            *widget.Entry
	Prefixes, Suffixes, PrefixWords *widget.Entry
	File, Turns                     *widget.Entry
	fields                          *fyne.Container
	base                            *capacity.Serving // the opened plan's: the files' SHA-256 where the path is unchanged
	changed                         func()
	loading                         bool
}

const (
	presetNone       = "none: my own figures"
	workloadPrompts  = "the prompt plan's prompts"
	workloadSynth    = capacity.WorkloadSynthetic
	workloadPrefix   = capacity.WorkloadSharedPrefix
	workloadSet      = capacity.WorkloadPromptSet
	workloadMulti    = capacity.WorkloadMultiTurn
	servingEnableTxt = "measure open-loop serving after the closed-loop levels of each server lifetime"
)

func newServingForm(changed func()) *servingForm {
	f := &servingForm{changed: changed}
	check := func() {
		if !f.loading {
			changed()
		}
	}
	entry := func(text, hint string) *widget.Entry { return checkedEntry(text, hint, check) }
	f.Enable = widget.NewCheck(servingEnableTxt, func(on bool) {
		setVisible(f.fields, on)
		check()
	})
	f.Process = widget.NewSelect([]string{capacity.ArrivalConstant, capacity.ArrivalPoisson, capacity.ArrivalGamma, capacity.ArrivalRamp}, func(string) { check() })
	f.Process.SetSelected(capacity.ArrivalPoisson)
	f.Seed = entry("1", "seed of the poisson and gamma gaps")
	f.Burstiness = entry("", "gamma shape: 1 is Poisson, below 1 burstier")
	f.RampFrom = entry("", "req/s the ramp starts from")
	f.Rates = entry("1,2,4", "offered rates (req/s), increasing; empty: the search alone")
	f.Search = widget.NewCheck("search for the largest rate meeting every SLO", func(bool) { check() })
	f.Lo, f.Hi = entry("1", "lowest rate (req/s)"), entry("64", "highest rate (req/s)")
	f.Tolerance, f.MaxProbes = entry("0.1", "relative bracket width to stop at"), entry("12", "most probes")
	f.Requests, f.Warmups = entry("32", "measured requests per probe"), entry("1", "closed-loop warmups before each probe")
	f.MaxInFlight = entry(strconv.Itoa(capacity.DefaultMaxInFlight), "most requests in flight")
	f.Slack = entry(strconv.Itoa(capacity.DefaultScheduleSlackMs), "ms of p99 send delay before the client is behind schedule")
	f.Preset = widget.NewSelect(append([]string{presetNone}, capacity.SLOPresetNames()...), f.applyPreset)
	f.Preset.SetSelected(presetNone)
	f.TTFT, f.TPOT, f.E2E = entry("2000", "ms"), entry("200", "ms"), entry("", "ms (empty: none)")
	f.Percentile = widget.NewSelect([]string{"95", "99"}, func(string) { check() })
	f.Percentile.SetSelected(strconv.Itoa(capacity.DefaultSLOPercentile))
	f.Completion = entry("1", "fraction of a probe's requests that must complete")
	f.CachePrompt = widget.NewCheck("let llama-server reuse cached prompt prefixes (cache_prompt)", func(bool) { check() })
	f.Contamination = entry("0", "fraction of cold requests a probe may have answered from the cache")
	f.Timing = entry("", "flag client/server time per token differing by more than this fraction (empty: off)")
	f.Workload = widget.NewSelect([]string{workloadPrompts, workloadSynth, workloadPrefix, workloadSet, workloadMulti}, func(string) { check() })
	f.Workload.SetSelected(workloadPrompts)
	f.WSeed = entry("1", "seed of the drawn lengths")
	f.Input = entry("", "words: N, uniform MIN MAX, normal MEAN STD MIN MAX or file PATH")
	f.Output = entry("", "tokens (empty: the plan's tokens per request), same forms")
	f.Prefixes, f.Suffixes, f.PrefixWords = entry("", "shared prefixes"), entry("", "requests per prefix"), entry("", "words per prefix")
	f.File = entry("", "the JSONL prompt set or conversation file (full path)")
	f.Turns = entry("", "turns of a synthetic conversation, same forms")
	form := widget.NewForm(
		hinted("Arrival process", f.Process, "constant gaps, Poisson (exponential gaps), gamma (burstiness) or a ramp; latency runs from each scheduled send (no llama.cpp flag)"),
		hinted("Arrival seed", f.Seed, "the schedule is part of the plan: the same seed gives the same send times (no llama.cpp flag)"),
		hinted("Burstiness (gamma)", f.Burstiness, "the gamma gaps' shape; 1 is Poisson (no llama.cpp flag)"),
		hinted("Ramp from (req/s)", f.RampFrom, "a ramp climbs from this rate to the probe's (no llama.cpp flag)"),
		hinted("Offered rates (req/s)", f.Rates, "the sweep: one probe per rate (no llama.cpp flag)"),
		hinted("Max-rate search", f.Search, "after the sweep, bracket then bisect for the largest rate meeting every SLO (no llama.cpp flag)"),
		hinted("Search: lowest rate", f.Lo, "req/s (no llama.cpp flag)"),
		hinted("Search: highest rate", f.Hi, "req/s (no llama.cpp flag)"),
		hinted("Search: tolerance", f.Tolerance, "stop when the bracket is within this fraction of the rate found (no llama.cpp flag)"),
		hinted("Search: most probes", f.MaxProbes, "every probe is a recorded cell (no llama.cpp flag)"),
		hinted("Requests per probe", f.Requests, "measured requests of each probe (no llama.cpp flag)"),
		hinted("Warmups per probe", f.Warmups, "closed-loop requests sent first and discarded (no llama.cpp flag)"),
		hinted("Most in flight", f.MaxInFlight, "a request due while this many are open waits, and its send delay records it (no llama.cpp flag)"),
		hinted("Schedule slack (ms)", f.Slack, "a probe whose p99 send delay is above this is flagged client_behind_schedule (no llama.cpp flag)"),
		hinted("SLO preset", f.Preset, "named SLOs from public sources (MLPerf, GuideLLM); choosing one fills the figures below (no llama.cpp flag)"),
		hinted("SLO: TTFT (ms)", f.TTFT, "time to first token at the percentile below, from the scheduled send (no llama.cpp flag)"),
		hinted("SLO: TPOT (ms)", f.TPOT, "time per output token after the first (no llama.cpp flag)"),
		hinted("SLO: E2E (ms)", f.E2E, "request time from the scheduled send (optional) (no llama.cpp flag)"),
		hinted("SLO: percentile", f.Percentile, "the probe's percentile judged against the SLO (no llama.cpp flag)"),
		hinted("SLO: completion rate", f.Completion, "the share of requests that must complete (no llama.cpp flag)"),
		hinted("Prompt cache", f.CachePrompt, "an explicit arm: off, a request the server answers from its cache is contaminated (llama-server's cache_prompt)"),
		hinted("Contamination max", f.Contamination, "above this share of contaminated requests the probe fails prompt_cache_contaminated (no llama.cpp flag)"),
		hinted("Timing tolerance", f.Timing, "flags client/server timing disagreement (client_server_timing_disagreement) (no llama.cpp flag)"),
		hinted("Workload", f.Workload, "what the requests send: the prompt plan, synthetic lengths, shared prefixes, a JSONL prompt set or multi-turn conversations (no llama.cpp flag)"),
		hinted("Workload seed", f.WSeed, "lengths are drawn per request from this seed (no llama.cpp flag)"),
		hinted("Input words", f.Input, "a synthetic prompt's (or a shared-prefix suffix's) length in words (no llama.cpp flag)"),
		hinted("Output tokens", f.Output, "each request's n_predict (no llama.cpp flag)"),
		hinted("Shared prefixes", f.Prefixes, "shared_prefix: how many prefixes (no llama.cpp flag)"),
		hinted("Requests per prefix", f.Suffixes, "shared_prefix: consecutive requests sharing one prefix (no llama.cpp flag)"),
		hinted("Prefix words", f.PrefixWords, "shared_prefix: each prefix's length (no llama.cpp flag)"),
		hinted("Prompt set or conversations file", f.File, "prompt_set: one {\"prompt\": …} a line; multi_turn: conversations (sparkbench serving convert-sharegpt makes one) (no llama.cpp flag)"),
		hinted("Turns", f.Turns, "multi_turn without a file: turns per synthetic conversation (no llama.cpp flag)"),
	)
	f.fields = container.NewVBox(form)
	f.fields.Hide()
	f.Object = container.NewVBox(f.Enable, f.fields)
	return f
}

// applyPreset fills the SLO figures from the chosen preset.
func (f *servingForm) applyPreset(name string) {
	if p, ok := capacity.FindSLOPreset(name); ok && !f.loading {
		f.loading = true
		f.TTFT.SetText(ftext(p.TTFTMs))
		f.TPOT.SetText(ftext(p.TPOTMs))
		f.E2E.SetText("")
		if p.E2EMs > 0 {
			f.E2E.SetText(ftext(p.E2EMs))
		}
		f.Percentile.SetSelected(strconv.Itoa(p.Percentile))
		f.loading = false
	}
	if !f.loading {
		f.changed()
	}
}

func ftext(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// serving is the section's serving block (nil when off) and what does not parse.
func (f *servingForm) serving() (*capacity.Serving, []string) {
	if !f.Enable.Checked {
		return nil, nil
	}
	var errs []string
	num := func(field, s string) float64 {
		s = strings.TrimSpace(s)
		if s == "" {
			return 0
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			errs = append(errs, fmt.Sprintf("serving %s: %q is not a number", field, s))
		}
		return x
	}
	whole := func(field, s string) int { return int(num(field, s)) }
	s := &capacity.Serving{Arrival: capacity.Arrival{Process: f.Process.Selected, Seed: int64(num("arrival seed", f.Seed.Text)),
		Burstiness: num("burstiness", f.Burstiness.Text), RampFrom: num("ramp from", f.RampFrom.Text)},
		Requests: whole("requests per probe", f.Requests.Text), Warmups: whole("warmups per probe", f.Warmups.Text),
		MaxInFlight: whole("most in flight", f.MaxInFlight.Text), ScheduleSlackMs: num("schedule slack", f.Slack.Text),
		CachePrompt: f.CachePrompt.Checked, ContaminationMax: num("contamination max", f.Contamination.Text),
		TimingTolerance: num("timing tolerance", f.Timing.Text)}
	for _, r := range strings.Split(f.Rates.Text, ",") {
		if r = strings.TrimSpace(r); r != "" {
			s.Rates = append(s.Rates, num("offered rates", r))
		}
	}
	if f.Search.Checked {
		s.Search = &capacity.RateSearch{Lo: num("search lowest rate", f.Lo.Text), Hi: num("search highest rate", f.Hi.Text),
			Tolerance: num("search tolerance", f.Tolerance.Text), MaxProbes: whole("search most probes", f.MaxProbes.Text)}
	}
	pct, _ := strconv.Atoi(f.Percentile.Selected)
	s.SLO = capacity.SLO{TTFTMs: num("SLO TTFT", f.TTFT.Text), TPOTMs: num("SLO TPOT", f.TPOT.Text), E2EMs: num("SLO E2E", f.E2E.Text),
		Percentile: pct, CompletionRateMin: num("SLO completion rate", f.Completion.Text)}
	if f.Preset.Selected != presetNone {
		s.SLO.Preset = f.Preset.Selected
	}
	w, werrs := f.workload()
	s.Workload, errs = w, append(errs, werrs...)
	return s, errs
}

// workload is the section's workload (nil: the prompt plan's prompts).
func (f *servingForm) workload() (*capacity.Workload, []string) {
	kind := f.Workload.Selected
	if kind == workloadPrompts || kind == "" {
		return nil, nil
	}
	var errs []string
	length := func(field, s string) *capacity.LengthDist {
		d, err := parseLength(s, f.baseFile)
		if err != nil {
			errs = append(errs, fmt.Sprintf("serving %s: %v", field, err))
		}
		return d
	}
	count := func(field, s string) int {
		s = strings.TrimSpace(s)
		if s == "" {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, fmt.Sprintf("serving %s: %q is not a whole number", field, s))
		}
		return n
	}
	seed, err := strconv.ParseInt(strings.TrimSpace(f.WSeed.Text), 10, 64)
	if err != nil && strings.TrimSpace(f.WSeed.Text) != "" {
		errs = append(errs, fmt.Sprintf("serving workload seed: %q is not a whole number", f.WSeed.Text))
	}
	w := &capacity.Workload{Kind: kind, Seed: seed, InputWords: length("input words", f.Input.Text), OutputTokens: length("output tokens", f.Output.Text),
		Prefixes: count("shared prefixes", f.Prefixes.Text), Suffixes: count("requests per prefix", f.Suffixes.Text),
		PrefixWords: count("prefix words", f.PrefixWords.Text), Turns: length("turns", f.Turns.Text)}
	if p := strings.TrimSpace(f.File.Text); p != "" {
		ref := f.baseFile(p)
		switch kind {
		case workloadSet:
			w.PromptSet = ref
		case workloadMulti:
			w.Conversations = ref
		default:
			errs = append(errs, fmt.Sprintf("serving workload %s takes no prompt set or conversation file (%s)", kind, p))
		}
	}
	return w, errs
}

// baseFile is a file reference to path, with the opened plan's SHA-256 when it names the same
// path (else the SHA-256 is taken at Register).
func (f *servingForm) baseFile(path string) *capacity.FileRef {
	for _, r := range servingFiles(f.base) {
		if r.Path == path {
			return &capacity.FileRef{Path: path, SHA256: r.SHA256}
		}
	}
	return &capacity.FileRef{Path: path}
}

// servingFiles are every file a serving block names (prompt set, conversations, length files).
func servingFiles(s *capacity.Serving) []*capacity.FileRef {
	if s == nil || s.Workload == nil {
		return nil
	}
	w := s.Workload
	var out []*capacity.FileRef
	for _, r := range []*capacity.FileRef{w.PromptSet, w.Conversations} {
		if r != nil {
			out = append(out, r)
		}
	}
	for _, d := range []*capacity.LengthDist{w.InputWords, w.OutputTokens, w.Turns} {
		if d != nil && d.File != nil {
			out = append(out, d.File)
		}
	}
	return out
}

// parseLength reads a length: "" (none), N (fixed), "uniform MIN MAX", "normal MEAN STD MIN
// MAX" or "file PATH".
func parseLength(s string, file func(string) *capacity.FileRef) (*capacity.LengthDist, error) {
	fs := strings.Fields(s)
	if len(fs) == 0 {
		return nil, nil
	}
	ints := func(xs []string) ([]int, error) {
		out := make([]int, len(xs))
		for i, x := range xs {
			n, err := strconv.Atoi(x)
			if err != nil {
				return nil, fmt.Errorf("%q is not a whole number", x)
			}
			out[i] = n
		}
		return out, nil
	}
	bad := fmt.Errorf("%q: write N, uniform MIN MAX, normal MEAN STD MIN MAX or file PATH", s)
	switch {
	case len(fs) == 1:
		n, err := ints(fs)
		if err != nil {
			return nil, bad
		}
		return &capacity.LengthDist{Dist: capacity.DistFixed, Value: n[0]}, nil
	case fs[0] == capacity.DistUniform && len(fs) == 3:
		n, err := ints(fs[1:])
		if err != nil {
			return nil, err
		}
		return &capacity.LengthDist{Dist: capacity.DistUniform, Min: n[0], Max: n[1]}, nil
	case fs[0] == capacity.DistNormal && len(fs) == 5:
		mean, err1 := strconv.ParseFloat(fs[1], 64)
		std, err2 := strconv.ParseFloat(fs[2], 64)
		n, err3 := ints(fs[3:])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, bad
		}
		return &capacity.LengthDist{Dist: capacity.DistNormal, Mean: mean, Std: std, Min: n[0], Max: n[1]}, nil
	case fs[0] == capacity.DistFile && len(fs) >= 2:
		return &capacity.LengthDist{Dist: capacity.DistFile, File: file(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), capacity.DistFile)))}, nil
	}
	return nil, bad
}

// lengthText writes a length as parseLength reads it.
func lengthText(d *capacity.LengthDist) string {
	if d == nil {
		return ""
	}
	switch d.Dist {
	case capacity.DistFixed:
		return strconv.Itoa(d.Value)
	case capacity.DistUniform:
		return fmt.Sprintf("uniform %d %d", d.Min, d.Max)
	case capacity.DistNormal:
		return fmt.Sprintf("normal %s %s %d %d", ftext(d.Mean), ftext(d.Std), d.Min, d.Max)
	case capacity.DistFile:
		if d.File != nil {
			return "file " + d.File.Path
		}
	}
	return d.Dist
}

// load fills the section from a plan's serving block (nil: off); its file paths are already
// absolute (LoadPlan).
func (f *servingForm) load(s *capacity.Serving) {
	f.loading = true
	defer func() { f.loading = false }()
	f.base = s
	f.Enable.SetChecked(s != nil)
	setVisible(f.fields, s != nil)
	if s == nil {
		return
	}
	a := s.Arrival
	f.Process.SetSelected(a.Process)
	f.Seed.SetText(strconv.FormatInt(a.Seed, 10))
	f.Burstiness.SetText(optText(a.Burstiness))
	f.RampFrom.SetText(optText(a.RampFrom))
	rates := make([]string, len(s.Rates))
	for i, r := range s.Rates {
		rates[i] = ftext(r)
	}
	f.Rates.SetText(strings.Join(rates, ","))
	f.Search.SetChecked(s.Search != nil)
	if q := s.Search; q != nil {
		f.Lo.SetText(ftext(q.Lo))
		f.Hi.SetText(ftext(q.Hi))
		f.Tolerance.SetText(ftext(q.Tolerance))
		f.MaxProbes.SetText(strconv.Itoa(q.MaxProbes))
	}
	f.Requests.SetText(strconv.Itoa(s.Requests))
	f.Warmups.SetText(strconv.Itoa(s.Warmups))
	f.MaxInFlight.SetText(strconv.Itoa(s.MaxInFlight))
	f.Slack.SetText(ftext(s.ScheduleSlackMs))
	if s.SLO.Preset != "" {
		f.Preset.SetSelected(s.SLO.Preset)
	} else {
		f.Preset.SetSelected(presetNone)
	}
	f.TTFT.SetText(ftext(s.SLO.TTFTMs))
	f.TPOT.SetText(ftext(s.SLO.TPOTMs))
	f.E2E.SetText(optText(s.SLO.E2EMs))
	f.Percentile.SetSelected(strconv.Itoa(s.SLO.Percentile))
	f.Completion.SetText(ftext(s.SLO.CompletionRateMin))
	f.CachePrompt.SetChecked(s.CachePrompt)
	f.Contamination.SetText(ftext(s.ContaminationMax))
	f.Timing.SetText(optText(s.TimingTolerance))
	w := s.Workload
	if w == nil {
		f.Workload.SetSelected(workloadPrompts)
		w = &capacity.Workload{}
	} else {
		f.Workload.SetSelected(w.Kind)
	}
	f.WSeed.SetText(strconv.FormatInt(w.Seed, 10))
	f.Input.SetText(lengthText(w.InputWords))
	f.Output.SetText(lengthText(w.OutputTokens))
	f.Turns.SetText(lengthText(w.Turns))
	f.Prefixes.SetText(countText(w.Prefixes))
	f.Suffixes.SetText(countText(w.Suffixes))
	f.PrefixWords.SetText(countText(w.PrefixWords))
	switch {
	case w.PromptSet != nil:
		f.File.SetText(w.PromptSet.Path)
	case w.Conversations != nil:
		f.File.SetText(w.Conversations.Path)
	default:
		f.File.SetText("")
	}
}

func optText(x float64) string {
	if x == 0 {
		return ""
	}
	return ftext(x)
}

func countText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
