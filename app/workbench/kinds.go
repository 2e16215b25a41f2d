package workbench

import (
	"context"
	"fmt"
	"strings"

	"sparkbench/app/bundle"
	"sparkbench/app/kinds"
	"sparkbench/app/receipt"
	"sparkbench/store"
)

// Kind is one study kind as the service layer drives it. A kind registers itself
// (RegisterKind) and the service's calls look a study's kind up here: today its receipt; its
// registration, run and report join it as they move here from cmd/sparkbench. Its bundles
// register with app/receipt (receipt.BundleKind), which verifies them.
type Kind struct {
	// Names are the stored kinds it covers (the capacity kind covers capacity and concurrency).
	Names []string
	// Receipt collects a notebook study's bundle: its raw files and the derived ones.
	Receipt func(ctx context.Context, nb *store.Notebook, s store.Study, opt bundle.Options) (receipt.Files, error)
}

var (
	registry      = map[string]*Kind{}
	registryOrder []*Kind
)

// RegisterKind adds a study kind; a stored kind name claimed twice is a programming error.
func RegisterKind(k Kind) {
	if len(k.Names) == 0 {
		panic("workbench: a kind needs at least one name")
	}
	for _, n := range k.Names {
		if _, dup := registry[n]; dup {
			panic("workbench: study kind " + n + " registered twice")
		}
		registry[n] = &k
	}
	registryOrder = append(registryOrder, &k)
}

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
