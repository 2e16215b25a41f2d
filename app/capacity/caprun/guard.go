package caprun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/runner/quality"
	"sparkbench/runner/server"
)

// guardRun is one quality-guard server: a candidate at a slot count, with the arguments its
// load lifetimes had.
type guardRun struct {
	key  capacity.QualityKey
	args []string
}

// guardSchedule lists the guard runs: candidates and slots in plan order.
func guardSchedule(p *capacity.Plan, sched []capacity.Lifetime) []guardRun {
	args := map[capacity.QualityKey][]string{}
	for _, lt := range sched {
		args[capacity.QualityKey{Candidate: lt.Key.Candidate, Slots: lt.Key.Slots}] = lt.Args
	}
	var out []guardRun
	for _, c := range p.Candidates {
		for _, s := range p.Slots {
			k := capacity.QualityKey{Candidate: c.ID, Slots: s}
			out = append(out, guardRun{k, args[k]})
		}
	}
	return out
}

func guardDir(k capacity.QualityKey) string {
	return filepath.Join("quality", k.Candidate, fmt.Sprintf("p%d", k.Slots))
}

// guard runs the quality cases sequentially on a fresh server of one (candidate, P) and writes
// its evidence. A server that does not start fails every case, with the reason.
func (r *Run) guard(p *capacity.Plan, g guardRun, cases *quality.Cases) (capacity.RunGuard, error) {
	spec := r.spec
	rel := guardDir(g.key)
	dir := filepath.Join(spec.OutDir, rel)
	rg := capacity.RunGuard{Key: g.key.String(), Dir: rel, Files: map[string]string{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rg, err
	}
	r.emit(capacity.RunEvent{Type: capacity.GuardStarted, Lifetime: rg.Key})
	logf, err := os.Create(filepath.Join(dir, capacity.RunServerLogFile))
	if err != nil {
		return rg, err
	}
	defer logf.Close()
	rg.Files["server_log"] = filepath.Join(rel, capacity.RunServerLogFile)
	ev := quality.Evidence{Schema: quality.SchemaEvidence, Candidate: g.key.Candidate, Slots: g.key.Slots}
	srv, serr := server.Start(r.ctx, r.serverSpec(g.args, logLines{logf, r, rg.Key}))
	if serr != nil {
		var se *server.StartError
		if !errors.As(serr, &se) {
			return rg, serr
		}
		rg.Server = capacity.RunServer{Attempts: se.Attempts, Class: string(se.Class), Reason: se.Reason}
		if r.ctx.Err() != nil {
			return rg, context.Cause(r.ctx) // the stop, not the server: not a failed guard
		}
		for _, k := range cases.Cases {
			ev.Cases = append(ev.Cases, quality.CaseOutcome{ID: k.ID, Outcome: "fail", Matcher: k.Matcher,
				Detail: clipText("not run: llama-server did not become healthy: " + se.Reason)})
		}
	} else {
		rg.Server = capacity.RunServer{Argv: srv.Argv(), Port: srv.Port(), Pid: srv.Pid(), ReadyIn: srv.ReadyIn(), Attempts: srv.Attempts()}
		ev, err = quality.Run(r.ctx, quality.Config{URL: srv.URL(), Candidate: g.key.Candidate, Slots: g.key.Slots,
			Seed: p.Seed, Timeout: spec.RequestTimeout}, cases)
		cut := r.ctx.Err() != nil // the stop came while the cases ran: some may be cut
		st := srv.Stop(context.Background())
		rg.Server.Class, rg.Server.Reason, rg.Server.Unexpect = string(st.Exit.Class), st.Exit.Reason, st.Unexpected
		if st.RSS.KiB > 0 {
			rg.Server.RSS = &st.RSS
		}
		if n := srv.Network(); n != nil {
			rg.Server.Network = &capacity.RunNetwork{Host: n.Host, SSH: n.SSH, Path: n.Path(), LocalPort: n.LocalPort, RemotePort: n.RemotePort, Left: []string{}}
		}
		if lerr := remoteStopped(&rg.Server, st); lerr != nil && err == nil {
			err = lerr
		}
		if err != nil {
			return rg, err
		}
		if cut {
			return rg, context.Cause(r.ctx)
		}
	}
	rg.Score, rg.Cases = ev.Score(), len(ev.Cases)
	b, err := canon.Marshal(ev)
	if err != nil {
		return rg, err
	}
	if err := os.WriteFile(filepath.Join(dir, capacity.RunQualityFile), append(b, '\n'), 0o644); err != nil {
		return rg, err
	}
	rg.Files["quality"] = filepath.Join(rel, capacity.RunQualityFile)
	r.mu.Lock()
	r.prog.GuardsDone++
	r.mu.Unlock()
	r.emit(capacity.RunEvent{Type: capacity.GuardDone, Lifetime: rg.Key, Guard: &rg})
	return rg, nil
}
