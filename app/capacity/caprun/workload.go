package caprun

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"

	"sparkbench/app/capacity"
	"sparkbench/runner/loadgen"
)

// probeWork is one probe's requests of a serving workload, with the server's own token count
// of each prompt (from /tokenize).
type probeWork struct {
	reqs   []capacity.WorkRequest
	tokens []int
	// follows and leads are a multi_turn probe's: the turn each measured request follows (-1:
	// a first turn) and each request's header length by /tokenize.
	follows []int
	leads   []int
}

// loadWorkload reads a serving plan's workload files (nil: the plan has no workload).
func (r *Run) loadWorkload(p *capacity.Plan) (*capacity.WorkloadData, error) {
	if p.Serving == nil || p.Serving.Workload == nil {
		return nil, nil
	}
	dir, err := filepath.Abs(filepath.Dir(r.spec.PlanFile))
	if err != nil {
		return nil, err
	}
	wd, err := capacity.LoadWorkloadFiles(p.Serving.Workload, dir)
	if err != nil {
		return nil, capacity.Refuse("serving workload: %v", err)
	}
	return wd, nil
}

// probeWorkload builds requests base … base+n-1 of the workload and, with the server up
// (url != ""), counts each prompt's tokens through the server's /tokenize. A prompt that does
// not fit a slot's context with its n_predict refuses the probe, naming the longest; on the
// first probe a prompt set is checked whole, so a file too long for the context is refused
// before any of it is sent.
func (r *Run) probeWorkload(ctx context.Context, wd *capacity.WorkloadData, p *capacity.Plan, url string, base, n int, first bool) (*probeWork, error) {
	pw := &probeWork{reqs: make([]capacity.WorkRequest, n), tokens: make([]int, n)}
	for i := range pw.reqs {
		pw.reqs[i] = wd.Request(base+i, p.NPredict)
	}
	if wd.W.Kind == capacity.WorkloadMultiTurn {
		pw.multiTurn(wd, p, base, p.Serving.Warmups, n)
	}
	if url == "" {
		return pw, nil
	}
	check := pw.reqs
	if first && wd.W.Kind == capacity.WorkloadPromptSet {
		check = make([]capacity.WorkRequest, len(wd.Items))
		for i := range check {
			check[i] = wd.Request(i, p.NPredict)
		}
	}
	if first && len(wd.Convs) > 0 {
		check = nil
		for i := range wd.Convs {
			check = append(check, wd.Conversation(i, p.NPredict)...)
		}
	}
	client := &http.Client{}
	counts := map[string]int{}
	var longest capacity.WorkRequest
	tooLong := map[string]struct{}{}
	for _, q := range append(check, pw.reqs...) {
		k, ok := counts[q.Prompt]
		if !ok {
			var err error
			if k, err = loadgen.Tokenize(ctx, client, url, q.Prompt); err != nil {
				return nil, fmt.Errorf("serving workload: %s: %w", q.Source, err)
			}
			counts[q.Prompt] = k
		}
		if _, seen := tooLong[q.Prompt]; !seen && k+q.NPredict > p.CtxPerSlot {
			tooLong[q.Prompt] = struct{}{}
			if len(tooLong) == 1 || k+q.NPredict > counts[longest.Prompt]+longest.NPredict {
				longest = q
			}
		}
	}
	over := len(tooLong)
	if over > 0 {
		return nil, capacity.Refuse("serving workload: %d requests do not fit a slot's context (ctx_per_slot %d); the longest is %s: %d prompt tokens (the server's /tokenize) + n_predict %d",
			over, p.CtxPerSlot, longest.Source, counts[longest.Prompt], longest.NPredict)
	}
	pw.tokens = make([]int, len(pw.reqs))
	for i, q := range pw.reqs {
		pw.tokens[i] = counts[q.Prompt]
	}
	if pw.follows != nil {
		pw.leads = make([]int, len(pw.reqs))
		for i, q := range pw.reqs {
			k, ok := counts[q.Lead]
			if !ok {
				var err error
				if k, err = loadgen.Tokenize(ctx, client, url, q.Lead); err != nil {
					return nil, fmt.Errorf("serving workload: %s: header: %w", q.Source, err)
				}
				counts[q.Lead] = k
			}
			pw.leads[i] = k + 1 // the BOS token the server puts before every prompt
		}
	}
	return pw, nil
}

// multiTurn lays a multi_turn probe out: warmups (the first turn of their own conversations,
// sent alone), then the measured conversations' turns in order, each later turn following the
// one before it.
func (pw *probeWork) multiTurn(wd *capacity.WorkloadData, p *capacity.Plan, base, warmups, n int) {
	reqs := pw.reqs[:warmups]
	for i := range reqs {
		reqs[i].Turns = 1
	}
	for i := warmups; i < n; i++ {
		conv := wd.Conversation(base+i, p.NPredict)
		for k := range conv {
			f := -1
			if k > 0 {
				f = len(reqs) - warmups - 1
			}
			reqs = append(reqs, conv[k])
			pw.follows = append(pw.follows, f)
		}
	}
	pw.reqs, pw.tokens = reqs, make([]int, len(reqs))
}

// place writes request i's place in its conversation into its record (multi_turn only).
func (pw *probeWork) place(rec *capacity.ServingRecord, i int) {
	q := pw.reqs[i]
	if q.Turn == 0 {
		return
	}
	rec.Conversation, rec.Turn, rec.Turns = q.Conversation, q.Turn, q.Turns
	if pw.leads != nil {
		rec.LeadTokens = pw.leads[i]
	}
}
