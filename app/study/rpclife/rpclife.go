// Package rpclife is the lifecycle of a run's ggml-rpc-servers (a plan's rpc_servers,
// docs/fleet.md "RPC topologies"), shared by throughput runs (app/study/studyrun) and capacity
// runs (app/capacity/caprun): every host resolved and connected and every port checked before
// the first server starts, each server started over ssh and waited for, and all of them
// stopped with a check that none is left; each start, refusal and stop is handed to the
// caller's journal as a study.RPCServerNote.
package rpclife

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/remote"
)

// EnvHosts names the hosts file rpc_servers are looked up in when a run is given no loader
// (then hosts.json in the user's sparkbench configuration folder), as the CLI's --hosts.
const EnvHosts = remote.EnvHosts

// LogKeep is how much of a server's output its stop note keeps (the end).
const LogKeep = 16 << 10

// HostsLoader reads the hosts file the servers' hosts are looked up in.
type HostsLoader func() (*remote.HostsFile, error)

// Journal receives each server's start, refusal and stop.
type Journal func(study.RPCServerNote)

// Topology is a run's ggml-rpc-servers, started before its first measurement and stopped after
// its last.
type Topology struct {
	Servers []*remote.RPCServer
	hosts   map[string]string // plan endpoint -> host name
	conns   []*remote.Conn
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

// Specs are the servers' start specifications (env: the device visibility variables they run
// with).
func Specs(servers []study.RPCServer, env []string) []remote.RPCSpec {
	specs := make([]remote.RPCSpec, len(servers))
	for i, s := range servers {
		specs[i] = remote.RPCSpec{Bind: s.Bind(), Port: s.Port(), Threads: s.Threads, Env: env}
		if s.Device != "" {
			specs[i].Devices = strings.Split(s.Device, ",")
		}
	}
	return specs
}

// Start starts servers (load nil: DefaultHosts): every host is resolved and connected and
// every port checked before the first server starts, so a port already taken refuses the run
// with nothing started (a "refused" note, an error naming the server). The topology returned is
// never nil: Stop it whatever the error (it closes the connections and stops what started).
func Start(ctx context.Context, load HostsLoader, servers []study.RPCServer, env []string, note Journal) (*Topology, error) {
	t := &Topology{hosts: map[string]string{}}
	if len(servers) == 0 {
		return t, nil
	}
	if load == nil {
		load = DefaultHosts
	}
	hf, err := load()
	if err != nil {
		return t, err
	}
	conns := map[string]*remote.Conn{}
	specs := Specs(servers, env)
	for i, s := range servers {
		h, err := hf.Find(s.Host)
		if err != nil {
			return t, fmt.Errorf("rpc_servers[%d].host: %w", i, err)
		}
		if conns[h.Name] == nil {
			c, err := remote.Open(ctx, h, remote.Options{Config: hf.SSHConfig})
			if err != nil {
				return t, fmt.Errorf("rpc_servers[%d]: %w", i, err)
			}
			conns[h.Name] = c
			t.conns = append(t.conns, c)
		}
		t.hosts[s.Endpoint] = s.Host
	}
	for i, s := range servers {
		if err := conns[s.Host].CheckRPCPort(ctx, specs[i]); err != nil {
			note(study.RPCServerNote{Event: "refused", Host: s.Host, Endpoint: s.Endpoint, Error: err.Error()})
			return t, fmt.Errorf("rpc_servers[%d]: %w", i, err)
		}
	}
	for i, s := range servers {
		srv, err := remote.StartRPC(ctx, conns[s.Host], specs[i])
		if err != nil {
			note(study.RPCServerNote{Event: "refused", Host: s.Host, Endpoint: s.Endpoint, Error: err.Error()})
			return t, fmt.Errorf("rpc_servers[%d]: %w", i, err)
		}
		t.Servers = append(t.Servers, srv)
		note(study.RPCServerNote{Event: "started", Host: s.Host, Endpoint: s.Endpoint, Argv: srv.Argv, Via: srv.Via, PID: srv.PID})
	}
	return t, nil
}

// Stop stops the servers (SIGTERM, then SIGKILL, bounded), notes each stop with the server's
// log, closes the connections, and returns an error naming any server still on its host. It
// runs to its end even when ctx is cancelled.
func (t *Topology) Stop(ctx context.Context, note Journal) error {
	if t == nil {
		return nil
	}
	wctx := context.WithoutCancel(ctx)
	reps, err := remote.StopAll(wctx, t.Servers)
	for i, rep := range reps {
		n := study.RPCServerNote{Event: "stopped", Host: rep.Host, Endpoint: t.EndpointOf(t.Servers[i]), PID: rep.PID,
			Signal: rep.Signal, Exited: rep.Exited, Error: rep.Error, Log: tail(t.Servers[i].Log(), LogKeep)}
		for _, l := range rep.Left {
			n.Left = append(n.Left, fmt.Sprintf("%d %s", l.PID, l.Argv))
		}
		note(n)
	}
	for _, c := range t.conns {
		c.Close()
	}
	t.conns = nil
	return err
}

// Host is the host name of a plan endpoint ("" when the topology has no such server).
func (t *Topology) Host(endpoint string) string { return t.hosts[endpoint] }

// EndpointOf is the plan's spelling of the server's endpoint.
func (t *Topology) EndpointOf(s *remote.RPCServer) string {
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
