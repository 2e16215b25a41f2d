package canon

import "testing"

func TestCanonicalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b":1,"a":[3,2,{"z":null,"y":true}]}`, `{"a":[3,2,{"y":true,"z":null}],"b":1}`},
		{` { "x" : 1.50 , "y": 15e-1, "z": 1e2 } `, `{"x":1.5,"y":1.5,"z":100}`},
		{`{"big":123456789012345678901234567890}`, `{"big":123456789012345678901234567890}`},
		{`{"s":"<a&b> é \u00e9 \n"}`, `{"s":"<a&b> é é \n"}`},
		{`{"é":1,"e":2,"Z":3}`, `{"Z":3,"e":2,"é":1}`},
	}
	for _, c := range cases {
		got, err := Canonicalize([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if _, err := Canonicalize([]byte(`{"a":1} {"b":2}`)); err == nil {
		t.Error("trailing document must fail")
	}
	h1, _, _ := SHA256(map[string]any{"a": 1, "b": []int{1, 2}})
	h2, _, _ := SHA256(struct {
		B []int `json:"b"`
		A int   `json:"a"`
	}{[]int{1, 2}, 1})
	if h1 != h2 || len(h1) != 64 {
		t.Errorf("struct and map of the same content must hash alike: %s %s", h1, h2)
	}
}
