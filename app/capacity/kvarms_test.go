package capacity

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// kvPlan: f16 (default cache), q8 (q8_0/q8_0) and q4k (q4_0 K only, -fa on) on model sha0, and
// a q8 candidate on model sha1 (another file) that has no f16 partner.
func kvPlan() *Plan {
	return &Plan{Schema: SchemaCapacity, Name: "kv", Candidates: []Candidate{
		{ID: "f16", Label: "f16", Model: FileRef{Path: "models/m.gguf", SHA256: sha0}, ServerFlags: []string{"-t", "2"}},
		{ID: "q8", Label: "q8", Model: FileRef{Path: "models/m.gguf", SHA256: sha0}, ServerFlags: []string{"-t", "2", "-ctk", "q8_0", "--cache-type-v", "q8_0"}},
		{ID: "q4k", Label: "q4k", Model: FileRef{Path: "models/m.gguf", SHA256: sha0}, ServerFlags: []string{"-ctk", "q4_0", "-fa", "on"}},
		{ID: "other", Label: "other", Model: FileRef{Path: "other/n.gguf", SHA256: sha1}, ServerFlags: []string{"-ctk", "q8_0", "-ctv", "q8_0"}},
	}}
}

func TestKVArms(t *testing.T) {
	if kv := KVOf([]string{"-t", "1"}); kv != (study.KVType{K: "f16", V: "f16"}) {
		t.Errorf("default cache %+v", kv)
	}
	arms := KVArms(kvPlan())
	if len(arms) != 2 {
		t.Fatalf("arms %+v", arms)
	}
	q8, q4 := arms[0], arms[1]
	if q8.Candidate != "q8" || q8.Base != "f16" || q8.KVName() != "q8_0/q8_0" || q8.Threads != 2 || q8.FlagsDiffer || q8.Model != "m" {
		t.Errorf("q8 arm %+v", q8)
	}
	if q4.Candidate != "q4k" || q4.Base != "f16" || q4.KVName() != "q4_0/f16" || q4.Threads != 0 || !q4.FlagsDiffer {
		t.Errorf("q4k arm %+v", q4)
	}
	// Two models with the same file name: each named apart by its SHA-256.
	p := kvPlan()
	p.Candidates[3].Model.Path = "other/m.gguf"
	p.Candidates = append(p.Candidates, Candidate{ID: "f16b", Label: "f16b", Model: FileRef{Path: "other/m.gguf", SHA256: sha1}})
	if arms := KVArms(p); len(arms) != 3 || arms[0].Model != "m-000000000000" || arms[2].Model != "m-111111111111" || arms[2].Base != "f16b" {
		t.Errorf("same file names: %+v", arms)
	}
	if arms := KVArms(smallPlan()); len(arms) != 0 {
		t.Errorf("a plan without KV flags has arms: %+v", arms)
	}
}

// TestKVQualityGate: an arm whose mean KLD is above the plan's limit fails with
// kv:kld_mean_above_maximum, one at or below it passes; without a limit, no gate.
func TestKVQualityGate(t *testing.T) {
	p := kvPlan()
	checks := []study.KVCheck{
		{Model: "m", KV: "q8_0/q8_0", MeanKLD: 0.02, Leg: "kv-quality/m/q8_0-q8_0"},
		{Model: "m", KV: "q4_0/f16", MeanKLD: 0.01},
		{Model: "m", KV: "q8_0/q8_0", MeanKLD: 0.001}, // an older check of q8_0 is replaced by this later one
	}
	checks[0], checks[2] = checks[2], checks[0] // the later entry (0.02) comes last
	qs, pending := KVQualityOf(p, nil, checks)
	if len(qs) != 2 || len(pending) != 0 || qs[0].Gate != "" || qs[0].Max != nil {
		t.Fatalf("no gate: %+v %+v", qs, pending)
	}
	p.KVQuality = &study.KVQualityGate{KLDMeanMax: 0.01}
	qs, _ = KVQualityOf(p, nil, checks)
	if qs[0].Candidate != "q8" || qs[0].MeanKLD != 0.02 || qs[0].Gate != study.GateKLDAboveMax || *qs[0].Max != 0.01 {
		t.Errorf("above the limit: %+v", qs[0])
	}
	if qs[1].Candidate != "q4k" || qs[1].Gate != "pass" {
		t.Errorf("at the limit: %+v", qs[1])
	}
	if line := KVQualityLine(qs[0]); !strings.Contains(line, "q8 (q8_0/q8_0 KV) vs f16: speed against f16 not measured; mean KLD 0.020000") ||
		!strings.Contains(line, "; gate (mean KLD <= 0.01): kv:kld_mean_above_maximum") {
		t.Errorf("line %q", line)
	}
	// Only q8 checked: q4k is pending.
	if qs, pending := KVQualityOf(p, nil, checks[:1]); len(qs) != 1 || len(pending) != 1 || pending[0].Candidate != "q4k" {
		t.Errorf("q4k only: %+v %+v", qs, pending)
	}
}

