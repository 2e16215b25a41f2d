package workbench

import (
	"context"
	"fmt"
	"io"
	"sparkbench/app/study"
	"strings"

	"sparkbench/app/bundle"
	"sparkbench/app/kinds"
	"sparkbench/app/receipt"
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
// Throughput and capacity give their receipts here; their registration, runs and reports
// still go through their own CLI verbs (cmd/sparkbench), which move here one by one, with
// their output unchanged. A function left nil is a verb the kind does not take through the
// shared path.
type Kind struct {
	// Names are the stored kinds it covers (the capacity kind covers capacity and concurrency).
	Names []string
	// PlanSchema is the "schema" of the kind's plan files ("": not registered by file here).
	PlanSchema string
	// Validate checks a plan file (its bytes, data) without writing anything; hash nil: the
	// files it names are not hashed.
	Validate func(ctx context.Context, file string, data []byte, hash study.HashFunc) (*Validated, error)
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

// Validated is a plan file's check: its problems, whether it can be registered, the value
// --json prints and the lines that describe a valid plan.
type Validated struct {
	Problems []study.Problem
	Valid    bool
	Report   any
	Lines    []string
}

// Registered is a frozen plan: the study, and the lines that say so.
type Registered struct {
	StudyID    int64    `json:"study"`
	Name       string   `json:"name"`
	PlanSHA256 string   `json:"plan_sha256"`
	Lines      []string `json:"-"`
}

// RunRequest is how a run goes: the llama.cpp folder ("" for the usual search) and where each
// event's line goes (nil: nowhere).
type RunRequest struct {
	LlamaDir string
	Event    func(line string)
}

// RunDone is what a run did: its status and the lines that say so. Complete is false when
// work is left (the CLI then exits 1).
type RunDone struct {
	Status   string
	Complete bool
	Lines    []string
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
	for _, n := range k.Names {
		if _, dup := registry[n]; dup {
			panic("workbench: study kind " + n + " registered twice")
		}
		registry[n] = &k
	}
	if k.PlanSchema != "" {
		if _, dup := bySchema[k.PlanSchema]; dup {
			panic("workbench: plan schema " + k.PlanSchema + " registered twice")
		}
		bySchema[k.PlanSchema] = &k
	}
	registryOrder = append(registryOrder, &k)
	return func() {
		for _, n := range k.Names {
			delete(registry, n)
		}
		delete(bySchema, k.PlanSchema)
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

func init() {
	RegisterKind(Kind{Names: []string{kinds.Throughput}, Receipt: throughputStudyFiles})
	RegisterKind(Kind{Names: []string{kinds.Capacity, kinds.Concurrency}, Receipt: capacityStudyFiles})
}
