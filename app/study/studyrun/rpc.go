package studyrun

import (
	"context"
	"strings"

	"sparkbench/app/study"
	"sparkbench/app/study/rpclife"
	"sparkbench/runner"
	"sparkbench/runner/remote"
)

// EnvHosts names the hosts file a plan's rpc_servers are looked up in when Engine.RPCHosts is
// nil (then hosts.json in the user's sparkbench configuration folder), as the CLI's --hosts.
const EnvHosts = rpclife.EnvHosts

// rpcTopology is a run's ggml-rpc-servers (app/study/rpclife), started before its first leg
// and stopped after its last.
type rpcTopology struct {
	topo     *rpclife.Topology
	hosts    map[string]string // endpoint -> host name
	died     string            // why a server ended during the run ("" while none did)
	reported map[*remote.RPCServer]bool
}

func (t *rpcTopology) servers() []*remote.RPCServer {
	if t.topo == nil {
		return nil
	}
	return t.topo.Servers
}

// DefaultHosts reads the hosts file named by $SPARKBENCH_HOSTS, else the user's
// sparkbench/hosts.json.
func DefaultHosts() (*remote.HostsFile, error) { return rpclife.DefaultHosts() }

// startRPC starts the plan's rpc_servers (none when it lists none, or no leg is left to run):
// every host is resolved and connected and every port checked before the first server starts,
// so a port already taken refuses the run with nothing started.
func (r *run) startRPC(ctx context.Context) error {
	p := r.l.Plan
	if len(p.RPCServers) == 0 || r.progress.LegsDone == len(r.l.Legs) {
		return nil
	}
	t := &rpcTopology{hosts: map[string]string{}, reported: map[*remote.RPCServer]bool{}}
	for _, s := range p.RPCServers {
		t.hosts[s.Endpoint] = s.Host
	}
	r.rpc = t
	var err error
	t.topo, err = rpclife.Start(ctx, r.e.RPCHosts, p.RPCServers, p.Build.EnvList(), func(n study.RPCServerNote) { r.noteRPC(ctx, n) })
	return err
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
	return t.topo.Stop(ctx, func(n study.RPCServerNote) { r.noteRPC(ctx, n) })
}

// endpointOf is the plan's spelling of the server's endpoint.
func endpointOf(t *rpcTopology, s *remote.RPCServer) string {
	if t.topo != nil {
		return t.topo.EndpointOf(s)
	}
	return s.Spec.Endpoint()
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
	for _, s := range t.servers() {
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
