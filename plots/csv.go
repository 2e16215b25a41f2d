package plots

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// CSV is a chart's data as comma-separated values: one row per point of each series, the
// series' label first, then the point's fields (named as in the chart's JSON input, in
// alphabetical order; a nested value as JSON). It is made from the same input the chart draws,
// so the rows are the chart's points. A chart whose input has no series of points (the
// envelope grid, the Pareto and timeline charts) is an error: copy its JSON input instead.
func CSV(c Chart) ([]byte, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var in struct {
		Series []map[string]json.RawMessage `json:"series"`
	}
	if err := json.Unmarshal(data, &in); err != nil || len(in.Series) == 0 {
		return nil, fmt.Errorf("the %s chart's data has no series of points: copy its JSON input instead", c.Kind())
	}
	type row struct {
		label string
		point map[string]json.RawMessage
	}
	var rows []row
	var keys []string
	for _, s := range in.Series {
		var label string
		_ = json.Unmarshal(s["label"], &label)
		var points []map[string]json.RawMessage
		if err := json.Unmarshal(s["points"], &points); err != nil {
			return nil, fmt.Errorf("the %s chart's series have no points: copy its JSON input instead", c.Kind())
		}
		for _, p := range points {
			for k := range p {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
			rows = append(rows, row{label, p})
		}
	}
	slices.Sort(keys)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(append([]string{"series"}, keys...))
	for _, r := range rows {
		rec := []string{r.label}
		for _, k := range keys {
			rec = append(rec, csvValue(r.point[k]))
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// csvValue is a JSON value as a CSV field: strings unquoted, numbers and booleans as written,
// absent or null empty, anything else as its JSON.
func csvValue(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var f float64
	if json.Unmarshal(v, &f) == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(v)
}
