package quantfmt

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// QuantType is one entry of the list `llama-quantize --help` prints under "allowed
// quantization types", e.g.
//
//	 2  or  Q4_0    :  4.34G, +0.4685 ppl @ Llama-3-8B
//	15  or  Q4_K_M  :  4.58G, +0.1754 ppl @ Llama-3-8B
//	30  or  IQ4_XS  :  4.25 bpw non-linear quantization
//	12  or  Q3_K    : alias for Q3_K_M
//	        COPY    : only copy tensors, no quantizing
//
// The figures in the description are the tool's own reference numbers (a size and a
// perplexity change measured once on the named model, or a nominal bits per weight); they say
// nothing about the model being quantized.
type QuantType struct {
	Name     string   `json:"name"`                // as the build spells it: Q4_K_M
	ID       int      `json:"id"`                  // the llama_ftype number; -1 when the list gives none (COPY)
	Desc     string   `json:"desc"`                // the text after the colon, spaces trimmed
	BPW      *float64 `json:"bpw,omitempty"`       // "4.25 bpw …": nominal bits per weight
	SizeG    *float64 `json:"size_g,omitempty"`    // "4.58G": the reference model's size in GB
	PPLDelta *float64 `json:"ppl_delta,omitempty"` // "+0.1754 ppl": the reference perplexity change
	RefModel string   `json:"ref_model,omitempty"` // "@ Llama-3-8B": the model the figures are of
	AliasOf  string   `json:"alias_of,omitempty"`  // "alias for Q3_K_M"
	Line     int      `json:"line"`                // 1-based line of the help text
}

// QuantTypes is a build's list, in the order the tool prints it.
type QuantTypes []QuantType

var (
	typesHeaderRE = regexp.MustCompile(`(?i)allowed quantization types`)
	typeLineRE    = regexp.MustCompile(`^\s*(?:(\d+)\s+or\s+)?([A-Za-z][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$`)
	bpwRE         = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*bpw\b`)
	sizeGRE       = regexp.MustCompile(`^(\d+(?:\.\d+)?)G\b`)
	pplDeltaRE    = regexp.MustCompile(`([-+]\d+(?:\.\d+)?)\s*ppl\b`)
	refModelRE    = regexp.MustCompile(`@\s*(\S.*?)\s*$`)
	aliasRE       = regexp.MustCompile(`(?i)^alias for\s+(\S+)`)
)

// ParseQuantizeHelp reads the quant types from llama-quantize's usage text. In build 11669
// `llama-quantize --help` and `llama-quantize` with no arguments print the same text on
// stdout and exit 1; the list follows a line "allowed quantization types" between rules of
// dashes. An error says the text holds no such list.
func ParseQuantizeHelp(text string) (QuantTypes, error) {
	lines := strings.Split(text, "\n")
	start := -1
	for i, l := range lines {
		if typesHeaderRE.MatchString(l) {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no \"allowed quantization types\" list in the text (%d lines): is it the output of llama-quantize --help?", len(lines))
	}
	var out QuantTypes
	for i := start; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r")
		t := strings.TrimSpace(l)
		if t == "" || strings.Trim(t, "-=") == "" {
			continue
		}
		m := typeLineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		qt := QuantType{Name: m[2], ID: -1, Desc: m[3], Line: i + 1}
		if m[1] != "" {
			if id, err := strconv.Atoi(m[1]); err == nil {
				qt.ID = id
			}
		}
		describe(&qt)
		out = append(out, qt)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the \"allowed quantization types\" list (line %d) names no type: is it the output of llama-quantize --help?", start)
	}
	return out, nil
}

func describe(qt *QuantType) {
	f := func(re *regexp.Regexp) *float64 {
		if m := re.FindStringSubmatch(qt.Desc); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				return &v
			}
		}
		return nil
	}
	qt.BPW, qt.SizeG, qt.PPLDelta = f(bpwRE), f(sizeGRE), f(pplDeltaRE)
	if m := refModelRE.FindStringSubmatch(qt.Desc); m != nil {
		qt.RefModel = m[1]
	}
	if m := aliasRE.FindStringSubmatch(qt.Desc); m != nil {
		qt.AliasOf = m[1]
	}
}

// Names are the types' names in the tool's order.
func (ts QuantTypes) Names() []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// Lookup finds a type by name, case-insensitively ("q4_k_m" is Q4_K_M), or by its number as
// llama-quantize also accepts it ("15"; where an alias shares the number, the type it stands
// for). An unknown name is an *UnknownTypeError listing the valid ones.
func (ts QuantTypes) Lookup(name string) (QuantType, error) {
	want := strings.TrimSpace(name)
	for _, t := range ts {
		if strings.EqualFold(t.Name, want) {
			return t, nil
		}
	}
	if id, err := strconv.Atoi(want); err == nil && id >= 0 {
		var alias *QuantType
		for i, t := range ts {
			if t.ID != id {
				continue
			}
			if t.AliasOf == "" {
				return t, nil
			}
			if alias == nil {
				alias = &ts[i]
			}
		}
		if alias != nil {
			return *alias, nil
		}
	}
	return QuantType{}, &UnknownTypeError{Name: name, Valid: ts.Names()}
}

// UnknownTypeError is a quant type the build does not list.
type UnknownTypeError struct {
	Name  string   `json:"name"`
	Valid []string `json:"valid"` // the build's names, in its order
}

func (e *UnknownTypeError) Error() string {
	if len(e.Valid) == 0 {
		return fmt.Sprintf("unknown quant type %q, and the build's llama-quantize --help listed no types to choose from: check the llama.cpp build", e.Name)
	}
	return fmt.Sprintf("unknown quant type %q: this build's llama-quantize knows %s (case does not matter); pick one of them",
		e.Name, strings.Join(e.Valid, ", "))
}
