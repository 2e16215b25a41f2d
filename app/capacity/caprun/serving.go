package caprun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"sparkbench/app/analysis"
	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/server"
)

// Run folder files of a serving plan (docs/serving.md).
const (
	RunServingFile = "serving.jsonl" // per lifetime, beside requests.jsonl
	RunHarnessFile = "harness.json"  // the run folder's harness floor
)

// servingProbes runs a serving plan's open-loop probes on a lifetime's server (after its
// closed-loop client levels): the sweep's rates, then the rates the max-rate search picks from
// the probes before, each a seeded schedule of measured requests after closed-loop warmups.
// With the server gone (gone != ""), every probe the plan asks for is written as not sent, so
// the file is complete and says why. Only an I/O failure or the run's end is an error.
func (r *Run) servingProbes(p *capacity.Plan, sha string, key capacity.LifetimeKey, srv *server.Server, gone string,
	prompts *loadgen.PromptPlan, next *int, origin time.Time, rl *capacity.RunLifetime) error {
	s := p.Serving
	rel := filepath.Join(rl.Dir, RunServingFile)
	f, err := os.Create(filepath.Join(r.spec.OutDir, rel))
	if err != nil {
		return err
	}
	defer f.Close()
	sw, err := capacity.NewServingWriter(f, capacity.RequestHeader{Pass: key.Pass, Candidate: key.Candidate, Slots: key.Slots, PlanSHA256: sha})
	if err != nil {
		return err
	}
	rl.Files["serving"] = rel
	wd, err := r.loadWorkload(p)
	if err != nil {
		return err
	}
	var pts []capacity.ProbePoint
	for probe := 0; ; probe++ {
		rate, kind, done, _ := s.NextProbe(pts)
		if done {
			break
		}
		if r.ctx.Err() != nil {
			return context.Cause(r.ctx)
		}
		base, n := *next, s.ProbeRequests(rate)
		*next += s.Warmups + n
		cfg := loadgen.Config{Clients: 1, Warmups: s.Warmups, Measured: n, NPredict: p.NPredict, Seed: p.Seed,
			Prompt: func(i int) string { return prompts.Prompt(base + i) }, Timeout: r.spec.RequestTimeout, Origin: origin,
			Schedule: s.ProbeSchedule(rate), MaxInFlight: s.MaxInFlight, CachePrompt: s.CachePrompt}
		if gone == "" && srv != nil && !srv.Alive() {
			gone = serverGone(srv)
		}
		var pw *probeWork
		if wd != nil {
			url := ""
			if gone == "" && srv != nil {
				url = srv.URL()
			}
			if pw, err = r.probeWorkload(r.ctx, wd, p, url, base, s.Warmups+n, probe == 0); err != nil {
				return err
			}
			cfg.Prompt = func(i int) string { return pw.reqs[i].Prompt }
			cfg.NPredictOf = func(i int) int { return pw.reqs[i].NPredict }
			if pw.follows != nil {
				cfg.Measured, cfg.Follows = len(pw.follows), pw.follows
			}
		}
		var results []loadgen.Result
		if gone != "" {
			cfg.URL = "http://127.0.0.1:1"
			ctx, cancel := context.WithCancelCause(r.ctx)
			cancel(errors.New(gone))
			results = drain(loadgen.Start(ctx, cfg))
		} else {
			results = r.probeOn(srv, cfg)
		}
		var measured []capacity.ServingRecord
		for _, res := range results {
			rec := servingRecord(probe, rate, res)
			if pw != nil && res.Index >= 0 && res.Index < len(pw.reqs) {
				rec.PromptTokens, rec.NPredict = pw.tokens[res.Index], pw.reqs[res.Index].NPredict
				pw.place(&rec, res.Index)
			}
			if err := sw.Write(rec); err != nil {
				return err
			}
			if rec.Phase == capacity.PhaseMeasured {
				measured = append(measured, rec)
			}
		}
		pr := capacity.ProbeMetrics(s, p.NPredict, probe, kind, rate, measured)
		pts = append(pts, pr.Point())
	}
	return f.Sync()
}

// probeOn runs one probe against a live server; a server that dies cuts it short.
func (r *Run) probeOn(srv *server.Server, cfg loadgen.Config) []loadgen.Result {
	a, done := r.startOn(srv, cfg, cfg.MaxInFlight)
	defer done()
	return drain(a)
}

func drain(a *loadgen.Attack) []loadgen.Result {
	var out []loadgen.Result
	for res := range a.Results() {
		out = append(out, res)
	}
	return out
}

