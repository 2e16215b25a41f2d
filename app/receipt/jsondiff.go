package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"sparkbench/app/canon"
)

// FigureDiff is one figure of a source file that differs from what the rows give.
type FigureDiff struct {
	Path      string // JSON path: cells[3].word
	Has, Give string // the values as JSON
}

// JSONDiffs lists where held and want (values encoding/json accepts, or JSON bytes) differ,
// leaf by leaf, at most limit: each with its path and both values as canonical JSON.
func JSONDiffs(held, want any, limit int) ([]FigureDiff, error) {
	decode := func(v any) (any, error) {
		b, err := canon.Marshal(v)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var out any
		err = dec.Decode(&out)
		return out, err
	}
	h, err := decode(held)
	if err != nil {
		return nil, err
	}
	w, err := decode(want)
	if err != nil {
		return nil, err
	}
	var out []FigureDiff
	walkDiff(h, w, "", &out, limit)
	return out, nil
}

func walkDiff(h, w any, path string, out *[]FigureDiff, limit int) {
	if len(*out) >= limit {
		return
	}
	text := func(v any) string {
		if v == nil {
			return "absent"
		}
		b, _ := canon.Marshal(v)
		return clip(string(b))
	}
	hm, hok := h.(map[string]any)
	wm, wok := w.(map[string]any)
	if hok && wok {
		keys := slices.Sorted(maps.Keys(hm))
		for k := range wm {
			if _, ok := hm[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walkDiff(hm[k], wm[k], p, out, limit)
		}
		return
	}
	ha, hok := h.([]any)
	wa, wok := w.([]any)
	if hok && wok {
		for i := range min(len(ha), len(wa)) {
			walkDiff(ha[i], wa[i], fmt.Sprintf("%s[%d]", path, i), out, limit)
		}
		if len(ha) != len(wa) && len(*out) < limit {
			*out = append(*out, FigureDiff{Path: path, Has: fmt.Sprintf("%d entries", len(ha)), Give: fmt.Sprintf("%d entries", len(wa))})
		}
		return
	}
	if text(h) != text(w) {
		*out = append(*out, FigureDiff{Path: path, Has: text(h), Give: text(w)})
	}
}
