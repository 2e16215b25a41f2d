package quantfmt

import (
	"errors"
	"strings"
	"testing"
)

// The list of the real `llama-quantize --help` (build 11669, captured through the pty): every
// entry, its number and figures read as printed, each tracing to its line.
func TestParseQuantizeHelp(t *testing.T) {
	text, lines := fixture(t, "quantize-help")
	ts, err := ParseQuantizeHelp(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 39 {
		t.Fatalf("%d types, want 39: %v", len(ts), ts.Names())
	}
	f := func(v float64) *float64 { return &v }
	want := map[string]QuantType{
		"Q1_0":   {ID: 40, BPW: f(1.125)},
		"Q4_0":   {ID: 2, SizeG: f(4.34), PPLDelta: f(0.4685), RefModel: "Llama-3-8B"},
		"Q4_K_M": {ID: 15, SizeG: f(4.58), PPLDelta: f(0.1754), RefModel: "Llama-3-8B"},
		"Q3_K":   {ID: 12, AliasOf: "Q3_K_M"},
		"IQ4_XS": {ID: 30, BPW: f(4.25)},
		"BF16":   {ID: 32, SizeG: f(14.00), PPLDelta: f(-0.0050), RefModel: "Mistral-7B"},
		"F32":    {ID: 0, SizeG: f(26.00), RefModel: "7B"},
		"COPY":   {ID: -1},
		"Q8_0":   {ID: 7, SizeG: f(7.96), PPLDelta: f(0.0026), RefModel: "Llama-3-8B"},
	}
	eq := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	for _, qt := range ts {
		raw := lines[qt.Line-1]
		if !strings.Contains(raw, " "+qt.Name+" ") || !strings.Contains(raw, qt.Desc) {
			t.Errorf("%s: line %d is %q", qt.Name, qt.Line, raw)
		}
		w, ok := want[qt.Name]
		if !ok {
			continue
		}
		delete(want, qt.Name)
		if qt.ID != w.ID || !eq(qt.BPW, w.BPW) || !eq(qt.SizeG, w.SizeG) || !eq(qt.PPLDelta, w.PPLDelta) || qt.RefModel != w.RefModel || qt.AliasOf != w.AliasOf {
			t.Errorf("%s: %+v, want %+v", qt.Name, qt, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
	if _, err := ParseQuantizeHelp("usage: llama-bench [options]\n  -m FILE\n"); err == nil {
		t.Error("a text without the list parsed")
	}
}

func TestQuantTypesLookup(t *testing.T) {
	text, _ := fixture(t, "quantize-help")
	ts, err := ParseQuantizeHelp(text)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"Q4_K_M": "Q4_K_M", "q4_k_m": "Q4_K_M", " iq4_xs ": "IQ4_XS", "2": "Q4_0", "12": "Q3_K_M", "15": "Q4_K_M", "copy": "COPY"} {
		got, err := ts.Lookup(in)
		if err != nil || got.Name != want {
			t.Errorf("Lookup(%q) = %s, %v; want %s", in, got.Name, err, want)
		}
	}
	for _, bad := range []string{"Q9_9", "", "99", "-1", "Q4_K_M2"} {
		_, err := ts.Lookup(bad)
		var ue *UnknownTypeError
		if !errors.As(err, &ue) || ue.Name != bad || len(ue.Valid) != 39 {
			t.Fatalf("Lookup(%q): %v", bad, err)
		}
		msg := err.Error()
		for _, name := range []string{"Q4_0", "Q4_K_M", "IQ4_XS", "Q8_0", "COPY"} {
			if !strings.Contains(msg, name) {
				t.Errorf("Lookup(%q): %q does not list %s", bad, msg, name)
			}
		}
	}
	if msg := (&UnknownTypeError{Name: "x"}).Error(); !strings.Contains(msg, "listed no types") {
		t.Errorf("no list: %q", msg)
	}
}
