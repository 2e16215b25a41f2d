package quantfmt

import (
	"regexp"
	"strconv"
	"strings"
)

// Plan is llama-perplexity's plan line: "perplexity: calculating perplexity over 4 chunks,
// n_ctx=128, batch_size=2048, n_seq=16", or with --kl-divergence "kl_divergence: computing
// over 8 chunks, n_ctx=128, batch_size=2048, n_seq=16". Chunks is what the corpus (or the
// base file) gives, at most --chunks; with --kl-divergence n_ctx is the base file's.
type Plan struct {
	KLD    bool `json:"kld,omitempty"` // the kl_divergence line
	Chunks int  `json:"chunks"`
	NCtx   int  `json:"n_ctx"`
	Batch  int  `json:"batch_size"`
	NSeq   int  `json:"n_seq"`
	Line   int  `json:"line"`
}

// Chunk is the perplexity after a chunk, cumulative over the chunks so far: "[3]246.9801,"
// (the default output) or, with --ppl-output-type 1, a line "       0  246.9778  5.509298
// 0.020789" whose last two figures are the mean negative log-likelihood and its uncertainty
// (NLL). The first column of that line is the token offset of the batch, not of the chunk, so
// chunks are numbered by their order.
type Chunk struct {
	Index int     `json:"index"` // 1-based
	PPL   Figure  `json:"ppl"`
	NLL   *Figure `json:"nll,omitempty"` // --ppl-output-type 1 only
}

// TooFewTokensError is a corpus too short for the context and chunk count. The tool itself
// refuses a corpus under two contexts ("you need at least 256 tokens to evaluate perplexity
// with a context of 128" and "the data file you provided tokenizes to only 140 tokens",
// exiting 0); with --chunks K it silently uses the chunks there are, which a driver turns into
// this error (Chunks, ChunksAvailable; Have then unknown).
type TooFewTokensError struct {
	Need            int `json:"need"`             // tokens needed
	Have            int `json:"have"`             // tokens the corpus gives; -1 when the tool did not say
	Ctx             int `json:"ctx"`              // the context (-c)
	Chunks          int `json:"chunks,omitempty"` // --chunks asked (0: none asked)
	ChunksAvailable int `json:"chunks_available"` // chunks the corpus gives; -1 when unknown
	Line            int `json:"line,omitempty"`   // the tool's line; 0 when a driver derived it
}

func (e *TooFewTokensError) Error() string {
	var b strings.Builder
	if e.Chunks > 0 && e.ChunksAvailable >= 0 {
		b.WriteString("the corpus gives only " + itoa(e.ChunksAvailable) + " chunks of " + itoa(e.Ctx) +
			" tokens (fewer than " + itoa((e.ChunksAvailable+1)*e.Ctx) + " tokens); --chunks " + itoa(e.Chunks) +
			" with -c " + itoa(e.Ctx) + " needs " + itoa(e.Need) + " tokens")
	} else {
		have := "fewer"
		if e.Have >= 0 {
			have = "only " + itoa(e.Have)
		}
		b.WriteString("the corpus tokenizes to " + have + " tokens; -c " + itoa(e.Ctx) + " needs at least " +
			itoa(e.Need) + " (llama-perplexity scores two contexts at the least)")
	}
	b.WriteString(": use a longer corpus, a smaller -c")
	if e.Chunks > 0 {
		b.WriteString(" or fewer --chunks")
	}
	return b.String()
}

func itoa(v int) string { return strconv.Itoa(v) }

// PerplexityOutput is everything a llama-perplexity run printed that the parser reads.
type PerplexityOutput struct {
	Plan           *Plan              `json:"plan,omitempty"`
	SavingLogitsTo string             `json:"saving_logits_to,omitempty"` // "perplexity: saving all logits to FILE"
	TokenizeMs     *Figure            `json:"tokenize_ms,omitempty"`      // "tokenization took 67.855 ms"
	SecondsPerPass *Figure            `json:"seconds_per_pass,omitempty"` // "0.87 seconds per pass - ETA …"
	Chunks         []Chunk            `json:"chunks"`                     // perplexity mode
	DroppedChunks  int                `json:"dropped_chunks,omitempty"`   // beyond MaxChunks, counted only
	Final          *Figure            `json:"final,omitempty"`            // "Final estimate: PPL = X +/- Y"
	KLDChunks      []KLDChunk         `json:"kld_chunks,omitempty"`       // --kl-divergence table rows
	Stats          *KLDStats          `json:"stats,omitempty"`            // --kl-divergence statistics block
	TooFew         *TooFewTokensError `json:"too_few,omitempty"`
	Errors         []ToolLine         `json:"errors,omitempty"`   // every error line (level E, "error …")
	Warnings       []ToolLine         `json:"warnings,omitempty"` // every warning line (level W)
}

// MaxChunks bounds the chunks (and KLD rows) a PerplexityOutput keeps; later ones are counted.
const MaxChunks = 1 << 16

