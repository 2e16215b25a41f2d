package workbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/remote"
	"sparkbench/runner/telemetry/live"
	"sparkbench/store"
)

// CapacityRunOptions are the capacity kind's own run options (RunRequest.Options): the
// quality guard's case list, the candidates' llama-batched-bench outputs for the server tax,
// and the waits (0: the defaults).
type CapacityRunOptions struct {
	QualityCases                        string
	Batched                             map[string]string
	StartTimeout, RequestTimeout, Grace time.Duration
	// Telemetry says where a telemetry block's samplers read (nil: this machine's).
	Telemetry *live.Config
	// On runs every llama-server on this host of Hosts (CapacityRunRequest.On).
	On    string
	Hosts *remote.HostsFile
}

// runCapacityKind is the capacity kind's Run: RunCapacity, its outcome worded as `capacity
// run ID` says it. Bad input and refused plans are *RequestErrors; a run that began and did
// not complete (halted, stopped, incomplete) is a RunDone that is not Complete, its Notes
// saying where the raw files are and how to resume.
func runCapacityKind(ctx context.Context, nb *store.Notebook, s store.Study, req RunRequest) (*RunDone, error) {
	id := s.ID
	opt, _ := req.Options.(*CapacityRunOptions)
	if opt == nil {
		opt = &CapacityRunOptions{}
	}
	say := func(line string) {
		if req.Progress != nil {
			req.Progress(line)
		}
	}
	const prefix = "sparkbench capacity run: "
	// One run per study at a time, the KV quality check after the lifetimes included.
	release, err := nb.LeaseStudy(ctx, id, capacity.ErrBusy)
	if err != nil {
		return nil, err
	}
	defer release()
	sum, st, err := RunCapacity(ctx, nb, CapacityRunRequest{ID: id, LlamaDir: req.LlamaDir, Out: req.Out, Fresh: req.Fresh, Leased: true,
		StartTimeout: opt.StartTimeout, RequestTimeout: opt.RequestTimeout, Grace: opt.Grace, QualityCases: opt.QualityCases, Batched: opt.Batched, Telemetry: opt.Telemetry,
		On: opt.On, Hosts: opt.Hosts,
		Warn: func(msg string) { say(prefix + msg) }, Hash: req.Hash, TrustCache: req.TrustCache,
		OnEvent: func(ev capacity.RunEvent) {
			if req.JSON != nil {
				req.JSON(ev)
			}
			if line := capacity.ProgressLine(ev); line != "" {
				say(line)
			}
		}})
	if errors.As(err, new(*NotStartedError)) {
		return nil, err
	}
	if ie, ok := capacity.IsIncomplete(err); ok && sum != nil {
		return &RunDone{Status: sum.Status, Notes: []string{
			fmt.Sprintf("%sstudy %d %s", prefix, id, err),
			fmt.Sprintf("%s%s; the raw files are in %s (run.json lists them); %d server lifetimes recorded%s; no verdict is journaled",
				prefix, capacity.IncompleteStudyText(ie), sum.RunDir, sum.Legs, capacity.KeptText(sum)),
			fmt.Sprintf("%sfix the cause, then `sparkbench capacity run %d` measures those lifetimes again (--fresh starts over in a new run folder)", prefix, id)}}, nil
	}
	if err != nil {
		switch {
		case capacity.IsRefusal(err):
			return nil, badInput(err)
		case errors.Is(err, capacity.ErrAlreadyAssembled):
			// A complete study whose KV arms still lack their check (it failed, or the build had
			// no llama-perplexity) gets it now; else the run is refused.
			if done, kerr := capacityKVAfter(ctx, nb, id, req, nil); kerr != nil || done != nil {
				return done, kerr
			}
			return nil, err
		case errors.Is(err, capacity.ErrBusy):
			return nil, err
		}
		done := &RunDone{Notes: []string{fmt.Sprintf("%sstudy %d halted: %v", prefix, id, err)}}
		if sum != nil && sum.RunDir != "" {
			done.Status = sum.Status
			done.Notes = append(done.Notes,
				fmt.Sprintf("%sthe raw files are in %s (run.json says what happened); %d server lifetimes recorded%s", prefix, sum.RunDir, sum.Legs, capacity.KeptText(sum)),
				fmt.Sprintf("%s`sparkbench capacity run %d` resumes it at the first unfinished server lifetime (--fresh starts over in a new run folder)", prefix, id))
		}
		return done, nil
	}
	done := &RunDone{Status: sum.Status, Complete: true}
	if sum.NotResumed != "" {
		done.Lines = append(done.Lines, fmt.Sprintf("not resumed: %s; ran in a new run folder", sum.NotResumed))
	}
	done.Lines = append(done.Lines, fmt.Sprintf("study %d %q: %s, %d server lifetimes recorded%s, run folder %s, study.json sha256 %s",
		id, st.Name, sum.Status, sum.Legs, capacity.KeptText(sum), sum.RunDir, sum.StudySHA256))
	if sum.Report != nil && sum.Report.Result != nil {
		for _, c := range sum.Report.Result.Candidates {
			done.Lines = append(done.Lines, "  "+capacity.SelectedLine(c.ID, c.Selected, c.Base, c.SelectionNote))
		}
		for _, c := range sum.Report.Result.Candidates {
			if c.ServerTax != nil {
				done.Lines = append(done.Lines, "  "+capacity.ServerTaxLine(c.ID, c.ServerTax))
			}
		}
	}
	for _, v := range sum.Verdicts {
		done.Lines = append(done.Lines, fmt.Sprintf("  %-8s %-12s %s (journaled)", v.Prediction, v.Outcome, v.Detail))
	}
	var res *capacity.Result
	if sum.Report != nil {
		res = sum.Report.Result
	}
	kv, err := capacityKVAfter(ctx, nb, id, req, res)
	if kv != nil {
		done.Lines = append(done.Lines, kv.Lines...)
	}
	return done, err
}

// capacityKVAfter runs the KV cache quality check of complete study id (CapacityKVQuality, its
// steps told to req.Progress) and says each KV arm's speed change beside its KL divergence
// (from res, the run's result; nil: the journaled study.json, for a study assembled before,
// whose run is then complete only when it journaled every arm's check). Nil: the plan has no
// KV arm, or res is nil and every arm was checked already.
func capacityKVAfter(ctx context.Context, nb *store.Notebook, id int64, req RunRequest, res *capacity.Result) (*RunDone, error) {
	before := res == nil
	pending, _, err := CapacityKVQuality(ctx, nb, CapacityKVRequest{ID: id, LlamaDir: req.LlamaDir, Say: req.Progress})
	if err != nil {
		return nil, err
	}
	if res == nil {
		if pending == 0 {
			return nil, nil
		}
		if a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, id); err == nil {
			res = a.Result
		}
	}
	lines, unchecked, err := capacityKVLines(ctx, nb, id, res)
	if err != nil || len(lines) == 0 {
		return nil, err
	}
	done := &RunDone{Status: capacity.StatusComplete, Complete: !before || unchecked == 0}
	done.Lines = append([]string{fmt.Sprintf("study %d KV cache types: speed against quality (KL divergence from an f16 cache on the same model):", id)}, lines...)
	return done, nil
}
