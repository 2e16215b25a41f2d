package jsonlex

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Each failure: the offset and the message benchfmt has always given for it.
func TestErrors(t *testing.T) {
	cases := []struct {
		scan, in string
		off      int
		msg      string
	}{
		{"string", `"abc`, 0, "unterminated string"},
		{"string", `"abc\`, 5, "unterminated string"},
		{"string", `"\u12"`, 2, `short \u escape`},
		{"string", `"\u12x4"`, 5, `bad \u escape`},
		{"string", `"\uz"  `, 3, `bad \u escape`},
		{"string", `"\x"`, 2, `bad escape \x in string`},
		{"string", "\"\\\xff\"", 2, "bad escape \\\u00ff in string"},
		{"string", "\"a\tb\"", 2, "control character 0x09 in string"},
		{"string", `x`, 0, "expected a string, found 'x'"},
		{"number", `-x`, 1, "expected a number, found 'x'"},
		{"number", ``, 0, "expected a number, found end of input"},
		{"number", "\x01", 0, "expected a number, found byte 0x01"},
		{"number", `1.`, 2, "digit expected after decimal point"},
		{"number", `1.e5`, 2, "digit expected after decimal point"},
		{"number", `1e`, 2, "digit expected in exponent"},
		{"number", `-0E+x`, 4, "digit expected in exponent"},
		{"null", `nul`, 0, "expected null, found 'n'"},
		{"null", `true`, 0, "expected null, found 't'"},
		{"bool", `tru`, 0, "expected true, found 't'"},
		{"bool", `fals`, 0, "expected false, found 'f'"},
		{"bool", `nope`, 0, "expected true or false, found 'n'"},
		{"bool", ``, 0, "expected true or false, found end of input"},
		{"value", `{"a":1,}`, 7, "expected a quoted name, found '}'"},
		{"value", `{"a" 1}`, 5, "expected ':', found '1'"},
		{"value", `{"a":1 "b":2}`, 7, `expected ',' or '}', found '"'`},
		{"value", `[1 2]`, 3, "expected ',' or ']', found '2'"},
		{"value", `[1,]`, 3, "expected a value, found ']'"},
		{"value", `[`, 1, "expected a value, found end of input"},
		{"value", `[nul]`, 1, "expected null, found 'n'"},
		{"value", `{"a":[fals]}`, 6, "expected false, found 'f'"},
		{"value", `[01]`, 2, "expected ',' or ']', found '1'"},
		{"value", `[-]`, 2, "expected a number, found ']'"},
		{"value", `["\u00e9", "\q"]`, 13, `bad escape \q in string`},
		{"depth2", `[[[1]]]`, 3, "nested too deeply"},
		{"depth2", `[[ [ ]], [[ "x"]]]`, 12, "nested too deeply"},
	}
	for _, c := range cases {
		l := Lexer{Data: []byte(c.in)}
		var ok bool
		switch c.scan {
		case "string":
			_, _, ok = l.ScanString()
		case "number":
			_, ok = l.ScanNumber()
		case "null":
			ok = l.ScanNull()
		case "bool":
			_, ok = l.ScanBool()
		case "value":
			ok = l.SkipValue(100)
		case "depth2":
			ok = l.SkipValue(2)
		}
		e := l.Err()
		if ok || e.Off != c.off || e.Error() != c.msg || l.Pos != e.Off {
			t.Errorf("%s %q: ok %v, Pos %d, error at %d %q; want at %d %q", c.scan, c.in, ok, l.Pos, e.Off, e.Error(), c.off, c.msg)
		}
	}
}

func TestScanString(t *testing.T) {
	cases := []struct {
		in, content string
		flags       StrFlags
		plain       bool
	}{
		{`""`, "", 0, true},
		{`"abc" x`, "abc", 0, true},
		{`"a\"b"`, `a\"b`, Escaped, false},
		{`"é"`, "é", NonASCII, true},
		{"\"\xff\"", "\xff", NonASCII, false},
		{`"é\n"`, `é\n`, Escaped | NonASCII, false},
		{`"\u00e9\/"`, `\u00e9\/`, Escaped, false},
	}
	for _, c := range cases {
		l := Lexer{Data: []byte(c.in)}
		content, flags, ok := l.ScanString()
		if !ok || string(content) != c.content || flags != c.flags || Plain(content, flags) != c.plain ||
			l.Pos != len(c.content)+2 {
			t.Errorf("%q: %q %v %v plain %v, Pos %d", c.in, content, flags, ok, Plain(content, flags), l.Pos)
		}
	}
}

func TestSkipValueDepth(t *testing.T) {
	for _, c := range []struct {
		in  string
		max int
		ok  bool
	}{
		{`1`, 0, true},
		{`[]`, 0, true},
		{`{}`, 0, true},
		{`[1]`, 0, false},
		{`{"a":1}`, 0, false},
		{`{"a":[]}`, 1, true},
		{`{"a":[1]}`, 1, false},
		{strings.Repeat("[", 257) + strings.Repeat("]", 257), 256, true},
		{strings.Repeat("[", 258) + strings.Repeat("]", 258), 256, false},
	} {
		l := Lexer{Data: []byte(c.in)}
		if ok := l.SkipValue(c.max); ok != c.ok || ok && l.Pos != len(c.in) {
			t.Errorf("%.20q max %d: %v at %d (%v)", c.in, c.max, ok, l.Pos, l.Err())
		}
	}
}

func TestLiterals(t *testing.T) {
	l := Lexer{Data: []byte(" \t\r\n true,")}
	l.SkipSpace()
	if v, ok := l.ScanBool(); l.Pos != 9 || !v || !ok || l.Consume(';') || !l.Consume(',') {
		t.Fatalf("at %d: %v", l.Pos, l.Err())
	}
	if l.Peek() != 0 || l.Consume(',') || l.ScanNull() || l.Err().Found != -1 {
		t.Fatalf("at the end: %v", l.Err())
	}
	for in, want := range map[string]bool{"true": true, "false": false} {
		l := Lexer{Data: []byte(in + "]")}
		if v, ok := l.ScanBool(); !ok || v != want || l.Pos != len(in) {
			t.Errorf("ScanBool %s: %v %v at %d", in, v, ok, l.Pos)
		}
	}
	if d := Describe(l.Data, 1); d != "byte 0x09" {
		t.Fatalf("Describe: %s", d)
	}
}

// Scanning allocates nothing, on success or failure.
func TestAllocs(t *testing.T) {
	good := []byte(`{"a":[1,-2.5e3,true,false,null,"x\u00e9\n",{"b":{}}],"c":"é"}`)
	bad := []byte(`{"a":[1,-2.5e3,true,false,null,"x\u00e9\n",{"b":{}}],"c":"é`)
	n := testing.AllocsPerRun(100, func() {
		l := Lexer{Data: good}
		if !l.SkipValue(10) {
			t.Fatal(l.Err())
		}
		l = Lexer{Data: bad}
		if l.SkipValue(10) {
			t.Fatal("accepted")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzLexer compares the lexer's verdicts with encoding/json's: SkipValue with json.Valid,
// ScanString with decoding into a string, ScanNumber with json.Valid on a number.
func FuzzLexer(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,false,null,"x\u00e9\n",{"b":{}}]}`, `"\ud83d\ude00 é \xff"`,
		`-0.0e+00`, `01`, `1.`, `[1,]`, `{"a" 1}`, `"\u12"`, "\"a\tb\"", ` [ ] `, `nul`, `"abc\`, `[[[[[]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 9000 {
			return // encoding/json's nesting limit is 10000
		}
		valid := json.Valid(data)

		l := Lexer{Data: data}
		l.SkipSpace()
		start := l.Pos
		ok := l.SkipValue(1 << 20)
		checkErr(t, &l, ok, data)
		if ok && !json.Valid(data[start:l.Pos]) {
			t.Fatalf("SkipValue accepted %q of %q", data[start:l.Pos], data)
		}
		l.SkipSpace()
		if whole := ok && l.Pos == len(data); whole != valid {
			t.Fatalf("SkipValue %v (at %d, %v), json.Valid %v: %q", ok, l.Pos, l.Err(), valid, data)
		}

		if len(data) > 0 && data[0] == '"' {
			l := Lexer{Data: data}
			content, flags, ok := l.ScanString()
			checkErr(t, &l, ok, data)
			end := l.Pos
			l.SkipSpace()
			var s string
			err := json.Unmarshal(data, &s)
			if whole := ok && l.Pos == len(data); whole != (err == nil) {
				t.Fatalf("ScanString %v (at %d, %v), encoding/json %v: %q", ok, l.Pos, l.Err(), err, data)
			}
			if ok {
				if !json.Valid(data[:end]) {
					t.Fatalf("ScanString accepted %q of %q", data[:end], data)
				}
				if (flags&Escaped != 0) != (bytes.IndexByte(content, '\\') >= 0) ||
					(flags&NonASCII != 0) != (bytes.IndexFunc(content, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0) {
					t.Fatalf("flags %b for %q", flags, content)
				}
				if err == nil && Plain(content, flags) && string(content) != s {
					t.Fatalf("plain %q, encoding/json %q", content, s)
				}
			}
		}

		if len(data) > 0 && (data[0] == '-' || '0' <= data[0] && data[0] <= '9') {
			l := Lexer{Data: data}
			tok, ok := l.ScanNumber()
			checkErr(t, &l, ok, data)
			l.SkipSpace()
			if whole := ok && l.Pos == len(data); whole != valid {
				t.Fatalf("ScanNumber %v (at %d, %v), json.Valid %v: %q", ok, l.Pos, l.Err(), valid, data)
			}
			if ok {
				var n json.Number
				if err := json.Unmarshal(tok, &n); err != nil || string(n) != string(tok) {
					t.Fatalf("number %q: encoding/json %q %v", tok, n, err)
				}
				if _, err := strconv.ParseFloat(string(tok), 64); err != nil && err.(*strconv.NumError).Err != strconv.ErrRange {
					t.Fatalf("number %q: %v", tok, err)
				}
			}
		}
	})
}

// checkErr checks the lexer's error after a scan: none after a success, else one at an
// offset in the data with the byte found there.
func checkErr(t *testing.T, l *Lexer, ok bool, data []byte) {
	t.Helper()
	e := l.Err()
	if ok {
		if e.Reason != NoError {
			t.Fatalf("success with error %v", e)
		}
		return
	}
	found := -1
	if e.Off >= 0 && e.Off < len(data) {
		found = int(data[e.Off])
	}
	if e.Reason == NoError || e.Off < 0 || e.Off > len(data) || e.Found != found || l.Pos != e.Off || e.Error() == "" {
		t.Fatalf("failure %+v (Pos %d) on %q", e, l.Pos, data)
	}
}

func BenchmarkScanString(b *testing.B) {
	data := []byte(`"llama 7B Q4_0 on a Vulkan device, with some more text to scan through"`)
	for b.Loop() {
		l := Lexer{Data: data}
		if _, _, ok := l.ScanString(); !ok {
			b.Fatal(l.Err())
		}
	}
}

func BenchmarkSkipValue(b *testing.B) {
	data := []byte(`{"a":[1,-2.5e3,true,false,null,"x\u00e9\n",{"b":{}}],"c":"é","d":[1,2,3,4,5,6,7,8]}`)
	for b.Loop() {
		l := Lexer{Data: data}
		if !l.SkipValue(10) {
			b.Fatal(l.Err())
		}
	}
}
