package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sparkbench/app/bundle"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/runner/jsonlex"
	"sparkbench/store"
)

// Kind is one study kind as the service layer drives it. A kind registers itself
// (RegisterKind) from its own file, and the service's calls and the CLI's shared verbs
// (`study register`, `study run`, `study show`, `receipt`) look a plan's or a study's kind up
// here; its bundles register with app/receipt (receipt.BundleKind), which verifies them. What a
// new kind implements:
//
//   - Names: the stored kind names it covers (a lowercase name; the notebook takes any);
//   - PlanSchema, Validate and Register: the "schema" of its plan files, how one is checked,
//     and how it is frozen into the notebook before anything runs;
//   - Run: running (or resuming) a registered study, reporting each thing that happens;
//   - Show: its report (printed, and as JSON);
//   - Receipt: its bundle's files, and a receipt.BundleKind that re-derives them.
//
// Throughput (the `study` verb's default kind) registers, runs, shows and gives its receipts
// here, capacity (the `capacity` verb's) validates, registers, shows and gives its receipts
// (builtin_kinds.go); capacity runs still go through their own CLI verb. A function left nil is a verb the kind does not take through
// the shared path.
type Kind struct {
	// Names are the stored kinds it covers (the capacity kind covers capacity and concurrency).
	Names []string
	// Verb is the CLI command its studies go under ("": "study"). One kind of each verb is
	// its Default: it reads the plan files whose schema names no kind of that verb, and its
	// Find says why a study is not one of the verb's.
	Verb    string
	Default bool
	// Find resolves a study of this kind by id or name (nil: the stored study, when its kind
	// is one of Names); its error says how to get one.
	Find func(ctx context.Context, nb *store.Notebook, ref string) (int64, error)
	// CacheWarning is what a register verb says when the hashes could not be cached after
	// registering ("": "warning: the file hashes were not cached").
	CacheWarning string
	// PlanSchema is the "schema" of the kind's plan files ("": not registered by file here);
	// MorePlanSchemas the further schemas its plans may carry (capacity's concurrency plans).
	PlanSchema      string
	MorePlanSchemas []string
	// Validate checks a plan file (PlanCheck: its bytes, how its files are hashed, the build
	// it is checked against) without writing anything.
	Validate func(ctx context.Context, req PlanCheck) (*Validated, error)
	// Register checks a plan file (its bytes, data) and freezes it into the notebook. hash is
	// the notebook-cached file hasher.
	Register func(ctx context.Context, nb *store.Notebook, file string, data []byte, hash study.HashFunc) (*Registered, error)
	// Run runs a registered study's unfinished work.
	Run func(ctx context.Context, nb *store.Notebook, s store.Study, req RunRequest) (*RunDone, error)
	// Show is a registered study's report.
	Show func(ctx context.Context, nb *store.Notebook, s store.Study) (*Shown, error)
	// Receipt collects a notebook study's bundle: its raw files and the derived ones.
	Receipt func(ctx context.Context, nb *store.Notebook, s store.Study, opt bundle.Options) (receipt.Files, error)
}

// PlanCheck asks a kind to check a plan file: its name and bytes (nil: not read, the kind
// says why), the hasher of the files it names (nil: not hashed) and the llama.cpp folder of
// the build it is checked against ("": the plan's build.dir, else the usual search).
type PlanCheck struct {
	File     string
	Data     []byte
	Hash     study.HashFunc
	LlamaDir string
	// Notebook, when one exists (opened read-only), holds the history the repetition planner
	// reads (nil: no planner); Effect is the difference it sizes a comparison for (<= 0: 3%).
	Notebook *store.Notebook
	Effect   float64
}

// Validated is a plan file's check: its problems, whether it can be registered, the value
// --json prints, the lines that describe a valid plan, and warnings said first (on stderr, as
// they are: what could not be checked).
type Validated struct {
	Problems []study.Problem
	Valid    bool
	Report   any
	Lines    []string
	Warnings []string
}

