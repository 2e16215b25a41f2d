package caprun

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/app/study/rpclife"
)

// The plan's rpc_servers (docs/capacity.md "RPC topologies"): started over ssh before the first
// server lifetime (every host connected and every port checked first: a taken port refuses the
// run before anything runs), checked after each lifetime (a server that ended halts the run),
// stopped after the last lifetime and quality guard, also on a halt, a stop or an error. Each
// start, refusal and stop is an rpc_server event (the engine journals it as
// capacity.rpc_server) and goes into run.json's rpc_servers.

// startRPC starts the plan's servers unless it has none or a resumed run kept every lifetime
// and guard.
func (r *Run) startRPC(bk *runBook, p *capacity.Plan, kept *resumeState) error {
	if len(p.RPCServers) == 0 || !r.leftToRun(bk, kept) {
		return nil
	}
	var err error
	r.rpc, err = rpclife.Start(r.ctx, r.spec.RPCHosts, p.RPCServers, p.Build.EnvList(), r.noteRPC(bk))
	return err
}

// leftToRun says whether any lifetime or quality guard of the schedule is still to run.
func (r *Run) leftToRun(bk *runBook, kept *resumeState) bool {
	for _, lt := range bk.sched {
		if _, ok := kept.lifetime(lt.Key); !ok {
			return true
		}
	}
	for _, g := range bk.guards {
		if _, ok := kept.guard(g.key); !ok {
			return true
		}
	}
	return false
}

func (r *Run) noteRPC(bk *runBook) rpclife.Journal {
	return func(n study.RPCServerNote) {
		bk.rep.RPCServers = append(bk.rep.RPCServers, n)
		r.emit(capacity.RunEvent{Type: capacity.RPCServerEvent, RPC: &n})
	}
}

// rpcAfter follows a lifetime that ran while the servers were up: an RPC candidate's split, as
// its server log says, goes out as an rpc_split event (journaled), and a server that ended
// during it halts the run (rpcDied) and marks the lifetime interrupted (a resumed run measures
// it again).
func (r *Run) rpcAfter(cand capacity.Candidate, rl *capacity.RunLifetime) error {
	if r.rpc == nil {
		return nil
	}
	if log, ok := rl.Files["server_log"]; ok && cand.RPC {
		data, err := os.ReadFile(filepath.Join(r.spec.OutDir, log))
		if err != nil {
			return err
		}
		if s := r.spec.Plan.RPCLifetime(cand, data); s != nil && len(s.Devices) > 0 {
			r.emit(capacity.RunEvent{Type: capacity.RPCSplitEvent, Lifetime: rl.Key, RPCSplit: s})
		}
	}
	err := r.rpcDied()
	if err != nil {
		rl.Interrupted = clipText(err.Error())
	}
	return err
}

// rpcDied is an rpc:server_died error when one of the servers ended during the run (the
// lifetimes after it would only fail the same way), else nil.
func (r *Run) rpcDied() error {
	if r.rpc == nil {
		return nil
	}
	for _, s := range r.rpc.Servers {
		if died, why := s.Died(); died {
			return errors.New(why)
		}
	}
	return nil
}

// stopRPC stops the servers and returns the run's error: runErr, else rpc:server_died when a
// server ended after the last lifetime (during the quality guards), else an error naming a
// server left on its host.
func (r *Run) stopRPC(bk *runBook, runErr error) error {
	t := r.rpc
	if t == nil {
		return runErr
	}
	if runErr == nil {
		runErr = r.rpcDied()
	}
	r.rpc = nil
	err := t.Stop(context.WithoutCancel(r.ctx), r.noteRPC(bk))
	if runErr != nil {
		return runErr
	}
	return err
}
