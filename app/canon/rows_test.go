package canon

import "testing"

func TestAppendRowLine(t *testing.T) {
	b := AppendRowLine(nil, 0, "result", []byte(`{"avg_ts":1.5,"model_filename":"/m <a>.gguf"}`))
	b = AppendRowLine(b, 1, "", []byte(`{}`))
	want := `{"seq":0,"status":"result","row":{"avg_ts":1.5,"model_filename":"/m <a>.gguf"}}` + "\n" + `{"seq":1,"status":"","row":{}}` + "\n"
	if string(b) != want {
		t.Fatalf("got %q\nwant %q", b, want)
	}
	// The status is written as Marshal writes a string.
	for _, s := range []string{"flagged", "a\"b", "<x>"} {
		m, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(AppendRowLine(nil, 7, s, []byte("{}"))); got != `{"seq":7,"status":`+string(m)+`,"row":{}}`+"\n" {
			t.Errorf("%q: %s", s, got)
		}
	}
}
