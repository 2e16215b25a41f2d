package workbench

import (
	"strings"
	"testing"

	"sparkbench/app/canon"
	"sparkbench/app/kinds"
	"sparkbench/app/quant"
	"sparkbench/app/receipt"
)

// A ladder bundle is re-made by the selection rules it was written with: one written before
// they were recorded (bundle.json without quant.rules, here one without a journal excerpt)
// re-makes the receipt it was written with, which still selected over an incomplete ladder,
// so it verifies as written; the notebook and new bundles use the current rules (an incomplete
// ladder selects nothing). A rules number this version does not know is refused.
func TestQuantBundleKeepsItsSelectionRules(t *testing.T) {
	plan := []byte(`{"schema":"sparkbench.quant/v1","name":"old ladder","build":{},"quants":["Q8_0","Q4_0"],` +
		`"reference":{"path":"/m/ref.gguf","sha256":"` + strings.Repeat("a", 64) + `"},` +
		`"speed":{"depths":[0,512]},"quality":{"corpus":{"path":"/m/c.txt","sha256":"` + strings.Repeat("b", 64) + `"}},"rule":{"maximize":"tg@512"}}`)
	rec := func(typ string, cells ...quant.BenchCell) quant.Record {
		return quant.Record{Type: typ, File: "/c/" + typ + ".gguf", SHA256: strings.Repeat("c", 64), Bytes: 1 << 20, Bench: cells, KLD: &quant.KLD{Mean: 0.001}}
	}
	crashed := rec("Q4_0", quant.BenchCell{Test: "tg", Depth: 0, Mean: 300})
	crashed.Incomplete = []string{"bench/Q4_0/d512: llama-bench crashed: killed by SIGSEGV"}
	records, err := canon.Marshal([]quant.Record{rec("Q8_0", quant.BenchCell{Test: "tg", Depth: 0, Mean: 200}, quant.BenchCell{Test: "tg", Depth: 512, Mean: 100}), crashed})
	if err != nil {
		t.Fatal(err)
	}
	index := func(q string) receipt.Files {
		return receipt.Files{receipt.FileIndex: []byte(`{"kind":"` + kinds.Quant + `","schema":"` + receipt.SchemaBundle + `","sparkbench":"old"` + q + `}`),
			"plan.json": plan, fileRecords: records}
	}
	files := index("")
	ix, err := receipt.ReadIndex(files)
	if err != nil {
		t.Fatal(err)
	}
	_, md, err := assembleQuantBundle(files, ix)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "**Selected: Q8_0**") || strings.Contains(string(md), "Incomplete") {
		t.Errorf("an old bundle is not re-made by its own rules:\n%s", md)
	}
	p, _ := quant.Decode("plan.json", plan)
	if res, _ := quant.Assemble(p, "x", []quant.Record{rec("Q8_0"), crashed}); res.Selection.Selected != "" || !res.Selection.Incomplete {
		t.Errorf("the current rules select on an incomplete ladder: %+v", res.Selection)
	}
	if _, err := receipt.ReadIndex(index(`,"quant":{"journal":"journal.jsonl","study_id":1,"rules":3}`)); err == nil || !strings.Contains(err.Error(), "quant rules 3: this sparkbench knows rules 1 to 2") {
		t.Errorf("rules 3: %v", err)
	}
}