// ChunksDone is how many chunks were reported, those beyond MaxChunks included.
func (o *PerplexityOutput) ChunksDone() int {
	if o.Plan != nil && o.Plan.KLD {
		return len(o.KLDChunks) + o.DroppedChunks
	}
	return len(o.Chunks) + o.DroppedChunks
}

// PerplexityEventKind says what one line added.
type PerplexityEventKind string

// The kinds of PerplexityEvent.
const (
	PerplexityNothing PerplexityEventKind = ""
	PerplexityPlanned PerplexityEventKind = "plan"
	PerplexityChunk   PerplexityEventKind = "chunk" // one or more chunks (a "[i]…" line carries many)
	PerplexityFinal   PerplexityEventKind = "final"
	PerplexityStat    PerplexityEventKind = "stat" // a line of the statistics block
	PerplexityTooFew  PerplexityEventKind = "too_few_tokens"
	PerplexityError   PerplexityEventKind = "error"
	PerplexityOther   PerplexityEventKind = "other" // timing, logits file, warning
)

// PerplexityEvent is what one line added; Chunks is the number of chunks reported so far.
type PerplexityEvent struct {
	Kind   PerplexityEventKind
	Chunks int
}

var (
	pPlanRE     = regexp.MustCompile(`^(perplexity|kl_divergence): (?:calculating perplexity|computing) over (\d+) chunks, n_ctx=(\d+), batch_size=(\d+), n_seq=(\d+)`)
	pSavingRE   = regexp.MustCompile(`saving all logits to (.+?)\s*$`)
	pTokenizeRE = regexp.MustCompile(`tokenization took (` + numPat + `) ms`)
	pPassRE     = regexp.MustCompile(`(` + numPat + `) seconds per pass`)
	pChunkRE    = regexp.MustCompile(`\[(\d+)\](` + numPat + `),`)
	pChunk1RE   = regexp.MustCompile(`^\s*(\d+)\s+(` + numPat + `)\s+(` + numPat + `)\s+(` + numPat + `)\s*$`)
	pFinalRE    = regexp.MustCompile(`Final estimate: PPL = (` + numPat + `) \+/- (` + numPat + `)`)
	pNeedRE     = regexp.MustCompile(`you need at least (\d+) tokens .*?context of (\d+)`)
	pHaveRE     = regexp.MustCompile(`tokenizes to only (\d+) tokens(?:, need at least n_ctx=(\d+))?`)
)

// PerplexityParser reads a llama-perplexity run one output line at a time. The zero value is
// ready; it is not safe for concurrent use.
type PerplexityParser struct {
	out     PerplexityOutput
	inTable bool // after the --kl-divergence table header
	inStats bool // after a "====== … statistics ======" header
}

// ParsePerplexityOutput reads a whole output (lines numbered from 1).
func ParsePerplexityOutput(text string) PerplexityOutput {
	var p PerplexityParser
	for i, l := range splitLines(text) {
		p.Line(i+1, l)
	}
	return p.Result()
}

// Result is what was read so far (a copy the parser no longer touches).
func (p *PerplexityParser) Result() PerplexityOutput {
	o := p.out
	o.Chunks = append([]Chunk(nil), o.Chunks...)
	if o.Chunks == nil {
		o.Chunks = []Chunk{}
	}
	o.KLDChunks = append([]KLDChunk(nil), o.KLDChunks...)
	o.Errors = append([]ToolLine(nil), o.Errors...)
	o.Warnings = append([]ToolLine(nil), o.Warnings...)
	if o.Stats != nil {
		s := *o.Stats
		s.KLDPercentiles = append([]Percentile(nil), s.KLDPercentiles...)
		s.DeltaPPercentiles = append([]Percentile(nil), s.DeltaPPercentiles...)
		o.Stats = &s
	}
	if o.TooFew != nil {
		tf := *o.TooFew
		o.TooFew = &tf
	}
	return o
}

// Line reads output line n (1-based, CR and ANSI removed) and says what it added.
func (p *PerplexityParser) Line(n int, text string) PerplexityEvent {
	level, rest := splitLogPrefix(strings.TrimRight(text, "\r"))
	t := strings.TrimSpace(rest)
	ev := func(k PerplexityEventKind) PerplexityEvent {
		return PerplexityEvent{Kind: k, Chunks: p.out.ChunksDone()}
	}
	if t == "" {
		return ev(PerplexityNothing)
	}
	if k := p.tooFew(n, t); k != PerplexityNothing {
		p.out.Errors = appendLine(p.out.Errors, n, t)
		return ev(k)
	}
	if level == 'E' || strings.HasPrefix(strings.ToLower(t), "error") {
		p.out.Errors = appendLine(p.out.Errors, n, t)
		return ev(PerplexityError)
	}
	if level == 'W' {
		p.out.Warnings = appendLine(p.out.Warnings, n, t)
		return ev(PerplexityOther)
	}
	if k := p.statsOrTable(n, t); k != PerplexityNothing {
		return ev(k)
	}
	if m := pPlanRE.FindStringSubmatch(t); m != nil {
		p.out.Plan = &Plan{KLD: m[1] == "kl_divergence", Chunks: atoi(m[2]), NCtx: atoi(m[3]), Batch: atoi(m[4]), NSeq: atoi(m[5]), Line: n}
		return ev(PerplexityPlanned)
	}
	if m := pFinalRE.FindStringSubmatch(t); m != nil {
		v, ok1 := parseNum(m[1])
		pm, ok2 := parseNum(m[2])
		if ok1 && ok2 {
			p.out.Final = &Figure{Value: v, PM: pm, HasPM: true, Line: n}
			return ev(PerplexityFinal)
		}
	}
	if p.out.Plan != nil && !p.out.Plan.KLD && p.out.Final == nil && p.chunks(n, t) {
		return ev(PerplexityChunk)
	}
	return ev(p.other(n, t))
}

