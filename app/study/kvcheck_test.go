package study

import (
	"slices"
	"testing"
)

func TestKVQualityGateValidation(t *testing.T) {
	has := func(probs []Problem, path string, sev Severity) bool {
		return slices.ContainsFunc(probs, func(p Problem) bool { return p.Path == path && p.Severity == sev })
	}
	p := &Plan{Schema: SchemaThroughput, Name: "x", KVQuality: &KVQualityGate{KLDMeanMax: 0}, Axes: Axes{KV: []KVType{{"f16", "f16"}, {"q8_0", "q8_0"}}}}
	if probs, _ := Validate(p, ValidateOptions{}); !has(probs, "kv_quality.kld_mean_max", SevError) || has(probs, "kv_quality", SevWarning) {
		t.Errorf("a zero limit: %v", probs)
	}
	p.KVQuality.KLDMeanMax, p.Axes.KV = 0.01, []KVType{{"f16", "f16"}}
	if probs, _ := Validate(p, ValidateOptions{}); has(probs, "kv_quality.kld_mean_max", SevError) || !has(probs, "kv_quality", SevWarning) {
		t.Errorf("only f16 caches: %v", probs)
	}
}

// TestAttachKVQuality: the speed of a cache type is its tg cell over the cell whose
// configuration differs only by the f16 cache; the gate passes at or below the limit.
func TestAttachKVQuality(t *testing.T) {
	rep := &Report{Results: []ReportCell{
		{Model: "m", Test: "tg32", Depth: 0, Config: "ub512 kv-f16/f16 t1", Mean: 100},
		{Model: "m", Test: "tg32", Depth: 0, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 110},
		{Model: "m", Test: "pp64", Depth: 0, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 500},
		{Model: "m", Test: "tg32", Depth: 512, Config: "ub512 kv-f16/f16 t1", Mean: 50},
		{Model: "m", Test: "tg32", Depth: 512, Config: "ub512 kv-q8_0/q8_0 t1", Mean: 40},
	}}
	checks := KVQualityOf([]KVCheck{{Model: "m", KV: "q8_0/q8_0", MeanKLD: 0.002}, {Model: "m", KV: "q4_0/q4_0", MeanKLD: 0.02}})
	AttachKVQuality(rep, checks, &KVQualityGate{KLDMeanMax: 0.01})
	q := rep.KVQuality
	if len(q) != 2 || len(q[0].Speed) != 2 || q[0].Speed[0].Ratio != 1.1 || q[0].Speed[1].Ratio != 0.8 || q[0].Gate != "pass" || q[1].Gate != GateKLDAboveMax || len(q[1].Speed) != 0 {
		t.Fatalf("%+v", q)
	}
	if latest := LatestKVChecks([]KVCheck{{Model: "m", KV: "a", MeanKLD: 1}, {Model: "m", KV: "b"}, {Model: "m", KV: "a", MeanKLD: 2}}); len(latest) != 2 || latest[1].MeanKLD != 2 {
		t.Fatalf("latest %+v", latest)
	}
}
