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
	for i, q := range pw.reqs {
		pw.tokens[i] = counts[q.Prompt]
	}
	return pw, nil
}
