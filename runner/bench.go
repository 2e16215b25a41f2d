package runner

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// BenchConfig is a typed llama-bench leg: each list becomes one comma-separated flag (llama-bench
// runs the Cartesian product). A nil list leaves llama-bench's default; Extra is appended as
// given. It is a plain struct for plans written as JSON.
type BenchConfig struct {
	Models    []string `json:"models"`                 // -m, one flag per model (paths may not contain ',')
	Prompt    []int    `json:"n_prompt,omitempty"`     // -p (0 skips pp tests)
	Gen       []int    `json:"n_gen,omitempty"`        // -n (0 skips tg tests)
	PromptGen []PG     `json:"pg,omitempty"`           // -pg pp,tg (one flag each)
	Depths    []int    `json:"n_depth,omitempty"`      // -d
	Reps      int      `json:"repetitions,omitempty"`  // -r
	Batch     []int    `json:"n_batch,omitempty"`      // -b
	UBatch    []int    `json:"n_ubatch,omitempty"`     // -ub
	FlashAttn []string `json:"flash_attn,omitempty"`   // -fa on|off|auto
	TypeK     []string `json:"type_k,omitempty"`       // -ctk
	TypeV     []string `json:"type_v,omitempty"`       // -ctv
	Threads   []int    `json:"n_threads,omitempty"`    // -t
	GPULayers []int    `json:"n_gpu_layers,omitempty"` // -ngl
	Extra     []string `json:"extra,omitempty"`        // any other llama-bench arguments
}

// PG is one -pg test: a prompt of PP tokens then TG generated tokens, timed together.
type PG struct {
	PP int `json:"pp"`
	TG int `json:"tg"`
}

// Args is the llama-bench argument list (without the program, -o or --progress).
func (c BenchConfig) Args() []string {
	var a []string
	for _, m := range c.Models {
		a = append(a, "-m", m)
	}
	ints := func(flag string, v []int) {
		if len(v) == 0 {
			return
		}
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.Itoa(x)
		}
		a = append(a, flag, strings.Join(s, ","))
	}
	strs := func(flag string, v []string) {
		if len(v) > 0 {
			a = append(a, flag, strings.Join(v, ","))
		}
	}
	ints("-p", c.Prompt)
	ints("-n", c.Gen)
	for _, pg := range c.PromptGen {
		a = append(a, "-pg", strconv.Itoa(pg.PP)+","+strconv.Itoa(pg.TG))
	}
	ints("-d", c.Depths)
	if c.Reps > 0 {
		a = append(a, "-r", strconv.Itoa(c.Reps))
	}
	ints("-b", c.Batch)
	ints("-ub", c.UBatch)
	strs("-fa", c.FlashAttn)
	strs("-ctk", c.TypeK)
	strs("-ctv", c.TypeV)
	ints("-t", c.Threads)
	ints("-ngl", c.GPULayers)
	return append(a, c.Extra...)
}

// Validate refuses a config llama-bench would misread.
func (c BenchConfig) Validate() error {
	if len(c.Models) == 0 {
		return errors.New("no model")
	}
	for _, m := range c.Models {
		if m == "" {
			return errors.New("empty model path")
		}
		if strings.Contains(m, ",") {
			return fmt.Errorf("model path %q contains ',' which llama-bench splits on; rename or link the file", m)
		}
	}
	if c.Reps < 0 {
		return fmt.Errorf("repetitions %d < 0", c.Reps)
	}
	for _, l := range [][]int{c.Prompt, c.Gen, c.Depths, c.Batch, c.UBatch, c.Threads} {
		for _, v := range l {
			if v < 0 {
				return fmt.Errorf("negative value %d", v)
			}
		}
	}
	return ValidateBenchArgs(c.Args())
}

// Split says how a config is cut into legs: one process for everything, or one per depth
// and/or per model (a combined depth sweep can abort on a memory-edge model and lose every
// row; one leg per depth keeps the depths that fit).
type Split string

// The ways to split.
const (
	SplitNone       Split = ""            // one combined invocation
	SplitDepth      Split = "depth"       // one leg per depth
	SplitModel      Split = "model"       // one leg per model
	SplitModelDepth Split = "model_depth" // one leg per model and depth
)

