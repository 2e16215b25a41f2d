package promptset

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"sparkbench/runner/jsonlex"
)

// Conversation is one line of a JSONL conversation file (docs/serving.md), the source of a
// multi_turn workload: its turns in order, each a user message and, for every turn but the
// last, the assistant reply that stands in for the server's in the next turn's history.
//
//	{"id": "trip-planning", "turns": [{"user": "…", "assistant": "…"}, {"user": "…", "n_predict": 48}]}
type Conversation struct {
	ID    string `json:"id,omitempty"`
	Turns []Turn `json:"turns"`
	// Line is the conversation's 1-based line in its file.
	Line int `json:"-"`
}

// Turn is one exchange of a conversation.
type Turn struct {
	User string `json:"user"`
	// Assistant is the reply appended to the history before the next turn (the stand-in for
	// what the server generated); optional on the last turn, where nothing follows it.
	Assistant string `json:"assistant,omitempty"`
	// NPredict is the tokens to generate for this turn (0: the plan's n_predict or output
	// length distribution).
	NPredict int `json:"n_predict,omitempty"`
}

// MaxTurns bounds a conversation's turns.
const MaxTurns = 1024

// Name is how messages name the conversation: its file:line and, when it has one, its id.
func (c Conversation) Name(file string) string {
	if c.ID != "" {
		return fmt.Sprintf("%s:%d (conversation %q)", file, c.Line, c.ID)
	}
	return fmt.Sprintf("%s:%d", file, c.Line)
}

// DecodeConversations reads a JSONL conversation file: one JSON object a line, each with 1 to
// MaxTurns turns, every turn a non-empty user message and every turn but the last its
// assistant reply; a malformed line is refused as name:line with what is wrong.
func DecodeConversations(name string, data []byte) ([]Conversation, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: no conversations; want one JSON object a line, {\"turns\": [{\"user\": \"…\", \"assistant\": \"…\"}, …]}", name)
	}
	var out []Conversation
	ids := map[string]int{}
	for n, line := range bytes.Split(data, []byte("\n")) {
		at := fmt.Sprintf("%s:%d", name, n+1)
		var c Conversation
		switch e := jsonlex.DecodeStrict(bytes.TrimSuffix(line, []byte("\r")), &c); {
		case e == nil:
		case e.Kind == jsonlex.StrictEmpty:
			return nil, fmt.Errorf("%s: blank line; want one JSON object a line, {\"turns\": [{\"user\": \"…\"}, …]}", at)
		case e.Kind == jsonlex.StrictUnknown:
			return nil, fmt.Errorf("%s: unknown field %s; a line holds id and turns, a turn user, assistant and n_predict", at, e.Field)
		default:
			return nil, fmt.Errorf("%s: %s", at, e.Detail())
		}
		if c.ID != "" {
			at += fmt.Sprintf(" (conversation %q)", c.ID)
			if first, dup := ids[c.ID]; dup {
				return nil, fmt.Errorf("%s: id repeats line %d", at, first)
			}
			ids[c.ID] = n + 1
		}
		if err := checkTurns(c.Turns); err != "" {
			return nil, fmt.Errorf("%s: %s", at, err)
		}
		c.Line = n + 1
		out = append(out, c)
	}
	return out, nil
}

func checkTurns(ts []Turn) string {
	if len(ts) == 0 || len(ts) > MaxTurns {
		return fmt.Sprintf("%d turns: want 1 to %d", len(ts), MaxTurns)
	}
	for i, t := range ts {
		switch {
		case strings.TrimSpace(t.User) == "":
			return fmt.Sprintf("turn %d: no user message (want a non-empty \"user\")", i+1)
		case i < len(ts)-1 && strings.TrimSpace(t.Assistant) == "":
			return fmt.Sprintf("turn %d: no assistant reply; every turn but the last needs one (it is the history the next turn is sent with)", i+1)
		case t.NPredict < 0 || t.NPredict > 1<<20:
			return fmt.Sprintf("turn %d: n_predict %d: want 1 to %d, or leave it out", i+1, t.NPredict, 1<<20)
		}
	}
	return ""
}

// LoadConversations reads a JSONL conversation file and checks its SHA-256 against want (when
// not empty).
func LoadConversations(path, want string) ([]Conversation, string, error) {
	data, got, err := ReadPinned(path, want, maxPromptSet, "conversation file")
	if err != nil {
		return nil, got, err
	}
	cs, err := DecodeConversations(path, data)
	return cs, got, err
}
