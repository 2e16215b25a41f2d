package capacity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/promptset"
)

// Workload kinds of a serving plan (docs/serving.md).
const (
	WorkloadSynthetic    = "synthetic"     // generated prompts of input_words words
	WorkloadSharedPrefix = "shared_prefix" // prefixes x suffixes: each prefix shared by suffixes consecutive requests
	WorkloadPromptSet    = "prompt_set"    // a JSONL prompt set (one {"prompt": …} a line), taken in turn
	WorkloadMultiTurn    = "multi_turn"    // conversations: each turn sent with the conversation so far
)

// Length distributions (docs/serving.md).
const (
	DistFixed   = "fixed"   // value
	DistUniform = "uniform" // integers in [min, max]
	DistNormal  = "normal"  // round(mean + std·N(0,1)), clamped to [min, max]
	DistFile    = "file"    // one of a file's whitespace-separated integers, drawn uniformly
)

// Workload is the prompts and output lengths of a serving plan's open-loop requests. Omitted,
// every request is the prompt plan's (numbered prefix, fixed body) asking for n_predict tokens.
// Lengths are drawn per request from its number in the server lifetime (seeded), so a probe's
// requests are the same on every run.
type Workload struct {
	Kind string `json:"kind"`
	Seed int64  `json:"seed"`
	// InputWords is a synthetic prompt's length in words, or a shared-prefix suffix's.
	InputWords *LengthDist `json:"input_words,omitempty"`
	// OutputTokens is each request's n_predict (omitted: the plan's n_predict; a prompt set's
	// own n_predict wins).
	OutputTokens *LengthDist `json:"output_tokens,omitempty"`
	// Prefixes x Suffixes (shared_prefix): request n gets prefix (n / suffixes) mod prefixes of
	// PrefixWords words, then its own numbered suffix.
	Prefixes    int `json:"prefixes,omitempty"`
	Suffixes    int `json:"suffixes,omitempty"`
	PrefixWords int `json:"prefix_words,omitempty"`
	// PromptSet is the JSONL prompt set (prompt_set).
	PromptSet *FileRef `json:"prompt_set,omitempty"`
	// Turns is a synthetic conversation's number of turns (multi_turn without a file).
	Turns *LengthDist `json:"turns,omitempty"`
	// Conversations is the JSONL conversation file (multi_turn), taken in turn.
	Conversations *FileRef `json:"conversations,omitempty"`
}

// LengthDist is a distribution of lengths (words or tokens), bounded.
type LengthDist struct {
	Dist  string   `json:"dist"`
	Value int      `json:"value,omitempty"`
	Min   int      `json:"min,omitempty"`
	Max   int      `json:"max,omitempty"`
	Mean  float64  `json:"mean,omitempty"`
	Std   float64  `json:"std,omitempty"`
	File  *FileRef `json:"file,omitempty"`
}

// maxLength bounds any drawn length (words or tokens).
const maxLength = 1 << 20

// checkWorkload validates the serving block's workload; with files to open (v.opts.Hash),
// it also reads the prompt set and length files, refusing a malformed line as file:line.
func (v *validator) checkWorkload(w *Workload) {
	if w == nil {
		return
	}
	at := "serving.workload"
	before := len(study.Errors(v.problems))
	if w.Seed < 0 {
		v.errf(at+".seed", "%d: want a non-negative seed", w.Seed)
	}
	need := func(field string, ok bool, msg string) {
		if !ok {
			v.errf(at+"."+field, "%s", msg)
		}
	}
	switch w.Kind {
	case WorkloadSynthetic:
		need("input_words", w.InputWords != nil, "a synthetic workload needs its prompt lengths (input_words)")
	case WorkloadSharedPrefix:
		need("prefixes", w.Prefixes >= 1 && w.Prefixes <= 10000, fmt.Sprintf("%d: want 1 to 10000 prefixes", w.Prefixes))
		need("suffixes", w.Suffixes >= 1 && w.Suffixes <= 10000, fmt.Sprintf("%d: want 1 to 10000 suffixes per prefix", w.Suffixes))
		need("prefix_words", w.PrefixWords >= 1 && w.PrefixWords <= maxLength, fmt.Sprintf("%d: want a prefix of 1 to %d words", w.PrefixWords, maxLength))
		need("input_words", w.InputWords != nil, "a shared-prefix workload needs its suffix lengths (input_words)")
	case WorkloadPromptSet:
		need("prompt_set", w.PromptSet != nil, "a prompt_set workload needs its JSONL file (prompt_set: {path, sha256})")
		need("input_words", w.InputWords == nil, "a prompt set's prompts are its own; remove input_words")
	case WorkloadMultiTurn:
		v.checkMultiTurn(w)
	default:
		v.errf(at+".kind", "%q: want synthetic, shared_prefix, prompt_set or multi_turn", w.Kind)
	}
	if w.Kind != WorkloadMultiTurn && (w.Turns != nil || w.Conversations != nil) {
		v.errf(at, "turns and conversations are for the multi_turn kind")
	}
	if w.Kind != WorkloadSharedPrefix && (w.Prefixes != 0 || w.Suffixes != 0 || w.PrefixWords != 0) {
		v.errf(at, "prefixes, suffixes and prefix_words are for the shared_prefix kind")
	}
	if w.Kind != WorkloadPromptSet && w.PromptSet != nil {
		v.errf(at+".prompt_set", "only for the prompt_set kind")
	}
	v.checkDist(at+".input_words", w.InputWords)
	v.checkDist(at+".output_tokens", w.OutputTokens)
	if w.PromptSet != nil {
		v.checkFile(at+".prompt_set", *w.PromptSet, "the prompt set")
	}
	if v.opts.Hash != nil && len(study.Errors(v.problems)) == before {
		wd, err := LoadWorkloadFiles(w, v.opts.PlanDir)
		if err != nil {
			v.errf(at, "%v", err)
		} else {
			v.checkWorkloadContext(wd)
		}
	}
}

