package receipt

import (
	"encoding/json"
	"fmt"
	"strings"

	"sparkbench/app/capacity"
)

// BundleKind is what writing and verifying receipts need of one study kind: how its
// bundle.json is checked, whether it carries a journal excerpt, its own checks of the raw
// files, how study.json and receipt.md are re-made from them, and its charts. A study kind
// registers one (RegisterBundleKind); Assemble, Finish, Verify and RenderPlots look the kind
// of a bundle up here and know nothing else of it.
type BundleKind struct {
	Kind string
	// Rules are the revisions of the kind's receipt rules after the first, which a bundle.json
	// may name (Index.Rules); nil: the kind has only the first.
	Rules []int
	// CheckIndex refuses a bundle.json whose kind-specific part is wrong (nil: nothing to check).
	CheckIndex func(ix *Index) error
	// Excerpt says whether the bundle carries a journal excerpt, and whose study it is.
	Excerpt func(files Files, ix *Index) (studyID int64, has bool)
	// Check adds the kind's own checks of the raw files to a verification (nil: none).
	Check func(rep *VerifyReport, files Files, ix *Index, add func(file string, line int, format string, a ...any))
	// Assemble re-makes study.json and receipt.md from the raw files alone.
	Assemble func(files Files, ix *Index) (studyJSON, receiptMD []byte, err error)
	// Charts are the plots of a study.json, by name (plots/NAME, no extension).
	Charts func(studyJSON []byte) ([]NamedChart, error)
}

var (
	bundleKinds     = map[string]*BundleKind{}
	bundleKindOrder []string
)

// RegisterBundleKind adds a study kind's bundles; a kind registered twice is a programming
// error. The returned func removes it again (for a test's own kind).
func RegisterBundleKind(k BundleKind) (unregister func()) {
	if k.Kind == "" || k.Excerpt == nil || k.Assemble == nil || k.Charts == nil {
		panic("receipt: a bundle kind needs its name, Excerpt, Assemble and Charts")
	}
	if _, dup := bundleKinds[k.Kind]; dup {
		panic("receipt: bundle kind " + k.Kind + " registered twice")
	}
	bundleKinds[k.Kind] = &k
	bundleKindOrder = append(bundleKindOrder, k.Kind)
	return func() {
		delete(bundleKinds, k.Kind)
		for i, n := range bundleKindOrder {
			if n == k.Kind {
				bundleKindOrder = append(bundleKindOrder[:i:i], bundleKindOrder[i+1:]...)
				break
			}
		}
	}
}

// bundleKindsText is "\"a\" or \"b\"" (or "\"a\", \"b\" or \"c\"") for messages.
func bundleKindsText() string {
	q := make([]string, len(bundleKindOrder))
	for i, k := range bundleKindOrder {
		q[i] = fmt.Sprintf("%q", k)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func init() {
	RegisterBundleKind(BundleKind{
		Kind:  KindThroughput,
		Rules: []int{RulesAdaptiveCells, RulesLegReasons, RulesProcessCells},
		Excerpt: func(files Files, _ *Index) (int64, bool) {
			var nb NotebookRecord
			if b, ok := files[FileNotebook]; ok {
				_ = decodeStrict(FileNotebook, b, &nb)
			}
			return nb.StudyID, true
		},
		Assemble: assembleThroughput,
		Charts: func(studyJSON []byte) ([]NamedChart, error) {
			d, err := DecodeThroughputStudy(studyJSON)
			if err != nil {
				return nil, err
			}
			return throughputCharts(d), nil
		},
	})
	RegisterBundleKind(BundleKind{
		Kind: KindCapacity,
		CheckIndex: func(ix *Index) error {
			if ix.Capacity == nil {
				return fmt.Errorf("%s: a capacity bundle needs its \"capacity\" input map", FileIndex)
			}
			if j := ix.Capacity.Journal; j != "" && j != FileJournal || (j != "") != (ix.Capacity.StudyID > 0) {
				return fmt.Errorf("%s: capacity journal %q with study id %d: want %q with the notebook's study id, or neither", FileIndex, j, ix.Capacity.StudyID, FileJournal)
			}
			return nil
		},
		Excerpt: func(_ Files, ix *Index) (int64, bool) { return ix.Capacity.StudyID, ix.Capacity.Journal != "" },
		Check: func(rep *VerifyReport, files Files, ix *Index, add func(string, int, string, ...any)) {
			// The prompt plan against the plan's prompt_plan.sha256 (the receipt prints the
			// comparison; a different file is a problem, not only a line in receipt.md).
			if ix.Capacity != nil {
				checkPromptPlan(rep, files, ix.Capacity, add)
			}
		},
		Assemble: assembleCapacity,
		Charts: func(studyJSON []byte) ([]NamedChart, error) {
			var r capacity.Result
			if err := json.Unmarshal(studyJSON, &r); err != nil {
				return nil, fmt.Errorf("%s: %w", FileStudy, err)
			}
			if r.Plan == nil {
				return nil, fmt.Errorf("%s: no plan", FileStudy)
			}
			return capacityCharts(&r), nil
		},
	})
}