// statsOrTable reads the --kl-divergence table and statistics block.
func (p *PerplexityParser) statsOrTable(n int, t string) PerplexityEventKind {
	if kldHeaderRE.MatchString(t) {
		p.inTable = true
		return PerplexityOther
	}
	if statSectionRE.MatchString(t) {
		p.inStats, p.inTable = true, false
		if p.out.Stats == nil {
			p.out.Stats = &KLDStats{}
		}
		return PerplexityStat
	}
	if p.inStats && p.out.Stats.statLine(n, t) {
		return PerplexityStat
	}
	if p.inTable {
		if row, ok := kldRow(n, t); ok {
			if len(p.out.KLDChunks) < MaxChunks {
				p.out.KLDChunks = append(p.out.KLDChunks, row)
			} else {
				p.out.DroppedChunks++
			}
			return PerplexityChunk
		}
	}
	return PerplexityNothing
}

// chunks reads a "[i]v,[i+1]w," line or a --ppl-output-type 1 line.
func (p *PerplexityParser) chunks(n int, t string) bool {
	add := func(c Chunk) {
		if len(p.out.Chunks) < MaxChunks {
			p.out.Chunks = append(p.out.Chunks, c)
		} else {
			p.out.DroppedChunks++
		}
	}
	if strings.HasPrefix(t, "[") {
		ms := pChunkRE.FindAllStringSubmatch(t, -1)
		got := false
		for _, m := range ms {
			if v, ok := parseNum(m[2]); ok && atoi(m[1]) > 0 {
				add(Chunk{Index: atoi(m[1]), PPL: Figure{Value: v, Line: n}})
				got = true
			}
		}
		return got
	}
	if m := pChunk1RE.FindStringSubmatch(t); m != nil {
		v, ok1 := parseNum(m[2])
		nll, ok2 := parseNum(m[3])
		unc, ok3 := parseNum(m[4])
		if ok1 && ok2 && ok3 {
			add(Chunk{Index: p.out.ChunksDone() + 1, PPL: Figure{Value: v, Line: n},
				NLL: &Figure{Value: nll, PM: unc, HasPM: true, Line: n}})
			return true
		}
	}
	return false
}

func (p *PerplexityParser) tooFew(n int, t string) PerplexityEventKind {
	if m := pNeedRE.FindStringSubmatch(t); m != nil {
		tf := p.tooFewErr()
		tf.Need, tf.Ctx, tf.Line = atoi(m[1]), atoi(m[2]), n
		return PerplexityTooFew
	}
	if m := pHaveRE.FindStringSubmatch(t); m != nil {
		tf := p.tooFewErr()
		tf.Have = atoi(m[1])
		if m[2] != "" { // llama-imatrix: "…, need at least n_ctx=N"
			tf.Need, tf.Ctx = atoi(m[2]), atoi(m[2])
		}
		if tf.Line == 0 {
			tf.Line = n
		}
		if tf.Ctx > 0 && tf.Have >= 0 {
			tf.ChunksAvailable = tf.Have / tf.Ctx
		}
		return PerplexityTooFew
	}
	return PerplexityNothing
}

func (p *PerplexityParser) tooFewErr() *TooFewTokensError {
	if p.out.TooFew == nil {
		p.out.TooFew = &TooFewTokensError{Have: -1, ChunksAvailable: -1}
	}
	return p.out.TooFew
}

func (p *PerplexityParser) other(n int, t string) PerplexityEventKind {
	if m := pSavingRE.FindStringSubmatch(t); m != nil && p.out.SavingLogitsTo == "" {
		p.out.SavingLogitsTo = m[1]
		return PerplexityOther
	}
	if m := pTokenizeRE.FindStringSubmatch(t); m != nil {
		if v, ok := parseNum(m[1]); ok {
			p.out.TokenizeMs = &Figure{Value: v, Line: n}
			return PerplexityOther
		}
	}
	if m := pPassRE.FindStringSubmatch(t); m != nil && p.out.SecondsPerPass == nil {
		if v, ok := parseNum(m[1]); ok {
			p.out.SecondsPerPass = &Figure{Value: v, Line: n}
			return PerplexityOther
		}
	}
	return PerplexityNothing
}