func TestKVQualityValidation(t *testing.T) {
	has := func(probs []study.Problem, path string, sev study.Severity) bool {
		return slices.ContainsFunc(probs, func(p study.Problem) bool { return p.Path == path && p.Severity == sev })
	}
	p := kvPlan()
	p.KVQuality = &study.KVQualityGate{KLDMeanMax: 0}
	if probs := Validate(p, ValidateOptions{}); !has(probs, "kv_quality.kld_mean_max", study.SevError) || has(probs, "kv_quality", study.SevWarning) {
		t.Errorf("zero limit: %v", probs)
	}
	p = smallPlan()
	p.KVQuality = &study.KVQualityGate{KLDMeanMax: 0.01}
	if probs := Validate(p, ValidateOptions{}); has(probs, "kv_quality.kld_mean_max", study.SevError) || !has(probs, "kv_quality", study.SevWarning) {
		t.Errorf("no KV arm: %v", probs)
	}
	// A plan without kv_quality hashes as before: the field is left out of its JSON.
	b, err := json.Marshal(smallPlan())
	if err != nil || bytes.Contains(b, []byte("kv_quality")) {
		t.Errorf("%s %v", b, err)
	}
	if _, err := Decode("p.json", []byte(`{"kv_quality": {"kld_mean_max": 0.05}}`)); err != nil {
		t.Errorf("kv_quality refused: %v", err)
	}
}

// TestKVSpeed: the selected points' rates and the per-stream rates at P1/C1, KV arm over f16.
func TestKVSpeed(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	res := &Result{Candidates: []CandidateResult{
		{ID: "f16", Base: PointRef{Slots: 1, Clients: 1}, Selected: &Selection{Slots: 2, Clients: 2, GenerationRate: 100},
			Cells: []CellResult{{Slots: 1, Clients: 1, PerStreamRate: f(50)}}},
		{ID: "q8", Base: PointRef{Slots: 1, Clients: 1}, Selected: &Selection{Slots: 4, Clients: 4, GenerationRate: 110},
			Cells: []CellResult{{Slots: 1, Clients: 1, PerStreamRate: f(40)}}},
	}}
	qs, _ := KVQualityOf(kvPlan(), res, []study.KVCheck{{Model: "m", KV: "q8_0/q8_0", MeanKLD: 0.001}})
	if len(qs) != 1 || len(qs[0].Speed) != 2 || qs[0].Speed[0].Ratio != 1.1 || qs[0].Speed[1].Ratio != 0.8 {
		t.Fatalf("%+v", qs)
	}
	want := "selected rate faster by 10.0% (P4/C4 against f16's P2/C2), per-stream rate at P1/C1 slower by 20.0%"
	if got := qs[0].SpeedWords(); got != want {
		t.Errorf("speed words %q, want %q", got, want)
	}
}

// TestReportWithoutKV: a report without KV arms prints and marshals as before (no KV section,
// no kv_ keys); with a check, the section holds its line; the check's legs are not server
// lifetimes.
func TestReportWithoutKV(t *testing.T) {
	rep := &Report{Study: ReportStudy{ID: 3, Name: "x", Kind: "capacity", Status: "complete"}, Legs: []StoredLeg{}, Selected: []SelectedPoint{},
		Envelope: []EnvelopeReport{}, Verdicts: []ReportVerdict{}, Pending: []string{}}
	var buf bytes.Buffer
	WriteReport(&buf, rep)
	js, _ := json.Marshal(rep)
	if strings.Contains(buf.String(), "KV cache") || bytes.Contains(js, []byte(`"kv_`)) {
		t.Errorf("no KV arm:\n%s\n%s", buf.String(), js)
	}
	AttachKVQuality(rep, kvPlan(), []study.KVCheck{{Model: "m", KV: "q8_0/q8_0", MeanKLD: 0.0042, Leg: "kv-quality/m/q8_0-q8_0", Lines: []int{7, 8, 9}}})
	buf.Reset()
	WriteReport(&buf, rep)
	out := buf.String()
	if !strings.Contains(out, "KV cache types: speed against quality") || !strings.Contains(out, "q8 (q8_0/q8_0 KV) vs f16: speed against f16 not measured; mean KLD 0.004200") ||
		!strings.Contains(out, "q4k: KL divergence not checked yet (`sparkbench capacity run 3` checks it)") {
		t.Errorf("with a check:\n%s", out)
	}
}
