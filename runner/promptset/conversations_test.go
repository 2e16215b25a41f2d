package promptset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeConversations(t *testing.T) {
	good := `{"id": "a", "turns": [{"user": "Hi", "assistant": "Hello"}, {"user": "Bye", "n_predict": 8}]}
{"turns": [{"user": "Only one"}]}
`
	cs, err := DecodeConversations("c.jsonl", []byte(good))
	if err != nil || len(cs) != 2 || cs[0].ID != "a" || len(cs[0].Turns) != 2 || cs[0].Turns[1].NPredict != 8 || cs[1].Line != 2 {
		t.Fatalf("%+v %v", cs, err)
	}
	if cs[0].Name("c.jsonl") != `c.jsonl:1 (conversation "a")` || cs[1].Name("c.jsonl") != "c.jsonl:2" {
		t.Errorf("names %q %q", cs[0].Name("c.jsonl"), cs[1].Name("c.jsonl"))
	}
	bad := []struct{ data, want string }{
		{"", "c.jsonl: no conversations"},
		{`{"turns": [{"user": "a"}]}` + "\n\n" + `{"turns": [{"user": "b"}]}`, "c.jsonl:2: blank line"},
		{`{"turns": [{"user": "a"}]}` + "\n" + `{"turns": [{"user": "b"}]`, "c.jsonl:2: "},
		{`{"turns": [{"user": "a", "reply": "b"}]}`, "c.jsonl:1: unknown field \"reply\""},
		{`{"turns": []}`, "c.jsonl:1: 0 turns"},
		{`{"id": "x", "turns": [{"user": "a"}, {"user": "b"}]}`, `c.jsonl:1 (conversation "x"): turn 1: no assistant reply`},
		{`{"turns": [{"user": " ", "assistant": "b"}]}`, "c.jsonl:1: turn 1: no user message"},
		{`{"turns": [{"user": "a", "n_predict": -3}]}`, "c.jsonl:1: turn 1: n_predict -3"},
		{`{"id": "x", "turns": [{"user": "a"}]}` + "\n" + `{"id": "x", "turns": [{"user": "b"}]}`, `c.jsonl:2 (conversation "x"): id repeats line 1`},
		{"\xff", "not UTF-8"},
	}
	for _, c := range bad {
		if _, err := DecodeConversations("c.jsonl", []byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.data, err, c.want)
		}
	}
}

// TestConvertShareGPT: a small ShareGPT-style file (written for this test) becomes the
// conversation schema; entries the schema cannot hold are skipped and counted by reason.
func TestConvertShareGPT(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "sharegpt-small.json"))
	if err != nil {
		t.Fatal(err)
	}
	cs, counts, err := ConvertShareGPT("sharegpt-small.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Entries != 8 || counts.Kept != 4 || counts.Turns != 7 || counts.SkippedTotal() != 4 || counts.Dropped != 1 {
		t.Errorf("counts %+v", counts)
	}
	for _, r := range []string{SkipSystem, SkipNotAltern, SkipNoHuman, SkipEmpty} {
		if counts.Skipped[r] != 1 {
			t.Errorf("skipped for %q: %d, want 1", r, counts.Skipped[r])
		}
	}
	if got := counts.String(); !strings.Contains(got, "8 entries: 4 kept (7 turns), 4 skipped") || !strings.Contains(got, "1 leading replies dropped") {
		t.Errorf("counts in words: %q", got)
	}
	ids := []string{}
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "kq3Fz01,kq3Fz02,kq3Fz03,8" {
		t.Errorf("ids %v", ids)
	}
	if c := cs[0]; len(c.Turns) != 3 || c.Turns[2].Assistant != "" || !strings.HasPrefix(c.Turns[1].Assistant, "Somewhere around") {
		t.Errorf("first conversation %+v", c)
	}
	if cs[2].Turns[0].User != "What is the difference between a latch and a flip-flop?" {
		t.Errorf("leading reply not dropped: %+v", cs[2])
	}
	// What it writes reads back as the documented schema, and as a prompt set.
	back, err := DecodeConversations("out.jsonl", EncodeConversations(cs))
	if err != nil || len(back) != 4 || back[3].Turns[1].User != "Then why are sunsets red?" {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	items, err := DecodePromptSet("p.jsonl", EncodePromptSet(FirstPrompts(cs)))
	if err != nil || len(items) != 4 || items[1].Prompt != cs[1].Turns[0].User {
		t.Errorf("prompt set: %+v %v", items, err)
	}
}

// TestConvertShareGPTMalformed: a malformed entry refuses the file, naming its index and id.
func TestConvertShareGPTMalformed(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "sharegpt-malformed.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ConvertShareGPT("m.json", data)
	if err == nil || !strings.Contains(err.Error(), `m.json: entry 1 (id "bad-2"): message 0: want {"from"`) {
		t.Errorf("%v", err)
	}
	for _, c := range []struct{ data, want string }{
		{`{"id": 1}`, "want a JSON array of entries"},
		{`[3]`, "entry 0: not an object"},
		{`[{"id": "q"}]`, `entry 0 (id "q"): no "conversations" array`},
		{`[{"id": "q", "conversations": [{"from": "robot", "value": "x"}]}]`, `from "robot"`},
		{`[{"id": [1], "conversations": []}]`, "id [1]: want a string or a number"},
		{`[{"conversations": [{"from": "gpt", "value": "x"}]}]`, "no conversation kept"},
	} {
		if _, _, err := ConvertShareGPT("m.json", []byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.data, err, c.want)
		}
	}
}