// servingRecord is a load generator result as an open-loop record.
func servingRecord(probe int, rate float64, res loadgen.Result) capacity.ServingRecord {
	rr := requestRecord(res)
	rec := capacity.ServingRecord{Probe: probe, Rate: rate, Phase: rr.Phase, Seq: rr.Seq, SendMs: rr.SendMs,
		FirstTokenMs: rr.FirstTokenMs, EndMs: rr.EndMs, Tokens: rr.Tokens, Events: res.ContentEvents, HTTPStatus: rr.HTTPStatus, Error: rr.Error}
	if rr.Phase == capacity.PhaseMeasured {
		sched := min(msSince(res.Scheduled), rec.SendMs)
		rec.ScheduledMs = &sched
	}
	if t := res.Timings; t != nil {
		rec.Timings = &capacity.ServingTimings{PromptN: t.PromptN, PromptMs: t.PromptMs, PredictedN: t.PredictedN, PredictedMs: t.PredictedMs, CacheN: t.CacheN}
	}
	return rec
}

// harnessFloor is the null run of a serving plan: the client against the built-in fake server,
// which answers at once (no TTFT, no gap between tokens), at the study's highest concurrency
// (its largest client level or slot count) and payload (n_predict tokens), closed-loop. What it
// measures is the client's own overhead; the CPU time is the process's, the fake's included
// (an upper bound on the client's).
func harnessFloor(ctx context.Context, p *capacity.Plan) (*capacity.HarnessFloor, error) {
	c := max(slices.Max(p.Slots), 1)
	if len(p.Clients) > 0 {
		c = max(c, slices.Max(p.Clients))
	}
	n := min(max(8*c, 64), 1024)
	fake, err := loadgen.StartFake(loadgen.FakeConfig{})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	prompt := func(i int) string { return "harness floor " + string(rune('a'+i%26)) }
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	rs := drain(loadgen.Start(ctx, loadgen.Config{URL: fake.URL, Clients: c, Warmups: c, Measured: n, NPredict: p.NPredict, Seed: p.Seed, Prompt: prompt}))
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	h := &capacity.HarnessFloor{Schema: capacity.SchemaHarnessFloor, Server: "built-in fake (loadgen.FakeServer, in this process, answering at once)",
		Clients: c, Requests: n, NPredict: p.NPredict, WallMs: msSince(wall)}
	var ttft, itl []float64
	for _, r := range rs {
		if !r.OK() {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, errors.New("harness floor: a request to the built-in fake failed: " + r.Error)
		}
		h.Tokens += r.Tokens
		if r.Phase != loadgen.PhaseMeasured || r.Tokens < 2 {
			continue
		}
		ttft = append(ttft, msSince(r.FirstToken-r.Send))
		itl = append(itl, msSince(r.End-r.FirstToken)/float64(r.Tokens-1))
	}
	q := func(xs []float64, pc float64) float64 { v, _ := analysis.Percentile(xs, pc); return v }
	h.TTFTMsP50, h.TTFTMsP99, h.ITLMsP50, h.ITLMsP99 = q(ttft, 50), q(ttft, 99), q(itl, 50), q(itl, 99)
	if h.Tokens > 0 {
		h.CPUUsPerToken = float64(cpu.Microseconds()) / float64(h.Tokens)
	}
	return h, nil
}

// writeHarnessFloor measures the harness floor into the run folder unless it is there (a
// resumed run keeps its own).
func (r *Run) writeHarnessFloor(p *capacity.Plan) error {
	path := filepath.Join(r.spec.OutDir, RunHarnessFile)
	if p.Serving == nil {
		return nil
	}
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	h, err := harnessFloor(r.ctx, p)
	if err != nil {
		return err
	}
	b, err := canon.Marshal(h)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// servingInputs adds a serving plan's files of the run folder to in.
func servingInputs(out string, dirs capacity.LifetimeDirs, p *capacity.Plan, sched []capacity.Lifetime, in *capacity.Inputs) error {
	if p.Serving == nil {
		return nil
	}
	in.Serving = map[capacity.LifetimeKey]capacity.InputFile{}
	for _, lt := range sched {
		path := filepath.Join(out, filepath.FromSlash(dirs.Of(lt.Key)), RunServingFile)
		data, err := os.ReadFile(path)
		if err != nil {
			return &capacity.InputError{Flag: capacity.FlagServing, Key: lt.Key.String(), Err: err}
		}
		in.Serving[lt.Key] = capacity.InputFile{Name: path, Data: data}
	}
	path := filepath.Join(out, RunHarnessFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return &capacity.InputError{Flag: capacity.FlagHarness, Err: err}
	}
	in.Harness = &capacity.InputFile{Name: path, Data: data}
	return nil
}

// servingArgs are the serving plan's `capacity assemble` arguments.
func servingArgs(out string, dirs capacity.LifetimeDirs, sched []capacity.Lifetime) []string {
	var args []string
	for _, lt := range sched {
		args = append(args, capacity.FlagServing, lt.Key.String()+"="+filepath.Join(out, filepath.FromSlash(dirs.Of(lt.Key)), RunServingFile))
	}
	return append(args, capacity.FlagHarness, filepath.Join(out, RunHarnessFile))
}
