package studyrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/remote"
)

// EnvHosts names the hosts file a plan's rpc_servers are looked up in when Engine.RPCHosts is
// nil (then hosts.json in the user's sparkbench configuration folder), as the CLI's --hosts.
const EnvHosts = remote.EnvHosts

// rpcLogKeep is how much of a server's output its stop entry keeps (the end).
const rpcLogKeep = 16 << 10

// rpcTopology is a run's ggml-rpc-servers, started before its first leg and stopped after its
// last.
type rpcTopology struct {
	servers  []*remote.RPCServer
	hosts    map[string]string // endpoint -> host name
	conns    []*remote.Conn
	died     string // why a server ended during the run ("" while none did)
	reported map[*remote.RPCServer]bool
}

// DefaultHosts reads the hosts file named by $SPARKBENCH_HOSTS, else the user's
// sparkbench/hosts.json.
func DefaultHosts() (*remote.HostsFile, error) {
	p, err := remote.HostsPath("")
	if err != nil {
		return nil, err
	}
	f, err := remote.LoadHosts(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("rpc_servers: no hosts file at %s: write one (docs/fleet.md) and set $%s", p, EnvHosts)
	}
	return f, err
}

// startRPC starts the plan's rpc_servers (none when it lists none, or no leg is left to run):
// every host is resolved and connected and every port checked before the first server starts,
// so a port already taken refuses the run with nothing started.
func (r *run) startRPC(ctx context.Context) error {
	p := r.l.Plan
	if len(p.RPCServers) == 0 || r.progress.LegsDone == len(r.l.Legs) {
		return nil
	}
	load := r.e.RPCHosts
	if load == nil {
		load = DefaultHosts
	}
	hf, err := load()
	if err != nil {
		return err
	}
	t := &rpcTopology{hosts: map[string]string{}, reported: map[*remote.RPCServer]bool{}}
	r.rpc = t
	conns := map[string]*remote.Conn{}
	specs := make([]remote.RPCSpec, len(p.RPCServers))
	for i, s := range p.RPCServers {
		h, err := hf.Find(s.Host)
		if err != nil {
			return fmt.Errorf("rpc_servers[%d].host: %w", i, err)
		}
		if conns[h.Name] == nil {
			c, err := remote.Open(ctx, h, remote.Options{Config: hf.SSHConfig})
			if err != nil {
				return fmt.Errorf("rpc_servers[%d]: %w", i, err)
			}
			conns[h.Name] = c
			t.conns = append(t.conns, c)
		}
		specs[i] = remote.RPCSpec{Bind: s.Bind(), Port: s.Port(), Threads: s.Threads, Env: p.Build.EnvList()}
		if s.Device != "" {
			specs[i].Devices = strings.Split(s.Device, ",")
		}
		t.hosts[s.Endpoint] = s.Host
	}
	for i, s := range p.RPCServers {
		if err := conns[s.Host].CheckRPCPort(ctx, specs[i]); err != nil {
			r.noteRPC(ctx, study.RPCServerNote{Event: "refused", Host: s.Host, Endpoint: s.Endpoint, Error: err.Error()})
			return fmt.Errorf("rpc_servers[%d]: %w", i, err)
		}
	}
	for i, s := range p.RPCServers {
		srv, err := remote.StartRPC(ctx, conns[s.Host], specs[i])
		if err != nil {
			r.noteRPC(ctx, study.RPCServerNote{Event: "refused", Host: s.Host, Endpoint: s.Endpoint, Error: err.Error()})
			return fmt.Errorf("rpc_servers[%d]: %w", i, err)
		}
		t.servers = append(t.servers, srv)
		r.noteRPC(ctx, study.RPCServerNote{Event: "started", Host: s.Host, Endpoint: s.Endpoint, Argv: srv.Argv, Via: srv.Via, PID: srv.PID})
	}
	return nil
}

func (r *run) noteRPC(ctx context.Context, n study.RPCServerNote) {
	_ = r.e.Rec.Note(context.WithoutCancel(ctx), r.l.St.ID, study.NoteRPCServer, n)
}