// Registered is a frozen plan: the study, and the lines that say so. A kind's Register may
// return it with an error too, for its Notes.
type Registered struct {
	StudyID    int64    `json:"study"`
	Name       string   `json:"name"`
	PlanSHA256 string   `json:"plan_sha256"`
	Lines      []string `json:"-"`
	// Report is what --json prints (nil: this Registered).
	Report any `json:"-"`
	// Notes are said first (on stderr, after the verb), also when the plan is refused;
	// Warnings after the registration (on stderr, as they are).
	Notes    []string `json:"-"`
	Warnings []string `json:"-"`
}

// RunRequest is how a run goes: the llama.cpp folder ("" for the usual search), where each
// event's line goes (nil: nowhere) and, on a terminal, its status line (Bar: redrawn in place;
// done, the last one, kept); the legs to run once more although their failures reached the
// plan's retries; how a file being hashed is shown.
//
// Kinds that keep a run folder take Out (a new run folder, "": the kind's default) and Fresh
// (a new folder rather than resuming the last one). Progress is told the lines a kind says on
// the side (warnings, one line per server lifetime; the CLI prints them on stderr). JSON, when
// set, is given every event as the value the kind's --json prints, and the CLI then prints
// RunDone's Lines on stderr, keeping stdout for the events. Options are the kind's own (the
// capacity kind: CapacityRunOptions; nil: its defaults).
type RunRequest struct {
	LlamaDir string
	Event    func(line string)
	Retry    []string
	Terminal bool
	Bar      func(text string, done bool)
	Hash     HashShow
	Out      string
	Fresh    bool
	Progress func(line string)
	JSON     func(ev any)
	Options  any
	// TrustCache takes the models' hashes from the notebook's cache instead of reading the
	// files before the first leg (--trust-cache; journaled: RunHash).
	TrustCache bool
}

// RunDone is what a run did: its status and the lines that say so (Lines on stdout, Notes on
// stderr). Complete is false when work is left (the CLI then exits 1). A run's error: a
// *RequestError is bad input (exit 2), a *study.RefusedError a refused plan (2), any other
// the run's failure (1).
type RunDone struct {
	Status   string
	Complete bool
	Lines    []string
	Notes    []string
}

// Shown is a study's report: the value --json prints, its text, and a problem that makes
// `show` exit 1 after printing.
type Shown struct {
	Report  any
	Print   func(w io.Writer)
	Problem string
}

var (
	registry      = map[string]*Kind{}
	bySchema      = map[string]*Kind{}
	registryOrder []*Kind
)

// RegisterKind adds a study kind; a stored kind name or plan schema claimed twice is a
// programming error. The returned func removes it again (for a test's own kind).
func RegisterKind(k Kind) (unregister func()) {
	if len(k.Names) == 0 {
		panic("workbench: a kind needs at least one name")
	}
	k.Validate, k.Register = checkingName(k.Validate, k.Register)
	for _, n := range k.Names {
		if _, dup := registry[n]; dup {
			panic("workbench: study kind " + n + " registered twice")
		}
		registry[n] = &k
	}
	schemas := append([]string{k.PlanSchema}, k.MorePlanSchemas...)
	for _, sc := range schemas {
		if sc == "" {
			continue
		}
		if _, dup := bySchema[sc]; dup {
			panic("workbench: plan schema " + sc + " registered twice")
		}
		bySchema[sc] = &k
	}
	registryOrder = append(registryOrder, &k)
	return func() {
		for _, n := range k.Names {
			delete(registry, n)
		}
		for _, sc := range schemas {
			delete(bySchema, sc)
		}
		for i, r := range registryOrder {
			if r.Names[0] == k.Names[0] {
				registryOrder = append(registryOrder[:i:i], registryOrder[i+1:]...)
				break
			}
		}
	}
}

// KindOfPlan is the registered kind whose plans carry this schema, or nil.
func KindOfPlan(schema string) *Kind { return bySchema[schema] }

// KindOf is the registered kind of a stored study kind, or nil.
func KindOf(stored string) *Kind { return registry[stored] }

// VerbOf is the CLI command k's studies go under.
func (k *Kind) VerbOf() string {
	if k.Verb == "" {
		return "study"
	}
	return k.Verb
}

// DefaultKind is verb's default kind, or nil.
func DefaultKind(verb string) *Kind {
	for _, k := range registryOrder {
		if k.Default && k.VerbOf() == verb {
			return k
		}
	}
	return nil
}