func (v *validator) checkDist(at string, d *LengthDist) {
	if d == nil {
		return
	}
	in := func(x int) bool { return x >= 1 && x <= maxLength }
	switch d.Dist {
	case DistFixed:
		if !in(d.Value) || d.Min != 0 || d.Max != 0 || d.Mean != 0 || d.Std != 0 || d.File != nil {
			v.errf(at, "fixed: want only value, 1 to %d", maxLength)
		}
	case DistUniform:
		if !in(d.Min) || !in(d.Max) || d.Max < d.Min || d.Value != 0 || d.Mean != 0 || d.Std != 0 || d.File != nil {
			v.errf(at, "uniform: want only min <= max, in 1 to %d", maxLength)
		}
	case DistNormal:
		if !in(d.Min) || !in(d.Max) || d.Max < d.Min || !(d.Mean >= float64(d.Min) && d.Mean <= float64(d.Max)) || !(d.Std > 0 && d.Std < maxLength) || d.Value != 0 || d.File != nil {
			v.errf(at, "normal: want mean, std > 0 and the bounds min <= mean <= max (1 to %d)", maxLength)
		}
	case DistFile:
		if d.File == nil || d.Value != 0 || d.Min != 0 || d.Max != 0 || d.Mean != 0 || d.Std != 0 {
			v.errf(at, "file: want only file {path, sha256}, a file of whitespace-separated lengths")
		} else {
			v.checkFile(at+".file", *d.File, "the length file")
		}
	default:
		v.errf(at+".dist", "%q: want fixed, uniform, normal or file", d.Dist)
	}
}

// draw is a length from d for request n of the stream tag; lengths are the file's when d is
// DistFile. The same seed, tag and n give the same length.
func (d *LengthDist) draw(src unitSource, lengths []int) int {
	switch d.Dist {
	case DistFixed:
		return d.Value
	case DistUniform:
		return d.Min + int(src.r.Uint64N(uint64(d.Max-d.Min+1)))
	case DistNormal:
		x := math.Round(d.Mean + d.Std*src.normal())
		return int(min(max(x, float64(d.Min)), float64(d.Max)))
	case DistFile:
		return lengths[src.r.Uint64N(uint64(len(lengths)))]
	}
	return 0
}

