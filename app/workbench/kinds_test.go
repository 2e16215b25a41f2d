package workbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/receipt"
	"sparkbench/store"
)

// A study kind registered in its own file — its bundles with app/receipt, its receipt here —
// is exported and verified by the same service calls as throughput and capacity, on a real
// notebook (which stores a kind it has never heard of), with nothing in ExportReceipt or
// VerifyBundle naming it.
func TestARegisteredKindExportsAndVerifies(t *testing.T) {
	const kind = "test-note"
	t.Cleanup(receipt.RegisterBundleKind(receipt.BundleKind{
		Kind:    kind,
		Excerpt: func(receipt.Files, *receipt.Index) (int64, bool) { return 0, false },
		Assemble: func(files receipt.Files, _ *receipt.Index) ([]byte, []byte, error) {
			name := files["raw/name.txt"]
			js, err := canon.Marshal(map[string]string{"study": string(name)})
			return js, []byte("# " + string(name) + "\n"), err
		},
		Charts: func([]byte) ([]receipt.NamedChart, error) { return nil, nil },
	}))
	t.Cleanup(RegisterKind(Kind{Names: []string{kind}, Receipt: func(_ context.Context, _ *store.Notebook, s store.Study, opt bundle.Options) (receipt.Files, error) {
		ix, err := canon.Marshal(receipt.Index{Schema: receipt.SchemaBundle, Kind: kind, Sparkbench: opt.Version})
		if err != nil {
			return nil, err
		}
		files := receipt.Files{receipt.FileIndex: ix, "raw/name.txt": []byte(s.Name)}
		return files, receipt.Finish(files)
	}}))

	ctx := context.Background()
	nb, err := store.Open(filepath.Join(t.TempDir(), "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	st, err := nb.CreateStudy(ctx, store.Study{Name: "a note", Kind: kind, Status: store.StatusRegistered})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "note-receipt.tar.gz")
	x, err := ExportReceipt(ctx, nb, ReceiptRequest{Study: "a note", Out: out})
	if err != nil || x.StudyID != st.ID || x.RecordErr != nil || string(x.Files[receipt.FileReceipt]) != "# a note\n" {
		t.Fatalf("export: %+v %v", x, err)
	}
	v, err := VerifyBundle(ctx, VerifyRequest{Path: out})
	if err != nil || !v.OK() || v.Report.Kind != kind {
		t.Fatalf("verify: %+v %v", v, err)
	}
	if text := strings.Join(VerifyText(v), "\n"); !strings.Contains(text, "OK: every file matches SHA256SUMS") {
		t.Fatalf("verify text: %s", text)
	}

	// A kind nobody registered is refused by name, with the kinds that have receipts.
	other, err := nb.CreateStudy(ctx, store.Study{Name: "a ladder", Kind: "quant-ladder", Status: store.StatusRegistered})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ExportReceipt(ctx, nb, ReceiptRequest{Study: "a ladder", Out: filepath.Join(t.TempDir(), "x")})
	if err == nil || !strings.Contains(err.Error(), "is a quant-ladder study: receipts cover throughput, capacity, quant and test-note studies") || other.ID == 0 {
		t.Fatalf("unregistered kind: %v", err)
	}
}
