package jsonlex

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

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
		{`{"a": 1,}`, StrictSyntax, 8, ""},
		{`{"a": "x"}`, StrictType, 9, ""},
		{`{"a": 1`, StrictUnclosed, 7, ""},
		{`{"a": 1, "c": 2}`, StrictUnknown, 9, `"c"`}, // the key itself, not where the decoder stopped
		{`{"a": 1} {"a": 2}`, StrictTrailing, 9, ""},
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

// Duplicate keys and invalid UTF-8 are refused when the Input checks are asked for (a file a
// person wrote), each at its own place; without them (files sparkbench wrote itself, old ones
// among them) encoding/json's behaviour is kept.
func TestDecodeStrictInputChecks(t *testing.T) {
	type inner struct {
		X int               `json:"x"`
		M map[string]string `json:"m"`
	}
	type obj struct {
		Name  string  `json:"name"`
		Hosts []inner `json:"hosts"`
	}
	cases := []struct {
		in            string
		kind          StrictKind
		offset, first int64
		field         string
	}{
		{`{"name": "a", "name": "b"}`, StrictDuplicate, 14, 1, `"name"`},
		{`{"name": "a", "NAME": "b"}`, StrictDuplicate, 14, 1, `"NAME"`}, // one field, two spellings
		{`{"hosts": [{"x": 1}, {"x": 2, "x": 3}]}`, StrictDuplicate, 30, 22, `"x"`},
		{`{"hosts": [{"m": {"k": "1", "k": "2"}}]}`, StrictDuplicate, 28, 18, `"k"`},
		{`{"na\u006de": "a", "name": "b"}`, StrictDuplicate, 19, 1, `"name"`}, // the same key escaped
		{"{\"name\": \"a\xffb\"}", StrictUTF8, 11, 0, ""},
		{"{\"name\": \"\xc3\"}", StrictUTF8, 10, 0, ""}, // a cut sequence
	}
	for _, c := range cases {
		var v obj
		e := DecodeStrict([]byte(c.in), &v, Input)
		if e == nil || e.Kind != c.kind || e.Offset != c.offset || e.First != c.first || e.Field != c.field || e.Error() == "" {
			t.Errorf("%q: %+v; want kind %d at %d (first %d) field %s", c.in, e, c.kind, c.offset, c.first, c.field)
		}
		if e := DecodeStrict([]byte(c.in), &v); e != nil {
			t.Errorf("%q without the checks: %v", c.in, e)
		}
	}
	var v obj
	if e := DecodeStrict([]byte(`{"name": "é", "hosts": [{"x": 1, "m": {"k": "1", "K": "2"}}, {"x": 2}]}`), &v, Input); e != nil {
		t.Fatalf("map keys that differ in case, one key per object: %v", e)
	}
}

// DecodeFile words every refusal at FILE:LINE:COL.
func TestDecodeFileSaysWhere(t *testing.T) {
	type hosts struct {
		Schema string `json:"schema"`
		Hosts  []struct {
			Name string `json:"name"`
		} `json:"hosts"`
	}
	for _, c := range []struct{ in, want string }{
		{"", "f.json:1:1: empty file; a hosts file is a JSON object (see docs/fleet.md)"},
		{"{\"schema\": \"s\",\n \"hostz\": []}", `f.json:2:2: unknown field "hostz"; check its spelling against docs/fleet.md`},
		{"{\"hosts\": [\n  {\"name\": \"a\", \"nmae\": \"b\"}]}", `f.json:2:17: unknown field "nmae"`},
		{"{\"schema\": \"s\"}\njunk", "f.json:2:1: trailing data after the JSON object; a hosts file holds exactly one JSON object"},
		{"{\"schema\": \"s\"} {}", "f.json:1:17: trailing data"},
		{"{\"schema\": \"s\",\n\"hosts\": [", "f.json:2:11: the JSON ends before the object is closed"},
		{"{\"schema\": 1}", "f.json:1:13: schema: want string, got JSON number"},
		{"{\"schema\": \"s\",\n \"schema\": \"t\"}", `f.json:2:2: key "schema" given twice in one object (first at line 1, column 2); give it once`},
		{"{\"schema\": \"s\xfe\"}", "f.json:1:14: byte 0xfe is not UTF-8; save the file as UTF-8"},
		{"\xef\xbb\xbf{\"schema\": \"s\"}", "f.json:1:1: the file starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON does not allow; save it as UTF-8 without a BOM"},
		{"{\"schema\": \"s\",}", "f.json:1:16: invalid JSON: invalid character '}' looking for beginning of object key string"},
	} {
		var v hosts
		err := DecodeFile("f.json", []byte(c.in), &v, "a hosts file", "docs/fleet.md")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %s", c.in, err, c.want)
		}
	}
}

// FuzzDecodeStrict: the one strict decoder never panics; with the Input checks it accepts only
// UTF-8 without a key given twice, and whatever it accepts decodes the same without them; every
// refusal has a place inside the data.
func FuzzDecodeStrict(f *testing.F) {
	type host struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
	}
	type file struct {
		Schema string `json:"schema"`
		Hosts  []host `json:"hosts"`
	}
	for _, s := range []string{`{"schema": "s", "hosts": [{"name": "a", "labels": {"k": "v"}}]}`, `{"schema": "s"} x`,
		`{"schema": "s", "SCHEMA": "t"}`, "{\"schema\": \"\xff\"}", `{"hosts": [{"nmae": 1}]}`, `{"a":`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict, plain file
		e := DecodeStrict(data, &strict, Input)
		if e != nil {
			if e.Offset < 0 || e.Offset > int64(len(data)) || e.Error() == "" {
				t.Fatalf("refusal %+v outside the data (%d bytes)", e, len(data))
			}
			if err := DecodeFile("f.json", data, &strict, "a file", "docs"); err == nil || !strings.HasPrefix(err.Error(), "f.json:") {
				t.Fatalf("DecodeFile: %v", err)
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatal("accepted bytes that are not UTF-8")
		}
		if _, _, _, dup := duplicateKey(data, reflect.TypeOf(&strict)); dup {
			t.Fatal("accepted a key given twice")
		}
		if e := DecodeStrict(data, &plain); e != nil || !reflect.DeepEqual(strict, plain) {
			t.Fatalf("without the checks: %v, %+v vs %+v", e, plain, strict)
		}
	})
}
