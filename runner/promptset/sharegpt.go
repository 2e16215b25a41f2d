package promptset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ShareGPT conversion (docs/serving.md): a ShareGPT-style file is one JSON array of entries,
// [{"id": …, "conversations": [{"from": "human", "value": …}, {"from": "gpt", "value": …}]}].
// A malformed entry (not an object, no conversations array, a message without a string from
// and value, an unknown role) refuses the whole file, naming the entry's index and id. A
// well-formed entry the schema cannot hold is skipped and counted by its reason.

// Skip reasons of a ShareGPT entry.
const (
	SkipNoHuman   = "no human message"
	SkipEmpty     = "an empty message"
	SkipNotAltern = "two messages of the same side in a row"
	SkipSystem    = "a system message (the conversation schema has none)"
	SkipTooLong   = "more than 1024 turns"
)

// ConvertCounts is what a conversion kept and skipped.
type ConvertCounts struct {
	Entries int            `json:"entries"`
	Kept    int            `json:"kept"`
	Turns   int            `json:"turns"`           // turns of the kept conversations
	Dropped int            `json:"leading_dropped"` // replies before an entry's first human message, dropped
	Skipped map[string]int `json:"skipped"`         // entries by reason
}

// SkippedTotal is the number of skipped entries.
func (c ConvertCounts) SkippedTotal() int {
	n := 0
	for _, k := range c.Skipped {
		n += k
	}
	return n
}

// String is the counts in words.
func (c ConvertCounts) String() string {
	s := fmt.Sprintf("%d entries: %d kept (%d turns), %d skipped", c.Entries, c.Kept, c.Turns, c.SkippedTotal())
	for _, r := range slices.Sorted(maps.Keys(c.Skipped)) {
		s += fmt.Sprintf("; %d with %s", c.Skipped[r], r)
	}
	if c.Dropped > 0 {
		s += fmt.Sprintf("; %d leading replies dropped", c.Dropped)
	}
	return s
}

type shareGPTMessage struct {
	From  *string `json:"from"`
	Value *string `json:"value"`
}

// ConvertShareGPT reads a ShareGPT-style file into conversations (an entry's human and gpt
// messages paired into turns; the last human message may have no reply).
func ConvertShareGPT(name string, data []byte) ([]Conversation, ConvertCounts, error) {
	counts := ConvertCounts{Skipped: map[string]int{}}
	if !utf8.Valid(data) {
		return nil, counts, fmt.Errorf("%s: not UTF-8 text", name)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, counts, fmt.Errorf("%s: want a JSON array of entries [{\"id\": …, \"conversations\": [{\"from\": \"human\", \"value\": …}, …]}, …]: %v", name, err)
	}
	var out []Conversation
	for i, raw := range entries {
		counts.Entries++
		c, reason, err := shareGPTEntry(raw)
		if err != nil {
			return nil, counts, fmt.Errorf("%s: entry %d%s: %v", name, i, idText(c.ID), err)
		}
		if reason != "" {
			counts.Skipped[reason]++
			continue
		}
		counts.Dropped += c.Line // the leading replies dropped (Line is reused until written)
		c.Line = 0
		if c.ID == "" {
			c.ID = "entry-" + strconv.Itoa(i)
		}
		counts.Kept++
		counts.Turns += len(c.Turns)
		out = append(out, c)
	}
	if counts.Kept == 0 {
		return nil, counts, fmt.Errorf("%s: no conversation kept (%s)", name, counts)
	}
	return out, counts, nil
}

func idText(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" (id %q)", id)
}

// shareGPTEntry is one entry as a conversation, or why it is skipped, or what is malformed.
func shareGPTEntry(raw json.RawMessage) (Conversation, string, error) {
	var e struct {
		ID            json.RawMessage   `json:"id"`
		Conversations []json.RawMessage `json:"conversations"`
	}
	var c Conversation
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return c, "", fmt.Errorf("not an object")
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return c, "", fmt.Errorf("%v", err)
	}
	if len(e.ID) > 0 && string(e.ID) != "null" {
		var s string
		if json.Unmarshal(e.ID, &s) != nil {
			var n json.Number
			if json.Unmarshal(e.ID, &n) != nil {
				return c, "", fmt.Errorf("id %s: want a string or a number", e.ID)
			}
			s = n.String()
		}
		c.ID = s
	}
	if e.Conversations == nil {
		return c, "", fmt.Errorf("no \"conversations\" array")
	}
	var human, lead int
	for j, m := range e.Conversations {
		var msg shareGPTMessage
		if err := json.Unmarshal(m, &msg); err != nil || msg.From == nil || msg.Value == nil {
			return c, "", fmt.Errorf("message %d: want {\"from\": \"human\"|\"gpt\", \"value\": \"…\"}", j)
		}
		side, ok := roles[strings.ToLower(*msg.From)]
		if !ok {
			return c, "", fmt.Errorf("message %d: from %q: want human, user, gpt, chatgpt, assistant or system", j, *msg.From)
		}
		text := *msg.Value
		switch {
		case side == "system":
			return c, SkipSystem, nil
		case strings.TrimSpace(text) == "":
			return c, SkipEmpty, nil
		case side == "gpt" && len(c.Turns) == 0:
			lead++ // a reply before any question: nothing to pair it with
		case side == "human":
			if len(c.Turns) > 0 && c.Turns[len(c.Turns)-1].Assistant == "" {
				return c, SkipNotAltern, nil
			}
			human++
			c.Turns = append(c.Turns, Turn{User: text})
		default:
			last := &c.Turns[len(c.Turns)-1]
			if last.Assistant != "" {
				return c, SkipNotAltern, nil
			}
			last.Assistant = text
		}
	}
	switch {
	case human == 0:
		return c, SkipNoHuman, nil
	case len(c.Turns) > MaxTurns:
		return c, SkipTooLong, nil
	}
	c.Line = lead
	return c, "", nil
}

var roles = map[string]string{"human": "human", "user": "human", "gpt": "gpt", "chatgpt": "gpt", "assistant": "gpt", "bing": "gpt", "system": "system"}

// EncodeConversations writes conversations as the JSONL conversation schema, one a line.
func EncodeConversations(cs []Conversation) []byte {
	var b bytes.Buffer
	for _, c := range cs {
		writeLine(&b, c)
	}
	return b.Bytes()
}

// EncodePromptSet writes a JSONL prompt set, one {"prompt": …} a line.
func EncodePromptSet(items []PromptItem) []byte {
	var b bytes.Buffer
	for _, it := range items {
		writeLine(&b, it)
	}
	return b.Bytes()
}

// FirstPrompts is a prompt set of each conversation's first user message.
func FirstPrompts(cs []Conversation) []PromptItem {
	out := make([]PromptItem, len(cs))
	for i, c := range cs {
		out[i] = PromptItem{Prompt: c.Turns[0].User, NPredict: c.Turns[0].NPredict}
	}
	return out
}

func writeLine(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // plain structs of strings and ints: cannot fail
}
