// Package overview computes the figures that span studies: the badge table (does each model's
// token generation reach a line, at depth 0 only or at depth 0 and at a deep depth, and where
// does it first fall below it) and the constants ladder (each model's tg at depth 0 as a share
// of its memory-bandwidth ceiling, grouped by architecture, quant and backend). It reads the
// notebook through the same readers as `study show` (study.LoadStudy, study.BuildResults), so
// only result rows of a plan leg's counting attempt are ever used, and every number names the
// study, plan leg and row reference (`leg N seq S`) it came from. It starts no process.
package overview

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sync"

	"sparkbench/app/study"
	"sparkbench/runner/gguf"
	"sparkbench/store"
)

// Defaults of Options.
const (
	DefaultLine = 70.0 // t/s: the lab's "instant" line for real models
	DefaultTest = "tg" // any tg test; each tg length gets its own rows
	DefaultDeep = 8192 // tokens already in the KV cache
	Convention  = "tensor_exact"
)

// Options are the badge table's parameters (the ladder reads only Test).
type Options struct {
	Line float64 `json:"line"` // t/s a model's tg must reach (>= line; equal counts)
	Test string  `json:"test"` // "tg" (any length) or "tgN"
	Deep int64   `json:"deep"` // the deep depth of the "both depths" convention
	// FromRows reads every study from its rows, never from a stored summary (SummaryStore):
	// the overview receipt, which must be re-made from the rows alone. Not part of the JSON.
	FromRows bool `json:"-"`
}

// Defaults fills what is zero.
func (o Options) Defaults() Options {
	if o.Line == 0 {
		o.Line = DefaultLine
	}
	if o.Test == "" {
		o.Test = DefaultTest
	}
	if o.Deep == 0 {
		o.Deep = DefaultDeep
	}
	return o
}

var testRE = regexp.MustCompile(`^tg([1-9][0-9]*)?$`)

// Check refuses options that cannot be used (after Defaults): a line that is not a positive
// finite number, a test that is not a tg test, a deep depth that is not positive.
func (o Options) Check() error {
	if math.IsNaN(o.Line) || math.IsInf(o.Line, 0) || o.Line <= 0 {
		return &OptionError{fmt.Sprintf("line %g t/s: want a positive number of tokens per second", o.Line)}
	}
	if !testRE.MatchString(o.Test) {
		return &OptionError{fmt.Sprintf("test %q: want a token-generation test, \"tg\" (any length) or \"tgN\" such as tg128", o.Test)}
	}
	if o.Deep <= 0 {
		return &OptionError{fmt.Sprintf("deep depth %d: want a positive number of tokens", o.Deep)}
	}
	return nil
}

// OptionError is a bad parameter (the CLI exits 2).
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

// ErrNoResults: the notebook holds no throughput study with a tg result row of the test.
var ErrNoResults = errors.New("no throughput results")

// StudyRef is one study as the Source lists it.
type StudyRef struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	// HasPlan is false for a study of imported llama-bench rows (no plan: not read).
	HasPlan bool `json:"-"`
	// Imported: the study came from a receipt bundle (ImportedFrom says which).
	Imported     bool   `json:"imported"`
	ImportedFrom string `json:"imported_from,omitempty"`
	// Version changes whenever the study may have gained rows or legs; "" when it may change
	// at any moment (a leg is running): never cached.
	Version string `json:"-"`
}

// Source is what the overview reads: the throughput studies, and each one through the
// readers `study show` uses.
type Source interface {
	study.RecordReader
	ThroughputStudies(ctx context.Context) ([]StudyRef, error)
}

// SummaryStore is what a Source may also be: where each study's series are kept between
// processes, keyed by the study's Version (the notebook's study_summaries; docs/overview.md).
type SummaryStore interface {
	// Summaries reads every stored summary of SummaryKind, by study, newest first.
	Summaries(ctx context.Context) (map[int64][]store.Summary, error)
	// PutSummaries keeps summaries of SummaryKind, by study (insert-only).
	PutSummaries(ctx context.Context, batch map[int64]store.Summary) error
	// Writable is false when PutSummaries would be refused (a read-only notebook).
	Writable() bool
}

// Overview is both tables and the studies they read.
type Overview struct {
	Options Options      `json:"options"`
	Studies []StudyEntry `json:"studies"`
	Badges  BadgeTable   `json:"badges"`
	Ladder  Ladder       `json:"ladder"`
	// Series are the rows both tables were computed from (Badges and BuildLadder read them);
	// not in the overview's JSON: the overview receipt carries them.
	Series []Series `json:"-"`
}

// StudyEntry is a study the overview read, or left out with the reason.
type StudyEntry struct {
	StudyRef
	Series  int    `json:"series"` // (model, test, backend, config) series of the test it holds
	Skipped string `json:"skipped,omitempty"`
}

// Service computes overviews over one Source, keeping what it read of each study until the
// study changes (StudyRef.Version), so the window reopens the overview without reading every
// row again. Safe for concurrent use.
type Service struct {
	Src Source
	// ReadHeader reads a model's GGUF header (default gguf.ReadFile); tests replace it.
	ReadHeader func(path string) (*gguf.File, error)
	// Readers is how many studies are read at once when they are not cached (default 1, at
	// most 4, the store's reader pool): more is faster on idle cores, but competes with a
	// study running on the same machine.
	Readers int

	mu    sync.Mutex
	cache map[int64]cached
}

type cached struct {
	version     string
	series      []Series
	skipped     string
	fromSummary bool // decoded from a stored summary, not read from the rows
}

// New is a Service over src.
func New(src Source) *Service { return &Service{Src: src} }

// Open computes both tables with opts (zero fields take the defaults). Errors: *OptionError
// for bad options, ErrNoResults (wrapped, with what to do) when there is nothing to show.
func (s *Service) Open(ctx context.Context, opts Options) (*Overview, error) {
	opts = opts.Defaults()
	if err := opts.Check(); err != nil {
		return nil, err
	}
	entries, all, err := s.collect(ctx, opts.Test, opts.FromRows)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, noResults(entries, opts.Test)
	}
	headers := s.headers(all)
	ov := &Overview{Options: opts, Studies: entries}
	ov.Badges = Badges(all, opts)
	ov.Ladder = BuildLadder(all, opts.Test, headers)
	ov.Series = all
	return ov, nil
}

// Badges is the badge table alone.
func (s *Service) Badges(ctx context.Context, opts Options) (*BadgeTable, error) {
	ov, err := s.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &ov.Badges, nil
}

// Constants is the constants ladder alone (only opts.Test is read).
func (s *Service) Constants(ctx context.Context, opts Options) (*Ladder, error) {
	ov, err := s.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &ov.Ladder, nil
}

func noResults(entries []StudyEntry, test string) error {
	if len(entries) == 0 {
		return fmt.Errorf("%w: the notebook has no throughput study; run one first (sparkbench demo --run, or sparkbench study run PLAN)", ErrNoResults)
	}
	skipped := 0
	why := ""
	for _, e := range entries {
		if e.Skipped != "" {
			skipped++
			why = e.Skipped
		}
	}
	if skipped == len(entries) {
		return fmt.Errorf("%w: the notebook's %d throughput studies were all left out (%s); register and run a study "+
			"(sparkbench study run PLAN, or sparkbench demo --run)", ErrNoResults, skipped, why)
	}
	return fmt.Errorf("%w: none of the notebook's %d throughput studies has a result row of %s at depth 0 or deeper; run a study whose plan measures it "+
		"(n_gen in the plan, depth 0 among its depths), or pass --test with a tg test they measured", ErrNoResults, len(entries)-skipped, test)
}