// stopRPC stops the servers (SIGTERM, then SIGKILL, bounded), journals each stop with the
// server's log, closes the connections, and returns an error naming any server still on its
// host.
func (r *run) stopRPC(ctx context.Context) error {
	t := r.rpc
	if t == nil {
		return nil
	}
	r.rpc = nil
	wctx := context.WithoutCancel(ctx)
	reps, err := remote.StopAll(wctx, t.servers)
	for i, rep := range reps {
		n := study.RPCServerNote{Event: "stopped", Host: rep.Host, Endpoint: t.servers[i].Spec.Endpoint(), PID: rep.PID,
			Signal: rep.Signal, Exited: rep.Exited, Error: rep.Error, Log: tail(t.servers[i].Log(), rpcLogKeep)}
		n.Endpoint = endpointOf(t, t.servers[i])
		for _, l := range rep.Left {
			n.Left = append(n.Left, fmt.Sprintf("%d %s", l.PID, l.Argv))
		}
		r.noteRPC(wctx, n)
	}
	for _, c := range t.conns {
		c.Close()
	}
	return err
}

// endpointOf is the plan's spelling of the server's endpoint.
func endpointOf(t *rpcTopology, s *remote.RPCServer) string {
	for ep := range t.hosts {
		if sp, err := study.ParseEndpoint(ep); err == nil && sp == s.Spec.Endpoint() {
			return ep
		}
	}
	return s.Spec.Endpoint()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// rpcGates checks a plan leg run while the plan's servers are up: a server that ended during
// it is recorded (gate rpc:server_died, the leg's reason names host and endpoint; the run then
// halts), a leg on the servers' devices must pass the RPC evidence gate (its rows name the RPC
// backend, llama.cpp's log shows each device at its endpoint), else its rows are flagged; and
// the per-host layer split llama.cpp reported is journaled.
func (r *run) rpcGates(ctx context.Context, res *runner.LegResult, ls study.LegStart, legID int64, end *study.LegEnd) error {
	t := r.rpc
	if t == nil || ls.Role != study.RoleLeg {
		return nil
	}
	for _, s := range t.servers {
		died, why := s.Died()
		if !died || t.reported[s] {
			continue
		}
		t.reported[s], t.died = true, why
		if err := r.e.Rec.RecordGate(ctx, study.GateRecord{StudyID: r.l.St.ID, LegID: legID, Name: "rpc:" + endpointOf(t, s),
			Code: study.CodeRPCServerDied, Detail: map[string]any{"host": s.Conn.Host.Name, "endpoint": endpointOf(t, s), "pid": s.PID, "reason": why}}); err != nil {
			return err
		}
		end.Reason = strings.TrimSpace(why + "; llama-bench: " + end.Reason)
		if end.Class == string(runner.ClassOK) {
			end.Class = string(runner.ClassFailed)
		}
	}
	var transcript string
	if res.Transcript != nil {
		transcript = string(res.Transcript.Bytes())
	}
	uses, local := study.ParseRPCLog(transcript)
	for i := range uses {
		uses[i].Host = t.hosts[uses[i].Endpoint]
	}
	if len(uses) > 0 {
		if err := r.e.Rec.Note(ctx, r.l.St.ID, study.NoteRPCSplit, study.RPCSplitNote{Leg: legID, Label: ls.Label, Devices: uses, Local: local}); err != nil {
			return err
		}
	}
	if end.Class != string(runner.ClassOK) {
		return nil
	}
	var backends []string
	for _, row := range res.Rows {
		if row.Status == runner.RowResult {
			backends = append(backends, row.Sample.Result.Backends)
		}
	}
	code, why := study.RPCEvidence(r.l.Plan, r.legDevice(ls.PlanLeg), backends, uses)
	if code == "" {
		return nil
	}
	if err := r.e.Rec.RecordGate(ctx, study.GateRecord{StudyID: r.l.St.ID, LegID: legID, Name: "rpc:evidence", Code: code,
		Detail: map[string]any{"reason": why, "devices": uses}}); err != nil {
		return err
	}
	for i, s := range end.RowStatus {
		if runner.RowStatus(s) == runner.RowResult {
			end.RowStatus[i] = string(runner.RowFlagged)
		}
	}
	end.Class, end.Reason = string(runner.ClassFlagged), code+": "+why
	return nil
}

func (r *run) legDevice(planLeg string) string {
	for _, lp := range r.l.Legs {
		if lp.ID == planLeg {
			return lp.Device
		}
	}
	return ""
}

// rpcHalt is the halt after a leg during which a server ended: the legs after it would only
// fail the same way.
func (r *run) rpcHalt() *runner.QueueStatus {
	if r.rpc == nil || r.rpc.died == "" {
		return nil
	}
	return &runner.QueueStatus{Halted: true, Class: runner.Class(strings.TrimPrefix(study.CodeRPCServerDied, "rpc:")), Reason: r.rpc.died}
}