// SplitLegs cuts c into leg configs; models outermost, then depths, in the given order.
func SplitLegs(c BenchConfig, s Split) ([]BenchConfig, error) {
	byModel := s == SplitModel || s == SplitModelDepth
	byDepth := s == SplitDepth || s == SplitModelDepth
	if s != SplitNone && !byModel && !byDepth {
		return nil, fmt.Errorf("unknown split %q (want \"\", depth, model or model_depth)", s)
	}
	models := [][]string{c.Models}
	if byModel {
		models = nil
		for _, m := range c.Models {
			models = append(models, []string{m})
		}
	}
	depths := [][]int{c.Depths}
	if byDepth && len(c.Depths) > 0 {
		depths = nil
		for _, d := range c.Depths {
			depths = append(depths, []int{d})
		}
	}
	var out []BenchConfig
	for _, m := range models {
		for _, d := range depths {
			leg := c
			leg.Models = append([]string(nil), m...)
			leg.Depths = append([]int(nil), d...)
			out = append(out, leg)
		}
	}
	return out, nil
}

// BenchArgError is a llama-bench argument list sparkbench refuses before running anything.
type BenchArgError struct{ Msg string }

func (e *BenchArgError) Error() string { return e.Msg }

// ValidateBenchArgs refuses arguments that would make the runner's reading wrong: a second
// output format on stderr (under a pty stderr and stdout merge, so every row would come twice)
// and an -o other than jsonl.
func ValidateBenchArgs(args []string) error {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-oe", "--output-err":
			return &BenchArgError{"-oe/--output-err is not allowed: under the pty stderr and stdout merge, so a second format would repeat every result; sparkbench keeps the verbatim output in the transcript"}
		case "-o", "--output":
			if i+1 >= len(args) {
				return &BenchArgError{args[i] + " needs a value"}
			}
			if args[i+1] != "jsonl" {
				return &BenchArgError{fmt.Sprintf("%s %s: sparkbench reads -o jsonl (it adds it itself); drop the flag", args[i], args[i+1])}
			}
			i++
		}
	}
	return nil
}

// RunnerArgs is args plus what the runner needs: -o jsonl when no -o was given, and
// --progress when progress is true and it is not there yet. --progress is opt-in: llama-bench
// prints its progress lines inside the timed region of every repetition, and through a pty
// (plus the runner waking up to read them) that cost 6–15% of pp t/s on the tiny model on a
// busy 2-core machine, so the runner counts tests from the result rows and the arguments instead.
func RunnerArgs(args []string, progress bool) []string {
	out := append([]string(nil), args...)
	hasO, hasP := false, false
	for _, a := range args {
		switch a {
		case "-o", "--output":
			hasO = true
		case "--progress":
			hasP = true
		}
	}
	if !hasO {
		out = append(out, "-o", "jsonl")
	}
	if !hasP && progress {
		out = append(out, "--progress")
	}
	return out
}

// llama-bench flags without a value.
var benchBoolFlags = map[string]bool{
	"-h": true, "--help": true, "--version": true, "--list-devices": true, "-v": true,
	"--verbose": true, "--progress": true, "--no-warmup": true, "--offline": true,
}

// llama-bench flags with a value that does not change the number of tests.
var benchValueFlags = map[string]bool{
	"-r": true, "--repetitions": true, "--prio": true, "--delay": true, "-o": true, "--output": true,
	"-oe": true, "--output-err": true, "--numa": true, "-fitt": true, "--fit-target": true,
	"-fitc": true, "--fit-ctx": true, "-hff": true, "--hf-file": true, "-hft": true, "--hf-token": true,
	// --rpc registers endpoints for every test ("a,b" is two servers, not two tests)
	"-rpc": true, "--rpc": true,
}

