package study

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// RPCServer is a ggml-rpc-server the run starts on a bench host before its first leg and stops
// after its last (plan.rpc_servers, docs/fleet.md "RPC topologies"). Its devices are RPCn in
// the devices axis, numbered after axes.rpc's endpoints in the order listed.
type RPCServer struct {
	// Host is a host's name in the hosts file: the server starts there through ssh.
	Host string `json:"host"`
	// Endpoint is HOST:PORT: the address the server binds (-H, -p) and llama-bench dials
	// (--rpc); 127.0.0.1 for a server on this machine or a loopback host.
	Endpoint string `json:"endpoint"`
	// Threads is -t for the server's CPU device (0: the server's default).
	Threads int `json:"threads,omitempty"`
	// Device is -d: the host's devices the server offers (e.g. "Vulkan0"; empty: its default).
	Device string `json:"device,omitempty"`
}

// Bind is the endpoint's address (ParseEndpoint has checked its form).
func (s RPCServer) Bind() string {
	h, _, _ := net.SplitHostPort(s.Endpoint)
	return h
}

// Port is the endpoint's port (0 when it has none).
func (s RPCServer) Port() int {
	_, p, _ := net.SplitHostPort(s.Endpoint)
	n, _ := strconv.Atoi(p)
	return n
}

// RPCEndpoints are every endpoint a leg registers (--rpc): axes.rpc's, then the servers'.
func (p *Plan) RPCEndpoints() []string {
	out := slices.Clone(p.Axes.RPC)
	for _, s := range p.RPCServers {
		out = append(out, s.Endpoint)
	}
	return out
}

// RPCDeviceEndpoint is the endpoint of device RPCn (n counts over RPCEndpoints), and the
// server the run starts for it (nil for an axes.rpc endpoint).
func (p *Plan) RPCDeviceEndpoint(dev string) (string, *RPCServer, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(dev, "RPC"))
	eps := p.RPCEndpoints()
	if !strings.HasPrefix(dev, "RPC") || err != nil || n < 0 || n >= len(eps) {
		return "", nil, false
	}
	if k := n - len(p.Axes.RPC); k >= 0 {
		return eps[n], &p.RPCServers[k], true
	}
	return eps[n], nil, true
}

var rpcHostRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
var rpcDeviceRE = regexp.MustCompile(`^[A-Za-z0-9_]+(,[A-Za-z0-9_]+)*$`)

// CheckRPCServers checks the form of an rpc_servers list (a throughput plan's, or a capacity
// plan's) as a throughput plan's is checked; axesRPC are endpoints of servers kept running by
// someone else (a throughput plan's axes.rpc), which the list must not repeat. The paths are
// rpc_servers[i].FIELD.
func CheckRPCServers(servers []RPCServer, axesRPC []string) []Problem {
	v := &validator{p: &Plan{RPCServers: servers, Axes: Axes{RPC: axesRPC}}}
	v.checkRPCServers()
	return v.problems
}

// checkRPCServers checks plan.rpc_servers' form; the hosts are looked up when the run starts.
func (v *validator) checkRPCServers() {
	seen := map[string]bool{}
	for _, ep := range v.p.Axes.RPC {
		if e, err := ParseEndpoint(ep); err == nil {
			seen[e] = true
		}
	}
	for i, s := range v.p.RPCServers {
		at := fmt.Sprintf("rpc_servers[%d]", i)
		if !rpcHostRE.MatchString(s.Host) {
			v.errf(at+".host", "%q: want a host's name from the hosts file (docs/fleet.md)", s.Host)
		}
		ep, err := ParseEndpoint(s.Endpoint)
		switch {
		case err != nil:
			v.errf(at+".endpoint", "%v", err)
		case seen[ep]:
			v.errf(at+".endpoint", "%s is listed twice (rpc_servers and axes.rpc together): one server per endpoint", ep)
		}
		seen[ep] = true
		if s.Threads < 0 || s.Threads > 1024 {
			v.errf(at+".threads", "%d: want 1 to 1024 (or leave it out for the server's default)", s.Threads)
		}
		if s.Device != "" && !rpcDeviceRE.MatchString(s.Device) {
			v.errf(at+".device", "%q: want device names as the host's --list-devices prints them, joined by commas (e.g. Vulkan0)", s.Device)
		}
	}
}

// rpcServerDevice reports whether dev (RPCn) is a device a plan's rpc_servers entry gives: it
// cannot be listed before the run starts the server, so the device checks accept it and the
// leg's RPC evidence gate checks it instead.
func rpcServerDevice(p *Plan, dev string) bool {
	_, s, ok := p.RPCDeviceEndpoint(dev)
	return ok && s != nil
}

// RPC evidence gate codes (docs/fleet.md): a leg on RPC devices of the plan's servers whose
// rows do not name the RPC backend, whose log does not show every remote device it asked for,
// or during which a server ended.
const (
	CodeRPCNoBackend  = "rpc:no_backend"
	CodeRPCNotInLog   = "rpc:device_not_in_log"
	CodeRPCServerDied = "rpc:server_died"
)

// CodeModelChanged is a leg whose model file is no longer the one the run read and checked
// against the plan's SHA-256 (another size, inode or ctime), or whose llama-bench rows report
// another model (model_size, model_type): its rows are flagged and the run halts.
const CodeModelChanged = "model:changed"

// RPCLegDevices are the RPCn devices a leg's devices value names ("RPC0/RPC1" → both; none
// for "none", "auto" or a local device).
func RPCLegDevices(dev string) []string {
	var out []string
	for _, d := range strings.Split(dev, "/") {
		if strings.HasPrefix(d, "RPC") {
			out = append(out, d)
		}
	}
	return out
}
