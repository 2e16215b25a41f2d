package capacity

import (
	"fmt"
	"math"
	"sort"
)

// CodeTimingDisagreement fails a probe with a request whose client-measured time per
// generated token differs from the server's beyond the plan's timing_tolerance.
const CodeTimingDisagreement = "client_server_timing_disagreement"

// timingSlackMs is the absolute allowance of the timing comparison, per token: clock reads,
// the kernel and Go's scheduler stand between the server's clock and the client's.
const timingSlackMs = 0.5

// multiTurn says the plan's workload is conversations.
func (s *Serving) multiTurn() bool { return s.Workload != nil && s.Workload.Kind == WorkloadMultiTurn }

// RateUnit is the schedule's rate unit: req/s, or conversations/s for multi_turn.
func (s *Serving) RateUnit() string {
	if s.multiTurn() {
		return "conversations/s"
	}
	return "req/s"
}

// ConversationCounts are a multi_turn probe's turns: first turns (which should be cold) and
// later turns (sent with the conversation so far: with cache_prompt on they should hit the
// cache), and how many of those later turns did take more than their header from it.
type ConversationCounts struct {
	Conversations int `json:"conversations"`
	FirstTurns    int `json:"first_turns"`
	LaterTurns    int `json:"later_turns"`
	// WarmHits are later turns with timings.cache_n above their lead (the header): the
	// conversation's history came from the prompt cache.
	WarmHits int `json:"warm_hits"`
	// CachedTokens and PromptTokens sum the later turns' cache_n and prompt_n + cache_n.
	CachedTokens int `json:"later_cached_tokens"`
	PromptTokens int `json:"later_prompt_tokens"`
}

func conversationCounts(s *Serving, recs []ServingRecord) *ConversationCounts {
	if !s.multiTurn() {
		return nil
	}
	c := &ConversationCounts{}
	seen := map[int]bool{}
	for _, r := range recs {
		if !seen[r.Conversation] {
			seen[r.Conversation] = true
			c.Conversations++
		}
		if r.Turn <= 1 {
			c.FirstTurns++
			continue
		}
		c.LaterTurns++
		if t := r.Timings; t != nil {
			c.CachedTokens += t.CacheN
			c.PromptTokens += t.PromptN + t.CacheN
			if t.CacheN > r.LeadTokens {
				c.WarmHits++
			}
		}
	}
	return c
}

// contaminatedUnder says a request's figures are not the cold ones it stands for. With
// caching off every request should be cold: cache_n > 0, or prompt_n below its /tokenize
// count, contaminates it. With caching on, a conversation's later turns are warm by design
// (never contaminated), and a first turn may share only its header with another
// conversation's prompt: taking more than the header's tokens (lead_tokens, the BOS's share
// included) from the cache contaminates it. Other requests with caching on are not judged.
func contaminatedUnder(cache bool, r ServingRecord) bool {
	if !cache {
		return contaminated(r)
	}
	return r.Turn == 1 && r.Timings != nil && r.Timings.CacheN > r.LeadTokens
}

func checkTurnFields(r ServingRecord) string {
	switch {
	case r.Conversation < 0 || r.Turn < 0 || r.Turns < 0 || r.LeadTokens < 0:
		return "conversation, turn, turns and lead_tokens must be non-negative"
	case r.Turn > r.Turns || (r.Turns > 0 && r.Turn == 0):
		return fmt.Sprintf("turn %d of %d: want 1 to turns", r.Turn, r.Turns)
	}
	return ""
}

// checkConversations is assembly's count of a multi_turn probe: the plan's number of
// conversations (warmups and measured), each measured one with every turn once.
func checkConversations(recs []ServingRecord, want int) string {
	turns := map[int]map[int]bool{}
	of := map[int]int{}
	for _, r := range recs {
		if r.Turn < 1 {
			return fmt.Sprintf("line %d: a multi_turn request without its turn", r.Line)
		}
		if turns[r.Conversation] == nil {
			turns[r.Conversation], of[r.Conversation] = map[int]bool{}, r.Turns
		}
		if r.Turns != of[r.Conversation] || turns[r.Conversation][r.Turn] {
			return fmt.Sprintf("line %d: conversation %d turn %d of %d repeats or contradicts another line", r.Line, r.Conversation, r.Turn, r.Turns)
		}
		turns[r.Conversation][r.Turn] = true
	}
	if len(turns) != want {
		return fmt.Sprintf("%d measured conversations, the plan says %d", len(turns), want)
	}
	for c, ts := range turns {
		if len(ts) != of[c] {
			return fmt.Sprintf("conversation %d has %d of its %d turns", c, len(ts), of[c])
		}
	}
	return ""
}

// measuredCount is what a probe's measured records are counted in: conversations for the
// multi_turn kind, requests otherwise; msg says what is wrong.
func (s *Serving) measuredCount(recs []ServingRecord, want int) (n int, msg string) {
	if !s.multiTurn() {
		return len(recs), ""
	}
	if msg := checkConversations(recs, want); msg != "" {
		return -1, msg
	}
	return want, ""
}

// TimingDisagreements are a probe's requests whose client-measured time per generated token
// ((end - first token) / (tokens - 1)) differs from the server's (timings.predicted_ms /
// (predicted_n - 1)) by more than timing_tolerance of the server's, plus 0.5 ms.
type TimingDisagreements struct {
	Compared int `json:"compared"`
	Flagged  int `json:"flagged"`
	// Seqs are the flagged requests (measured seq), in order; Worst is the largest relative
	// difference, (client - server) / server, among them.
	Seqs  []int    `json:"seqs"`
	Worst *float64 `json:"worst_relative,omitempty"`
}

func timingDisagreements(s *Serving, recs []ServingRecord) *TimingDisagreements {
	if s.TimingTolerance <= 0 {
		return nil
	}
	td := &TimingDisagreements{Seqs: []int{}}
	for _, r := range recs {
		t := r.Timings
		if r.HTTPStatus != 200 || r.Error != "" || r.FirstTokenMs == nil || t == nil || r.Tokens < 2 || t.PredictedN < 2 {
			continue
		}
		client := (r.EndMs - *r.FirstTokenMs) / float64(r.Tokens-1)
		server := t.PredictedMs / float64(t.PredictedN-1)
		td.Compared++
		d := math.Abs(client - server)
		if d <= s.TimingTolerance*server+timingSlackMs {
			continue
		}
		td.Flagged++
		td.Seqs = append(td.Seqs, r.Seq)
		rel := math.Inf(1)
		if server > 0 {
			rel = (client - server) / server
		}
		if td.Worst == nil || math.Abs(rel) > math.Abs(*td.Worst) {
			if math.IsInf(rel, 0) {
				rel = math.MaxFloat64
			}
			td.Worst = fptr(rel)
		}
	}
	sort.Ints(td.Seqs)
	return td
}

func (td *TimingDisagreements) gate(tol float64) GateCheck {
	g := GateCheck{Gate: "client_server_timing", Observed: fptr(float64(td.Flagged)), Limit: fptr(0), Passed: td.Flagged == 0}
	if !g.Passed {
		g.Detail = fmt.Sprintf("%d of %d requests: the client's time per generated token differs from the server's timings.predicted_ms by more than %g of it + %g ms (worst %+.0f%%); requests %v",
			td.Flagged, td.Compared, tol, timingSlackMs, *td.Worst*100, td.Seqs)
	}
	return g
}
