package quant

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// FuzzDecodePlan: the ladder plan decoder never panics and places every refusal (line and
// column ≥ 1); a plan it accepts (decoded, defaulted, validated without errors) has a canonical
// form that decodes back to the same canonical bytes (the same SHA-256), and every number the
// input wrote at the top of speed and quality is kept, never replaced by a default.
func FuzzDecodePlan(f *testing.F) {
	if seed, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "quant-ladder.json")); err == nil {
		f.Add(seed)
	}
	sha := "0000000000000000000000000000000000000000000000000000000000000000"
	f.Add([]byte(`{"schema":"sparkbench.quant/v1","name":"x","reference":{"path":"m.gguf","sha256":"` + sha + `"},"quants":["Q8_0","Q4_0"],` +
		`"speed":{"depths":[0,512],"n_prompt":64,"n_gen":16,"reps":3,"threads":1},"quality":{"corpus":{"path":"c.txt","sha256":"` + sha + `"},"ctx":128,"chunks":2},` +
		`"rule":{"maximize":"tg@512","limits":{"kld_mean_max":0.01}}}`))
	f.Add([]byte(`{"schema":"sparkbench.quant/v1","name":"x","speed":{"reps":0},"quality":{"chunks":0}}`))
	f.Add([]byte(`{"name":"a","name":"b"}`))
	f.Add([]byte("{\"name\": \"caf\xe9\"}"))
	f.Add([]byte(`{"schema":"sparkbench.quant/v1"} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode("plan.json", data)
		if err != nil {
			if de, ok := err.(*study.DecodeError); ok && (de.Line < 1 || de.Col < 1) {
				t.Fatalf("decode error without a place: %v", err)
			}
			return
		}
		p.Defaults()
		if len(study.Errors(Validate(p, ValidateOptions{Types: []string{"Q8_0", "Q4_0", "Q4_K_M"}}))) > 0 {
			return
		}
		sum, canonical, err := p.SHA256()
		if err != nil {
			t.Fatalf("an accepted plan does not encode: %v", err)
		}
		q, err := Decode("canonical.json", canonical)
		if err != nil {
			t.Fatalf("the canonical form does not decode: %v\n%s", err, canonical)
		}
		q.Defaults()
		sum2, canonical2, err := q.SHA256()
		if err != nil || sum2 != sum || !bytes.Equal(canonical, canonical2) {
			t.Fatalf("the canonical form is not stable:\n%s\n%s", canonical, canonical2)
		}
		// Every number written in speed and quality is in the canonical form as written.
		var in, out map[string]any
		if json.Unmarshal(data, &in) != nil || json.Unmarshal(canonical, &out) != nil {
			return
		}
		for _, block := range []string{"speed", "quality"} {
			ib, _ := in[block].(map[string]any)
			ob, _ := out[block].(map[string]any)
			for k, v := range ib {
				n, isNum := v.(float64)
				if !isNum {
					continue
				}
				var got any
				for ok, ov := range ob { // encoding/json matches a field's name regardless of case
					if strings.EqualFold(ok, k) {
						got = ov
					}
				}
				if got != n {
					t.Fatalf("%s.%s written as %v is %v in the frozen plan", block, k, n, got)
				}
			}
		}
	})
}
