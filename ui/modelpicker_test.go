package ui

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
)

// pickerModels are the committed tiny models and the medium ones that are present (make
// models makes them), read by the GGUF reader the Models section uses.
func pickerModels(t *testing.T) []app.ModelEntry {
	t.Helper()
	var out []app.ModelEntry
	for _, name := range []string{"tiny-llama-f32.gguf", "tiny-moe-f32.gguf", "tiny-llama-f16.gguf",
		"medium-llama-f16.gguf", "medium-llama-q8_0.gguf", "medium-llama-q4_0.gguf", "medium-llama-q4_k_m.gguf"} {
		path := filepath.Join(modelsDir(), name)
		if _, err := os.Stat(path); err != nil {
			if strings.HasPrefix(name, "tiny-") {
				t.Fatal(err)
			}
			t.Logf("%s not made (make models): left out", name)
			continue
		}
		m := app.InspectModel(path)
		if m.Err != "" {
			t.Fatalf("%s: %s", name, m.Err)
		}
		out = append(out, m)
	}
	return out
}

// committedSums are the SHA-256 lines of testdata/models/SHA256SUMS, by file name.
func committedSums(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(modelsDir(), "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			out[name] = sum
		}
	}
	return out
}

// The model table's cells are the GGUF facts of each file (and its size on disk), its
// SHA-256 state the library's, the search filters rows, and picking rows in the table makes
// the plan picking the paths makes.
func TestModelPickerShowsFactsFiltersAndPicks(t *testing.T) {
	a := newTestApp(t)
	models := pickerModels(t)
	sums := committedSums(t)
	tiny, moe := models[0].Path, models[1].Path
	lib := &fakeLibrary{
		sums:     map[string]string{tiny: sums["tiny-llama-f32.gguf"], moe: sums["tiny-moe-f32.gguf"]},
		expected: map[string]string{tiny: sums["tiny-llama-f32.gguf"], moe: strings.Repeat("0", 64)},
	}
	v := build(func() *CapacityWizard {
		return newCapacityWizard(a.NewWindow("t"), nil, lib, func() []app.ModelEntry { return models }, nil)
	})
	p := v.ModelTable
	waitSignalled(t, p.loaded, 10*time.Second, func() bool { return strings.HasPrefix(p.Cell(0, len(pickerColumns)), "VERIFIED") },
		func() string { return "SHA-256 cell " + p.Cell(0, len(pickerColumns)) })

	Locked(func() {
		if got, want := p.Rows(), idsOf(models, func(m app.ModelEntry) string { return m.Path }); !slices.Equal(got, want) {
			t.Fatalf("rows %v, want %v", got, want)
		}
		for i, m := range models {
			st, err := os.Stat(m.Path)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"File": filepath.Base(m.Path), "Architecture": "llama", "Params": app.HumanCount(m.Params),
				"Type": m.FileType, "Size": app.HumanBytes(st.Size()), "Experts": "—",
				"SHA-256": "PENDING — not hashed yet",
			}
			switch filepath.Base(m.Path) {
			case "tiny-llama-f32.gguf":
				want["Params"] = "164.5K" // docs: 164,544 parameters
				want["SHA-256"] = "VERIFIED " + sums["tiny-llama-f32.gguf"][:12] + "…"
			case "tiny-moe-f32.gguf":
				want["Experts"] = "4 (2 used)"
				want["SHA-256"] = "MISMATCH " + sums["tiny-moe-f32.gguf"][:12] + "… ≠ expected 000000000000…"
			}
			for col, c := range pickerColumns {
				if got := p.Cell(i, col+1); got != want[c.title] {
					t.Errorf("%s, %s: %q, want %q", filepath.Base(m.Path), c.title, got, want[c.title])
				}
			}
			if !strings.Contains(strings.ToUpper(m.FileType), strings.ToUpper(strings.TrimSuffix(strings.SplitN(filepath.Base(m.Path), "-", 3)[2], ".gguf"))) {
				t.Errorf("%s: file type %q is not the file's quantization", filepath.Base(m.Path), m.FileType)
			}
		}

		// The search: every word, any case, in the file name or a fact.
		test.Type(p.Search, "MoE")
		if got := p.Rows(); !slices.Equal(got, []string{moe}) {
			t.Fatalf("search moe: rows %v", got)
		}
		p.Search.SetText("llama f16")
		var f16 []string
		for _, m := range models {
			if strings.Contains(filepath.Base(m.Path), "f16") {
				f16 = append(f16, m.Path)
			}
		}
		if got := p.Rows(); !slices.Equal(got, f16) || p.Count.Text != fmt.Sprintf("%d of %d models", len(f16), len(models)) {
			t.Fatalf("search llama f16: rows %v (want %v), count %q", got, f16, p.Count.Text)
		}
		p.Search.SetText("verified")
		if got := p.Rows(); !slices.Equal(got, []string{tiny}) {
			t.Fatalf("search verified: rows %v", got)
		}

		// Picking in the table (moe found by search, then tiny) is picking the paths.
		v.Name.SetText("picked")
		p.Search.SetText("moe")
		p.Toggle(0)
		p.Search.SetText("")
		p.Toggle(slices.Index(p.Rows(), tiny))
		if p.Cell(slices.Index(p.Rows(), moe), 0) != "✓" || p.Cell(slices.Index(p.Rows(), tiny), 0) != "✓" {
			t.Fatal("picked rows are not marked")
		}
		fromTable, errs := v.Plan()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		v.Models.SetSelected(nil)
		v.Models.SetSelected([]string{moe, tiny})
		byPath, _ := v.Plan()
		a, _, _ := planSum(fromTable)
		b, _, _ := planSum(byPath)
		if a != b || len(fromTable.Candidates) != 2 || fromTable.Candidates[0].Model.Path != moe {
			t.Fatalf("picked in the table: %s %+v; by path: %s", a, fromTable.Candidates, b)
		}
		p.Toggle(slices.Index(p.Rows(), moe))
		if !slices.Equal(v.Models.Selected, []string{tiny}) {
			t.Fatalf("a picked row clicked again stays picked: %v", v.Models.Selected)
		}
	})

	// The throughput form has the same table.
	w := build(func() *WizardView {
		return newWizardView(a.NewWindow("t"), nil, lib, func() []app.ModelEntry { return models }, nil)
	})
	Locked(func() {
		w.ModelTable.Search.SetText("tiny-llama")
		for i := range w.ModelTable.Rows() {
			w.ModelTable.Toggle(i)
		}
		fromTable, _ := w.Plan()
		w.Models.SetSelected([]string{models[0].Path, models[2].Path})
		byPath, _ := w.Plan()
		a, _, _ := fromTable.SHA256()
		b, _, _ := byPath.SHA256()
		if a != b || len(fromTable.Models) != 2 {
			t.Fatalf("throughput: picked in the table %s %+v, by path %s", a, fromTable.Models, b)
		}
	})
}

func planSum(p *capacity.Plan) (string, []byte, error) {
	p.Defaults()
	return p.SHA256()
}