// ParseLengths reads a length file: whitespace-separated integers, each 1 to 1,048,576; a bad
// one is refused as name:line.
func ParseLengths(name string, data []byte) ([]int, error) {
	var out []int
	for i, line := range strings.Split(string(data), "\n") {
		for _, f := range strings.Fields(line) {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > maxLength {
				return nil, fmt.Errorf("%s:%d: %q: want a length, 1 to %d", name, i+1, f, maxLength)
			}
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no lengths", name)
	}
	return out, nil
}

// stream is the random source of request n's draws of one kind (tag): independent of the
// order requests are built in.
func (w *Workload) stream(tag uint64, n int) unitSource {
	return unitSource{r: rand.New(rand.NewPCG(uint64(w.Seed)^tag, uint64(n)))}
}

// vocabulary is the synthetic prompts' words: common English, each one token in most
// tokenizers (the counts recorded are the server's own, from /tokenize).
var vocabulary = strings.Fields(`the of and to in is was for on that with as by at from his
her it an were are which this be or has had not but also their first one new two after
who they its she all been more other time over can when into only some most would may
about year years such between under during before three state city made world people
game team work part since back long high because music water light river house road
school book story night power land field family name`)

// words is n words drawn for request seq of the stream tag.
func (w *Workload) words(tag uint64, seq, n int) string {
	return wordsFrom(w.stream(tag, seq), n)
}

// WorkloadData is a workload with its files read.
type WorkloadData struct {
	W          *Workload
	Items      []promptset.PromptItem // the prompt set's (prompt_set)
	Convs      []promptset.Conversation
	InLengths  []int // input_words' length file (dist file)
	OutLengths []int // output_tokens' length file (dist file)
}

// LoadWorkloadFiles reads a workload's prompt set and length files (paths relative to
// planDir), checking each against its SHA-256; a malformed line is refused as file:line.
func LoadWorkloadFiles(w *Workload, planDir string) (*WorkloadData, error) {
	d := &WorkloadData{W: w}
	if w.PromptSet != nil {
		items, _, err := promptset.LoadPromptSet(study.ResolvePath(planDir, w.PromptSet.Path), w.PromptSet.SHA256)
		if err != nil {
			return nil, err
		}
		d.Items = items
	}
	if w.Conversations != nil {
		cs, _, err := promptset.LoadConversations(study.ResolvePath(planDir, w.Conversations.Path), w.Conversations.SHA256)
		if err != nil {
			return nil, err
		}
		d.Convs = cs
	}
	var err error
	if d.InLengths, err = loadLengths(w.InputWords, planDir); err != nil {
		return nil, err
	}
	if d.OutLengths, err = loadLengths(w.OutputTokens, planDir); err != nil {
		return nil, err
	}
	return d, nil
}

func loadLengths(d *LengthDist, planDir string) ([]int, error) {
	if d == nil || d.Dist != DistFile || d.File == nil {
		return nil, nil
	}
	path := study.ResolvePath(planDir, d.File.Path)
	data, _, err := promptset.ReadPinned(path, d.File.SHA256, 64<<20, "length file")
	if err != nil {
		return nil, err
	}
	return ParseLengths(path, data)
}

// Random streams of a workload's draws.
const (
	tagInLen uint64 = iota + 1
	tagOutLen
	tagWords
	tagPrefix
	tagSuffix
)

// WorkRequest is one open-loop request of a workload.
type WorkRequest struct {
	Prompt   string
	NPredict int
	// Source names where the prompt comes from in messages: the prompt set's file:line, or the
	// request's number and kind.
	Source string
	// Conversation, Turn (1-based) and Turns place a multi_turn request in its conversation
	// (Turn 0: not a conversation's); Lead is the conversation's header, the only text a first
	// turn shares with other conversations.
	Conversation, Turn, Turns int
	Lead                      string
}

// Request is request n of the server lifetime (0-based over every probe, warmups included):
// its prompt and how many tokens it asks for (nPredict when the workload sets no length).
func (d *WorkloadData) Request(n, nPredict int) WorkRequest {
	w := d.W
	if w.Kind == WorkloadMultiTurn {
		return d.Conversation(n, nPredict)[0]
	}
	r := WorkRequest{NPredict: nPredict}
	if w.OutputTokens != nil {
		r.NPredict = w.OutputTokens.draw(w.stream(tagOutLen, n), d.OutLengths)
	}
	switch w.Kind {
	case WorkloadPromptSet:
		it := d.Items[n%len(d.Items)]
		r.Prompt, r.Source = it.Prompt, fmt.Sprintf("%s:%d", w.PromptSet.Path, it.Line)
		if it.NPredict > 0 {
			r.NPredict = it.NPredict
		}
	case WorkloadSharedPrefix:
		p := (n / w.Suffixes) % w.Prefixes
		k := w.InputWords.draw(w.stream(tagInLen, n), d.InLengths)
		r.Prompt = "Shared context " + strconv.Itoa(p) + ": " + w.words(tagPrefix, p, w.PrefixWords) +
			"\nRequest " + strconv.Itoa(n) + ". " + w.words(tagSuffix, n, k)
		r.Source = fmt.Sprintf("request %d (prefix %d, %d suffix words)", n, p, k)
	default:
		k := w.InputWords.draw(w.stream(tagInLen, n), d.InLengths)
		r.Prompt = "Request " + strconv.Itoa(n) + ". " + w.words(tagWords, n, k)
		r.Source = fmt.Sprintf("request %d (%d words)", n, k)
	}
	return r
}

// Describe is the workload in words, for reports.
func (w *Workload) Describe() string {
	var b strings.Builder
	switch w.Kind {
	case WorkloadSharedPrefix:
		fmt.Fprintf(&b, "shared prefix: %d prefixes of %d words, each shared by %d consecutive requests, then %s suffix words", w.Prefixes, w.PrefixWords, w.Suffixes, w.InputWords.Describe())
	case WorkloadPromptSet:
		fmt.Fprintf(&b, "the JSONL prompt set %s (SHA-256 %.12s…), its lines in turn", w.PromptSet.Path, w.PromptSet.SHA256)
	case WorkloadMultiTurn:
		b.WriteString(w.describeMultiTurn())
	default:
		fmt.Fprintf(&b, "synthetic prompts of %s words", w.InputWords.Describe())
	}
	if w.OutputTokens != nil {
		fmt.Fprintf(&b, "; output tokens %s", w.OutputTokens.Describe())
	}
	fmt.Fprintf(&b, " (seed %d)", w.Seed)
	return b.String()
}

// Describe is the distribution in words.
func (d *LengthDist) Describe() string {
	switch d.Dist {
	case DistFixed:
		return strconv.Itoa(d.Value)
	case DistUniform:
		return fmt.Sprintf("uniform in [%d, %d]", d.Min, d.Max)
	case DistNormal:
		return fmt.Sprintf("normal %s ± %s in [%d, %d]", strconv.FormatFloat(d.Mean, 'g', -1, 64), strconv.FormatFloat(d.Std, 'g', -1, 64), d.Min, d.Max)
	case DistFile:
		return "drawn from " + d.File.Path
	}
	return d.Dist
}