// PlanKind is the kind of verb that reads a plan with this schema: the kind whose plans carry
// it, else the verb's default kind (which then says what is wrong with the file).
func PlanKind(verb, schema string) *Kind {
	if k := KindOfPlan(schema); k != nil && k.VerbOf() == verb {
		return k
	}
	return DefaultKind(verb)
}

// FindStudy resolves a study of verb by id or name, for a verb that needs takes of its kind:
// the stored study's kind when it is one of verb's and takes the verb, else verb's default
// kind, whose Find says why not. The kind's own Find, when it has one, has the last word.
func FindStudy(ctx context.Context, nb *store.Notebook, verb, ref string, takes func(*Kind) bool) (*Kind, int64, error) {
	k := DefaultKind(verb)
	s, err := nb.FindStudy(ctx, ref)
	if err == nil {
		if sk := KindOf(s.Kind); sk != nil && sk.VerbOf() == verb && takes(sk) {
			k = sk
		}
	}
	if k == nil {
		if err != nil {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("study %d (%s) is a %s study; no command of `sparkbench %s` takes it", s.ID, s.Name, s.Kind, verb)
	}
	if k.Find != nil {
		id, err := k.Find(ctx, nb, ref)
		return k, id, err
	}
	if err != nil {
		return nil, 0, err
	}
	return k, s.ID, nil
}

// receiptKindsText names the kinds that have receipts, for messages: "throughput and capacity".
func receiptKindsText() string {
	var names []string
	for _, k := range registryOrder {
		if k.Receipt != nil {
			names = append(names, k.Names[0])
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return fmt.Sprintf("%s and %s", strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// Kinds lists every registered study kind in the order registered (the kind contract test runs
// over it, so that a kind cannot be added without passing it).
func Kinds() []*Kind { return append([]*Kind(nil), registryOrder...) }

// checkingName wraps a kind's Validate and Register with the check every kind's plan gets,
// whatever the kind checks itself: a study name that is a bare number is refused (every
// command reads "2" as study ID 2), as a study.ProblemPlaced problem the CLI places at its
// file:line:col. Register refuses before anything is hashed or written.
func checkingName(validate func(context.Context, PlanCheck) (*Validated, error),
	register func(context.Context, *store.Notebook, string, []byte, study.HashFunc) (*Registered, error)) (
	func(context.Context, PlanCheck) (*Validated, error),
	func(context.Context, *store.Notebook, string, []byte, study.HashFunc) (*Registered, error)) {
	var v func(context.Context, PlanCheck) (*Validated, error)
	if validate != nil {
		v = func(ctx context.Context, req PlanCheck) (*Validated, error) {
			out, err := validate(ctx, req)
			pr := planNameProblem(req.Data)
			if err != nil || out == nil || pr == nil {
				return out, err
			}
			for _, p := range out.Problems {
				if p.Path == pr.Path && p.Code == pr.Code {
					return out, nil // the kind said it itself
				}
			}
			out.Problems = append([]study.Problem{*pr}, out.Problems...)
			out.Valid = false
			return out, nil
		}
	}
	var r func(context.Context, *store.Notebook, string, []byte, study.HashFunc) (*Registered, error)
	if register != nil {
		r = func(ctx context.Context, nb *store.Notebook, file string, data []byte, hash study.HashFunc) (*Registered, error) {
			if pr := planNameProblem(data); pr != nil {
				return nil, &study.RefusedError{Problems: []study.Problem{*pr}}
			}
			return register(ctx, nb, file, data, hash)
		}
	}
	return v, r
}

// planNameProblem is the problem of a plan file whose top-level "name" is a string that is a
// bare number (study.NameProblem), or nil (no such name, or data that is not a JSON object:
// the kind's decoder says what is wrong with it).
func planNameProblem(data []byte) *study.Problem {
	off, ok := jsonlex.PathOffset(data, "name")
	if !ok {
		return nil
	}
	var name string
	if json.NewDecoder(bytes.NewReader(data[off:])).Decode(&name) != nil {
		return nil
	}
	return study.NameProblem("name", name)
}
