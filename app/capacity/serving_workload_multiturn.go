package capacity

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/gguf"
	"sparkbench/runner/promptset"
)

// Random streams of the multi_turn kind (after serving_workload.go's).
const (
	tagTurns uint64 = iota + 101
	tagTurnWords
	tagReply
)

// checkMultiTurn validates a multi_turn workload: synthetic (turns and input_words drawn per
// conversation) or a JSONL conversation file (its own turns).
func (v *validator) checkMultiTurn(w *Workload) {
	at := "serving.workload"
	if w.Conversations != nil {
		if w.Turns != nil || w.InputWords != nil {
			v.errf(at, "a conversation file's turns and messages are its own; remove turns and input_words")
		}
		v.checkFile(at+".conversations", *w.Conversations, "the conversation file")
		return
	}
	if w.Turns == nil || w.InputWords == nil {
		v.errf(at, "a synthetic multi_turn workload needs turns (a length distribution of turns per conversation) and input_words (each user message's words); or give a conversation file (conversations: {path, sha256})")
		return
	}
	switch d := w.Turns; {
	case d.Dist == DistFile:
		v.errf(at+".turns", "file: not for turns; want fixed, uniform or normal")
	case d.Value > promptset.MaxTurns || d.Max > promptset.MaxTurns:
		v.errf(at+".turns", "at most %d turns a conversation", promptset.MaxTurns)
	default:
		v.checkDist(at+".turns", d)
	}
}

func (w *Workload) turnStream(tag uint64, n, turn int) unitSource {
	return unitSource{r: rand.New(rand.NewPCG(uint64(w.Seed)^tag, uint64(n)<<10|uint64(turn)))}
}

// wordsFrom is n vocabulary words drawn from src (a request's or a conversation turn's stream).
func wordsFrom(src unitSource, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[src.r.IntN(len(vocabulary))])
	}
	return b.String()
}

// ConversationLead is conversation n's header, the start of each of its prompts: the only text
// a first turn may share with another conversation (numbers are unique in a lifetime, so no
// header is another's).
func ConversationLead(n int) string { return "Conversation " + strconv.Itoa(n) + ".\n" }

// conversationTurns are conversation n's user messages, stand-in replies and n_predict per
// turn, and how messages name it.
func (d *WorkloadData) conversationTurns(n, nPredict int) (users, replies []string, outs []int, name string) {
	w := d.W
	out := func(k int) int {
		if w.OutputTokens != nil {
			return w.OutputTokens.draw(w.turnStream(tagOutLen, n, k), d.OutLengths)
		}
		return nPredict
	}
	if len(d.Convs) > 0 {
		c := d.Convs[n%len(d.Convs)]
		for k, t := range c.Turns {
			o := out(k)
			if t.NPredict > 0 {
				o = t.NPredict
			}
			users, replies, outs = append(users, t.User), append(replies, t.Assistant), append(outs, o)
		}
		return users, replies, outs, c.Name(w.Conversations.Path)
	}
	turns := w.Turns.draw(w.turnStream(tagTurns, n, 0), nil)
	for k := range turns {
		o := out(k)
		k := w.InputWords.draw(w.turnStream(tagInLen, n, k), d.InLengths)
		users = append(users, wordsFrom(w.turnStream(tagTurnWords, n, len(users)), k))
		replies = append(replies, wordsFrom(w.turnStream(tagReply, n, len(replies)), o))
		outs = append(outs, o)
	}
	return users, replies, outs, fmt.Sprintf("synthetic, %d turns", turns)
}

// turnPrompt is turn k's prompt: the lead, every earlier turn's user message and stand-in
// reply, then turn k's user message and the cue for the assistant's answer.
func turnPrompt(lead string, users, replies []string, k int) string {
	var b strings.Builder
	b.WriteString(lead)
	for j := range k {
		b.WriteString("User: " + users[j] + "\nAssistant: " + replies[j] + "\n")
	}
	b.WriteString("User: " + users[k] + "\nAssistant:")
	return b.String()
}

// Conversation is conversation n of the server lifetime (0-based over every probe, warmups
// included): one request per turn, in order. Turn k's prompt is the conversation so far —
// every earlier user message and the reply that stands in for the server's (the file's
// assistant message, or for a synthetic conversation as many seeded words as that turn's
// n_predict) — then its own user message. The same seed and n give the same requests.
func (d *WorkloadData) Conversation(n, nPredict int) []WorkRequest {
	users, replies, outs, name := d.conversationTurns(n, nPredict)
	lead := ConversationLead(n)
	out := make([]WorkRequest, len(users))
	for k := range users {
		out[k] = WorkRequest{Prompt: turnPrompt(lead, users, replies, k), NPredict: outs[k], Conversation: n, Turn: k + 1,
			Turns: len(users), Lead: lead, Source: fmt.Sprintf("conversation %d (%s) turn %d", n, name, k+1)}
	}
	return out
}

