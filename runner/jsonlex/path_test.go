package jsonlex

import "testing"

// PathOffset finds a problem's field where the file wrote it, and nothing where it did not.
func TestPathOffset(t *testing.T) {
	data := []byte("{\n  \"schema\": \"s\",\n  \"Name\": \"2\",\n  \"models\": [\n    {\"id\": \"a\", \"path\": \"x.gguf\"},\n    {\"id\": \"b\", \"p\\u0061th\": \"a,b.gguf\"}\n  ]\n}\n")
	for _, c := range []struct {
		path      string
		line, col int
		ok        bool
	}{
		{"schema", 2, 13, true},
		{"name", 3, 11, true}, // encoding/json's match regardless of case
		{"models", 4, 13, true},
		{"models[0].path", 5, 25, true},
		{"models[1].path", 6, 30, true}, // an escaped key
		{"models[1].id", 6, 12, true},
		{"models[2].path", 0, 0, false},
		{"description", 0, 0, false},
		{"models[0].path.x", 0, 0, false},
	} {
		off, ok := PathOffset(data, c.path)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.path, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if l, col := LineCol(data, off); l != c.line || col != c.col {
			t.Errorf("%s: at %d:%d, want %d:%d", c.path, l, col, c.line, c.col)
		}
	}
}