// instance parameters: every value multiplies the test count. int ones accept ranges.
var benchListFlags = map[string]struct {
	key   string
	rng   bool
	split bool // comma-separated list
}{
	"-m": {"m", false, true}, "--model": {"m", false, true},
	"-hf": {"m", false, false}, "-hfr": {"m", false, false}, "--hf-repo": {"m", false, false},
	"-p": {"p", true, true}, "--n-prompt": {"p", true, true},
	"-n": {"n", true, true}, "--n-gen": {"n", true, true},
	"-pg": {"pg", false, false},
	"-d":  {"d", true, true}, "--n-depth": {"d", true, true},
	"-b": {"b", true, true}, "--batch-size": {"b", true, true},
	"-ub": {"ub", true, true}, "--ubatch-size": {"ub", true, true},
	"-ctk": {"ctk", false, true}, "--cache-type-k": {"ctk", false, true},
	"-ctv": {"ctv", false, true}, "--cache-type-v": {"ctv", false, true},
	"-t": {"t", true, true}, "--threads": {"t", true, true},
	"-C": {"C", false, true}, "--cpu-mask": {"C", false, true},
	"--cpu-strict": {"cs", false, true}, "--poll": {"poll", true, true},
	"-ngl": {"ngl", true, true}, "--n-gpu-layers": {"ngl", true, true},
	"-ncmoe": {"ncmoe", true, true}, "--n-cpu-moe": {"ncmoe", true, true},
	"-sm": {"sm", false, true}, "--split-mode": {"sm", false, true},
	"-mg": {"mg", false, true}, "--main-gpu": {"mg", false, true},
	"-nkvo": {"nkvo", false, true}, "--no-kv-offload": {"nkvo", false, true},
	"-fa": {"fa", false, true}, "--flash-attn": {"fa", false, true},
	"-dev": {"dev", false, true}, "--device": {"dev", false, true},
	"-lm": {"lm", false, true}, "--load-mode": {"lm", false, true},
	"-lzm": {"lzm", false, true}, "--lazy-mode": {"lzm", false, true},
	"-mmp": {"mmp", false, true}, "--mmap": {"mmp", false, true},
	"-embd": {"embd", false, true}, "--embeddings": {"embd", false, true},
	"-ts": {"ts", false, true}, "--tensor-split": {"ts", false, true},
	"-ot": {"ot", false, false}, "--override-tensor": {"ot", false, false},
	"-nopo": {"nopo", false, true}, "--no-op-offload": {"nopo", false, true},
	"--no-host": {"nohost", false, true}, "--repack": {"repack", false, true},
}

var rangeRE = regexp.MustCompile(`^(\d+)-(\d+)(?:([+*])(\d+))?$`)

// ExpectedTests counts the tests (result rows) llama-bench will run for args, as its own
// Cartesian product does: instances (models x every list parameter) x (pp values > 0 + tg
// values > 0 + pg pairs). ok is false when an argument is not understood; llama-bench's
// --progress total, when present, is the authority anyway.
func ExpectedTests(args []string) (n int, ok bool) {
	lists := map[string][]int{} // key -> values (only p and n need the values)
	counts := map[string]int{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case benchBoolFlags[a]:
			if a == "-h" || a == "--help" || a == "--version" || a == "--list-devices" {
				return 0, true
			}
			continue
		case benchValueFlags[a]:
			i++
			continue
		}
		lf, known := benchListFlags[a]
		if !known || i+1 >= len(args) {
			return 0, false
		}
		i++
		v := args[i]
		items := []string{v}
		if lf.split {
			items = strings.Split(v, ",")
		}
		for _, it := range items {
			if lf.key == "p" || lf.key == "n" {
				vals, err := expandRange(it)
				if err != nil {
					return 0, false
				}
				lists[lf.key] = append(lists[lf.key], vals...)
				continue
			}
			c := 1
			if lf.rng {
				vals, err := expandRange(it)
				if err != nil {
					return 0, false
				}
				c = len(vals)
			}
			counts[lf.key] += c
		}
	}
	if _, set := lists["p"]; !set {
		lists["p"] = []int{512}
	}
	if _, set := lists["n"]; !set {
		lists["n"] = []int{128}
	}
	per := counts["pg"]
	for _, k := range []string{"p", "n"} {
		for _, v := range lists[k] {
			if v > 0 {
				per++
			}
		}
	}
	inst := 1
	for k, c := range counts {
		if k == "pg" || c == 0 {
			continue
		}
		inst *= c
	}
	return inst * per, true
}

// expandRange reads "512", "64-256" (step 1), "64-512+64" or "64-512*2" as llama-bench does.
func expandRange(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if m := rangeRE.FindStringSubmatch(s); m != nil {
		first, _ := strconv.Atoi(m[1])
		last, _ := strconv.Atoi(m[2])
		step, mult := 1, false
		if m[3] != "" {
			step, _ = strconv.Atoi(m[4])
			mult = m[3] == "*"
		}
		if (mult && step < 2) || (!mult && step < 1) {
			return nil, fmt.Errorf("bad range %q", s)
		}
		var out []int
		for v := first; v <= last; {
			out = append(out, v)
			if len(out) > 100000 {
				return nil, fmt.Errorf("range %q too long", s)
			}
			if mult {
				if v == 0 {
					break
				}
				v *= step
			} else {
				v += step
			}
		}
		return out, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return nil, err
	}
	return []int{v}, nil
}
