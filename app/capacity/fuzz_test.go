package capacity

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sparkbench/app/canon"
	"sparkbench/app/study"
)

// FuzzDecodePlan: the plan decoder never panics; a plan it accepts (decoded, defaulted,
// validated without errors) has a canonical form that decodes back to the same canonical
// bytes (the same SHA-256), and that states every value the plan wrote: each top-level and
// limits field present in the input with a value appears in the canonical form unchanged.
func FuzzDecodePlan(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(seedDir, "plan.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"schema":"sparkbench.capacity/v1","name":"x","candidates":[{"id":"a","label":"A","model":{"path":"m.gguf","sha256":"` + sha0 + `"}}],"slots":[1,2],"clients":[1],"prompt_plan":{"path":"p.json","sha256":"` + sha0 + `"},"limits":{"ttft_ms_p95_max":1,"e2e_ms_p95_max":1,"peak_rss_mib_max":1}}`))
	f.Add([]byte(`{"schema":"sparkbench.concurrency/v1","name":"x","arm_axis":"kv","candidates":[{"id":"a","label":"A","arm":"f16","model":{"path":"m.gguf","sha256":"` + sha0 + `"},"server_flags":null}],"slots":[1],"measured":0,"warmups":null,"prompt_plan":{"path":"p.json","sha256":"` + sha0 + `"},"limits":{"ttft_ms_p95_max":1,"e2e_ms_p95_max":1,"peak_rss_mib_max":1,"completion_rate_min":0.5},"knee_threshold":3}`))
	f.Add([]byte(`{"Measured": 3, "measured": 4, "limits": {"slots": [1]}}`))
	f.Add([]byte("{\"name\": \"x\",\n \"slot\": [1]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode("plan.json", data)
		if err != nil {
			if de, ok := err.(*study.DecodeError); ok && (de.Line < 1 || de.Col < 1) {
				t.Fatalf("decode error without a place: %v", err)
			}
			return
		}
		p.Defaults()
		if len(study.Errors(Validate(p, ValidateOptions{}))) > 0 {
			return
		}
		sum, canonical, err := p.SHA256()
		if err != nil {
			t.Fatalf("accepted plan does not encode: %v", err)
		}
		q, err := Decode("canonical.json", canonical)
		if err != nil {
			t.Fatalf("canonical form does not decode: %v\n%s", err, canonical)
		}
		q.Defaults()
		if errs := study.Errors(Validate(q, ValidateOptions{})); len(errs) > 0 {
			t.Fatalf("canonical form refused: %v\n%s", errs, canonical)
		}
		sum2, canonical2, err := q.SHA256()
		if err != nil || sum2 != sum || !bytes.Equal(canonical, canonical2) {
			t.Fatalf("canonical form changed on reading back (%v):\n%s\n%s", err, canonical, canonical2)
		}
		checkWrittenKept(t, data, canonical)
	})
}

// checkWrittenKept: every top-level and limits value the input wrote (a non-null value under
// a key that no other key of its object matches when case is ignored) is in the canonical form.
func checkWrittenKept(t *testing.T, input, canonical []byte) {
	var in, out map[string]any
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if dec.Decode(&in) != nil {
		return
	}
	dec = json.NewDecoder(bytes.NewReader(canonical))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	compare := func(at string, in, out map[string]any) {
		for k, v := range in {
			if v == nil || ambiguous(in, k) {
				continue
			}
			if !scalarOrScalars(v) {
				continue // objects and lists of objects: canonical forms add defaults inside
			}
			got, ok := out[k]
			if !ok {
				if isZeroOmitted(v) {
					continue // omitempty fields: a written zero or empty value has no default
				}
				t.Fatalf("%s%s written as %v, missing from the canonical form", at, k, v)
			}
			a, err1 := canon.Marshal(v)
			b, err2 := canon.Marshal(got)
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Fatalf("%s%s written as %s, canonical %s", at, k, a, b)
			}
		}
	}
	compare("", in, out)
	if li, ok := in["limits"].(map[string]any); ok && !ambiguous(in, "limits") {
		if lo, ok := out["limits"].(map[string]any); ok {
			compare("limits.", li, lo)
		}
	}
}

// ambiguous: another key of m names the same field for encoding/json (case folded).
func ambiguous(m map[string]any, k string) bool {
	for o := range m {
		if o != k && strings.EqualFold(o, k) {
			return true
		}
	}
	return !isExactField(k)
}

// isExactField: k is spelled as the plan's own JSON names (a case variant decodes into the
// field, but the canonical form spells it the plan's way).
func isExactField(k string) bool {
	_, ok := canon.JSONFields(typePlan)[k]
	if ok {
		return true
	}
	_, ok = canon.JSONFields(typeLimits)[k]
	return ok
}

var (
	typePlan   = reflect.TypeFor[Plan]()
	typeLimits = reflect.TypeFor[Limits]()
)

func scalarOrScalars(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return false
	case []any:
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				return false
			}
		}
	}
	return true
}

func isZeroOmitted(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case []any:
		return len(x) == 0
	case bool:
		return !x
	}
	return false
}