func (w *Workload) describeMultiTurn() string {
	if w.Conversations != nil {
		return fmt.Sprintf("multi-turn conversations from %s (SHA-256 %.12s…), in turn; each turn sent with the conversation so far, the file's assistant replies standing in for the server's", w.Conversations.Path, w.Conversations.SHA256)
	}
	return fmt.Sprintf("multi-turn synthetic conversations of %s turns, %s words a user message; each turn sent with the conversation so far, seeded words (as many as the turn's n_predict) standing in for the server's replies", w.Turns.Describe(), w.InputWords.Describe())
}

// minOutput is the fewest tokens a request of the workload can ask for (a file's own n_predict
// aside).
func (d *WorkloadData) minOutput(nPredict int) int {
	o := d.W.OutputTokens
	switch {
	case o == nil:
		return nPredict
	case o.Dist == DistFixed:
		return o.Value
	case o.Dist == DistFile:
		m := d.OutLengths[0]
		for _, x := range d.OutLengths {
			m = min(m, x)
		}
		return m
	}
	return o.Min
}

// checkWorkloadContext refuses, at validation, a prompt set line or a conversation that
// cannot fit a slot's context whatever the tokenizer makes of it: no token of the candidates'
// vocabularies decodes to more than L bytes, so a text of B bytes is at least ceil(B / L)
// tokens; with the fewest tokens the request may ask for, more than ctx_per_slot is refused,
// naming the longest. Synthetic workloads, and what this bound lets through, meet the exact
// check at run time (the server's /tokenize before each probe).
func (v *validator) checkWorkloadContext(wd *WorkloadData) {
	if len(wd.Items) == 0 && len(wd.Convs) == 0 {
		return
	}
	maxTok, model := 0, ""
	for _, c := range v.p.Candidates {
		path := study.ResolvePath(v.opts.PlanDir, c.Model.Path)
		l, err := MaxTokenBytes(path)
		if err != nil {
			return // the model's own check says what is wrong with it
		}
		if l > maxTok {
			maxTok, model = l, c.Model.Path
		}
	}
	if maxTok == 0 {
		return
	}
	minOut := wd.minOutput(v.p.NPredict)
	type over struct {
		name          string
		bytes, tokens int
		out           int
	}
	var worst over
	what := "prompts"
	overs := map[string]bool{} // the prompts or conversations that cannot fit
	judge := func(who, name string, bytes, out int) {
		tok := (bytes + maxTok - 1) / maxTok
		if tok+out <= v.p.CtxPerSlot {
			return
		}
		overs[who] = true
		if tok+out > worst.tokens+worst.out {
			worst = over{name, bytes, tok, out}
		}
	}
	for _, it := range wd.Items {
		out := minOut
		if it.NPredict > 0 {
			out = it.NPredict
		}
		name := fmt.Sprintf("%s:%d", wd.W.PromptSet.Path, it.Line)
		judge(name, name, len(it.Prompt), out)
	}
	for _, c := range wd.Convs {
		what = "conversations"
		users, replies := make([]string, len(c.Turns)), make([]string, len(c.Turns))
		for k, t := range c.Turns {
			users[k], replies[k] = t.User, t.Assistant
		}
		for k, t := range c.Turns {
			out := minOut
			if t.NPredict > 0 {
				out = t.NPredict
			}
			name := c.Name(wd.W.Conversations.Path)
			judge(name, fmt.Sprintf("%s turn %d", name, k+1), len(turnPrompt("", users, replies, k)), out)
		}
	}
	if len(overs) > 0 {
		v.errf("serving.workload", "%d %s cannot fit a slot's context (ctx_per_slot %d) whatever the tokenizer makes of them; the longest is %s: at least %d prompt tokens (%d bytes, no token of %s's vocabulary longer than %d bytes) + n_predict %d",
			len(overs), what, v.p.CtxPerSlot, worst.name, worst.tokens, worst.bytes, model, maxTok, worst.out)
	}
}

// MaxTokenBytes is the most bytes one token of a GGUF model's vocabulary decodes to: 1 for a
// byte token, nothing for a control or unused token, at most its text's length for the rest
// (SentencePiece's "▁" is one space). An unknown token counts 4 (one character) unless the
// vocabulary has byte tokens (then text never needs it).
func MaxTokenBytes(path string) (int, error) {
	f, err := gguf.ReadFile(path)
	if err != nil {
		return 0, err
	}
	kv, ok := f.Lookup("tokenizer.ggml.tokens")
	toks, _ := kv.Value.([]string)
	if !ok || len(toks) == 0 {
		return 0, fmt.Errorf("%s: no tokenizer.ggml.tokens", path)
	}
	var types []int32
	if tv, ok := f.Lookup("tokenizer.ggml.token_type"); ok {
		types, _ = tv.Value.([]int32)
	}
	if len(types) != len(toks) {
		types = nil
	}
	const (
		typeUnknown, typeControl, typeUnused, typeByte = 2, 3, 5, 6
	)
	longest, bytesTok, unknown := 0, false, false
	for i, t := range toks {
		n := len(strings.ReplaceAll(t, "\u2581", " "))
		if types != nil {
			switch types[i] {
			case typeControl, typeUnused:
				continue
			case typeByte:
				n, bytesTok = 1, true
			case typeUnknown:
				n, unknown = 0, true
			}
		}
		longest = max(longest, n)
	}
	if unknown && !bytesTok {
		longest = max(longest, 4)
	}
	return longest, nil
}
