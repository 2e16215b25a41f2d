package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// FuzzDecodePlan: the throughput plan decoder never panics, and a plan it accepts (decoded,
// defaulted and valid) means what was written: its canonical form decodes back to the same
// canonical bytes, and every value the file wrote is in the canonical form (a written zero may
// be left out only where leaving it out means the same: a field without a default).
func FuzzDecodePlan(f *testing.F) {
	for _, name := range []string{"valid.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`"reps": 3`), []byte(`"reps": 3, "ubatch": []`), 1))
		f.Add(bytes.Replace(b, []byte(`"split": "per_depth"`), []byte(`"split": "per_depth", "gates": {"cv_tg": 0}, "retries": 0`), 1))
	}
	f.Add([]byte(`{"schema":"sparkbench.throughput/v1"}`))
	if b, err := os.ReadFile(filepath.Join("testdata", "valid.json")); err == nil {
		f.Add(bytes.Replace(b, []byte(`"name"`), []byte(`"Name"`), 1)) // a key in another case
	}
	modelPath := regexp.MustCompile(`"path"\s*:\s*"([^"]*)"`)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Model files are read: only the test models, never whatever path the fuzzer writes.
		for _, m := range modelPath.FindAllSubmatch(data, -1) {
			if !strings.HasPrefix(string(m[1]), "../../../testdata/models/") || strings.Contains(string(m[1])[len("../../../testdata/models/"):], "/") {
				return
			}
		}
		p, err := Decode("fuzz.json", data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Line < 1 || de.Col < 1 {
				t.Fatalf("decode error without a location: %v", err)
			}
			return
		}
		p.Defaults()
		if probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata"}); len(Errors(probs)) > 0 {
			return
		}
		sum, canonical, err := p.SHA256()
		if err != nil {
			return // a value JSON cannot carry (NaN cannot be written, so this is unreachable)
		}
		q, err := Decode("canonical", canonical)
		if err != nil {
			t.Fatalf("canonical form does not decode: %v\n%s", err, canonical)
		}
		q.Defaults()
		if sum2, _, _ := q.SHA256(); sum2 != sum {
			t.Fatalf("canonical form is not stable:\n%s", canonical)
		}
		var written, canon any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&written) != nil {
			return
		}
		dec = json.NewDecoder(bytes.NewReader(canonical))
		dec.UseNumber()
		if err := dec.Decode(&canon); err != nil {
			t.Fatal(err)
		}
		if path, ok := sameWritten("", written, canon); !ok {
			t.Fatalf("the accepted plan's canonical form differs from what was written at %s:\nwritten   %s\ncanonical %s", path, data, canonical)
		}
	})
}

// sameWritten reports whether every value of written is in canon at the same path (numbers
// compared as numbers); a written zero value that canon leaves out is the same unless the
// field is one Defaults fills.
func sameWritten(path string, written, canon any) (string, bool) {
	switch w := written.(type) {
	case map[string]any:
		c, ok := canon.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			sub := strings.TrimPrefix(path+"."+k, ".")
			cv, present := c[k]
			if !present {
				// encoding/json matches a key to a field ignoring case ("Name" is "name"); the
				// canonical form spells it the plan's way.
				for ck, v := range c {
					if strings.EqualFold(ck, k) {
						cv, present = v, true
					}
				}
			}
			if !present {
				if isZeroJSON(v) && !defaulted(sub) {
					continue
				}
				return sub, false
			}
			if at, ok := sameWritten(sub, v, cv); !ok {
				return at, false
			}
		}
		return path, true
	case []any:
		c, ok := canon.([]any)
		if !ok || len(c) != len(w) {
			return path, false
		}
		for i := range w {
			if at, ok := sameWritten(path+"[]", w[i], c[i]); !ok {
				return at, false
			}
		}
		return path, true
	case json.Number:
		c, ok := canon.(json.Number)
		if !ok {
			return path, false
		}
		a, err1 := w.Float64()
		b, err2 := c.Float64()
		return path, err1 == nil && err2 == nil && a == b
	default:
		return path, written == canon
	}
}

func defaulted(path string) bool {
	if strings.HasSuffix(path, "noise_floor") {
		return true
	}
	for _, f := range defaultedFields {
		if f == path {
			return true
		}
	}
	return false
}

func isZeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
