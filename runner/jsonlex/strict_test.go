package jsonlex

import "testing"

// Each refusal of the one strict decoder, with where it is.
func TestDecodeStrictKinds(t *testing.T) {
	type obj struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	cases := []struct {
		in     string
		kind   StrictKind
		offset int64
		field  string
	}{
		{``, StrictEmpty, 0, ""},
		{"  \n ", StrictEmpty, 0, ""},
		{`{"a": 1,}`, StrictSyntax, 9, ""},
		{`{"a": "x"}`, StrictType, 9, ""},
		{`{"a": 1`, StrictUnclosed, 7, ""},
		{`{"a": 1, "c": 2}`, StrictUnknown, 16, `"c"`},
		{`{"a": 1} {"a": 2}`, StrictTrailing, 10, ""},
		{`{"a": 1} x`, StrictTrailing, 9, ""},
	}
	for _, c := range cases {
		var v obj
		e := DecodeStrict([]byte(c.in), &v)
		if e == nil || e.Kind != c.kind || e.Offset != c.offset || e.Field != c.field || e.Error() == "" {
			t.Errorf("%q: %+v; want kind %d at %d field %q", c.in, e, c.kind, c.offset, c.field)
		}
	}
	var v obj
	if e := DecodeStrict([]byte(`{"a": 7, "b": "x"}`+"\n"), &v); e != nil || v.A != 7 || v.B != "x" {
		t.Fatalf("a good object: %+v %+v", e, v)
	}
	if l, c := LineCol([]byte("ab\ncd"), 4); l != 2 || c != 2 {
		t.Fatalf("LineCol = %d:%d, want 2:2", l, c)
	}
}
