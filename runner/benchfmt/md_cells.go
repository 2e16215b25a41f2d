package benchfmt

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

func isEmptyCell(c string) bool {
	switch strings.ToLower(c) {
	case "", "-", "—", "–", "n/a", "na", "?":
		return true
	}
	return false
}

// setRate reads "561.10 ± 6.78", "561.10 +/- 6.78" or "561.10".
func setRate(r *Result, cell string) error {
	if isEmptyCell(cell) {
		return nil
	}
	mean, sd, hasSD := cell, "", false
	for _, sep := range []string{"±", "+/-", "+-"} {
		if a, b, ok := strings.Cut(cell, sep); ok {
			mean, sd, hasSD = a, b, true
			break
		}
	}
	m, err := parseLooseFloat(mean)
	if err != nil {
		return fmt.Errorf("t/s %q: expected \"mean ± sd\" or a number", cell)
	}
	r.setFloat(FAvgTs, m)
	if hasSD {
		s, err := parseLooseFloat(sd)
		if err != nil || s < 0 {
			return fmt.Errorf("t/s %q: the part after ± is not a standard deviation", cell)
		}
		r.setFloat(FStddevTs, s)
	}
	return nil
}

// parseLooseFloat reads a number from a hand table: thousands separators and a trailing
// unit ("t/s") are allowed.
func parseLooseFloat(s string) (float64, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimSuffix(s, "t/s"))
	s = strings.ReplaceAll(s, ",", "")
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

func setMDCell(r *Result, c mdColumn, cell string, intern map[string]string) error {
	switch c.field {
	case FModelSize:
		if isEmptyCell(cell) {
			return nil
		}
		v, err := parseSize(cell)
		if err != nil {
			return err
		}
		r.setInt(FModelSize, v)
		r.addExtraText("md_size", cell) // the table's rounded text; the bytes are approximate
		return nil
	case FModelNParams:
		if isEmptyCell(cell) {
			return nil
		}
		v, err := parseCount(cell)
		if err != nil {
			return err
		}
		r.setInt(FModelNParams, v)
		r.addExtraText("md_params", cell)
		return nil
	}
	if fields[c.field].typ != tString && isEmptyCell(cell) {
		return nil
	}
	return setFromText(r, c.field, cell, intern)
}

func (r *Result) addExtraText(k, v string) {
	if r.Extra == nil {
		r.Extra = map[string]json.RawMessage{}
	}
	r.Extra[k] = json.RawMessage(appendJSONString(nil, v))
}

// parseSize reads llama-bench's "0.63 MiB" / "17.28 GiB" (or plain bytes).
func parseSize(cell string) (int64, error) {
	num, unit := splitUnit(cell)
	v, err := parseLooseFloat(num)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: expected e.g. 17.28 GiB", cell)
	}
	mul := 1.0
	if unit != "" {
		m, ok := sizeUnits[strings.ToLower(unit)]
		if !ok {
			return 0, fmt.Errorf("size %q: unknown unit %q", cell, unit)
		}
		mul = m
	}
	if v*mul >= 9e18 {
		return 0, fmt.Errorf("size %q is too large", cell)
	}
	return int64(math.Round(v * mul)), nil
}

// parseCount reads llama-bench's "0.16 M" / "30.53 B" parameter counts.
func parseCount(cell string) (int64, error) {
	num, unit := splitUnit(cell)
	v, err := parseLooseFloat(num)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("params %q: expected e.g. 30.53 B", cell)
	}
	m, ok := countUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("params %q: unknown unit %q", cell, unit)
	}
	if v*m >= 9e18 {
		return 0, fmt.Errorf("params %q is too large", cell)
	}
	return int64(math.Round(v * m)), nil
}

func splitUnit(cell string) (num, unit string) {
	cell = strings.TrimSpace(cell)
	i := len(cell)
	for i > 0 {
		c := cell[i-1]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			i--
			continue
		}
		break
	}
	return strings.TrimSpace(cell[:i]), cell[i:]
}

// wideHeader drops a unit suffix from a wide table's test header: "tg128 (t/s)" -> "tg128".
func wideHeader(h string) string {
	if i := strings.IndexByte(h, '('); i > 0 {
		h = h[:i]
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(h), "t/s"))
}
