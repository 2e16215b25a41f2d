package study

import (
	"encoding/json"
	"strings"
)

// GivenPaths lists which of the dotted JSON paths ("speed.reps", "gates.cv_tg") a plan
// document writes, whatever their value: a kind's Defaults fills only the fields the file left
// out, so that an explicit zero or empty list is kept, or refused with its allowed range, and
// never replaced by a default.
func GivenPaths(data []byte, paths []string) map[string]bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	out := map[string]bool{}
	for _, path := range paths {
		m := doc
		keys := strings.Split(path, ".")
		for i, k := range keys {
			raw, ok := m[k]
			if !ok {
				break
			}
			if i == len(keys)-1 {
				out[path] = true
				break
			}
			m = nil
			if json.Unmarshal(raw, &m) != nil || m == nil {
				break
			}
		}
	}
	return out
}
