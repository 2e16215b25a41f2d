package study

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Journal entries of the RPC topology (docs/fleet.md).
const (
	NoteRPCServer = "study.rpc_server" // RPCServerNote: a server started or stopped
	NoteRPCSplit  = "study.rpc_split"  // RPCSplitNote: where a leg's layers and buffers went
)

// RPCServerNote is one server's start or stop as journaled.
type RPCServerNote struct {
	Event    string   `json:"event"` // started, stopped, refused
	Host     string   `json:"host"`
	Endpoint string   `json:"endpoint"`
	Argv     []string `json:"argv,omitempty"` // on the host
	Via      []string `json:"via,omitempty"`  // the local ssh command line
	PID      int      `json:"pid,omitempty"`  // on the host
	Signal   string   `json:"signal,omitempty"`
	Exited   bool     `json:"exited,omitempty"` // it had ended before the stop
	Left     []string `json:"left,omitempty"`   // ggml-rpc-servers still serving its port after the stop
	Error    string   `json:"error,omitempty"`
	Log      string   `json:"log,omitempty"` // its output (capped), with the stop
}

// RPCDeviceUse is what llama.cpp's log (llama-bench -v) says about one RPC device of a leg.
type RPCDeviceUse struct {
	Device     string  `json:"device"`   // RPC0
	Endpoint   string  `json:"endpoint"` // as llama.cpp names it
	Host       string  `json:"host,omitempty"`
	Layers     int     `json:"layers"` // layers assigned to it (the output layer counts, as llama.cpp counts it)
	ModelMiB   float64 `json:"model_mib"`
	KVMiB      float64 `json:"kv_mib"`
	ComputeMiB float64 `json:"compute_mib"`
}

// RPCSplitNote is a leg's per-host layer split.
type RPCSplitNote struct {
	Leg     int64          `json:"leg"`
	Label   string         `json:"label"`
	Devices []RPCDeviceUse `json:"devices"`
	Local   int            `json:"local_layers"` // layers llama.cpp kept on local devices
}

var (
	rpcUsingRE  = regexp.MustCompile(`using device (RPC\d+) \(([^)\s]+)\)`)
	rpcLayerRE  = regexp.MustCompile(`layer\s+(\d+) assigned to device (\S+?),`)
	rpcBufferRE = regexp.MustCompile(`RPC\d+\[([^\]]+)\]\s+(model|KV|compute) buffer size =\s+([0-9.]+) MiB`)
)

// ParseRPCLog reads a leg's log (llama-bench -v through a pty): each RPC device llama.cpp used
// with its endpoint, the layers assigned to it and its model, KV and compute buffers (the first
// model load's: later loads of the same leg repeat them), in device order, and the layers kept
// on local devices.
func ParseRPCLog(log string) ([]RPCDeviceUse, int) {
	log = strings.ReplaceAll(log, "\r", "")
	byDev := map[string]*RPCDeviceUse{}
	byEP := map[string]*RPCDeviceUse{}
	var order []string
	for _, m := range rpcUsingRE.FindAllStringSubmatch(log, -1) {
		if byDev[m[1]] == nil {
			u := &RPCDeviceUse{Device: m[1], Endpoint: m[2]}
			byDev[m[1]], byEP[m[2]] = u, u
			order = append(order, m[1])
		}
	}
	layerDev := map[int]string{}
	for _, m := range rpcLayerRE.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		if _, seen := layerDev[n]; !seen {
			layerDev[n] = m[2]
		}
	}
	local := 0
	for _, d := range layerDev {
		if u := byDev[d]; u != nil {
			u.Layers++
		} else {
			local++
		}
	}
	seen := map[string]bool{}
	for _, m := range rpcBufferRE.FindAllStringSubmatch(log, -1) {
		u, key := byEP[m[1]], m[1]+" "+m[2]
		if u == nil || seen[key] {
			continue
		}
		seen[key] = true
		v, _ := strconv.ParseFloat(m[3], 64)
		switch m[2] {
		case "model":
			u.ModelMiB = v
		case "KV":
			u.KVMiB = v
		case "compute":
			u.ComputeMiB = v
		}
	}
	out := make([]RPCDeviceUse, 0, len(order))
	for _, d := range order {
		out = append(out, *byDev[d])
	}
	return out, local
}

// RPCEvidence is the RPC evidence gate of a leg on the plan's server devices: every row that
// counts must name the RPC backend, and the log must show each RPC device the leg asked for,
// at the plan's endpoint. It returns "" when the leg passes, else the code and why.
func RPCEvidence(p *Plan, legDevice string, backends []string, uses []RPCDeviceUse) (code, why string) {
	var want []string
	for _, d := range RPCLegDevices(legDevice) {
		if rpcServerDevice(p, d) {
			want = append(want, d)
		}
	}
	if len(want) == 0 {
		return "", ""
	}
	for i, b := range backends {
		if !slices.Contains(strings.Split(b, ","), "RPC") {
			return CodeRPCNoBackend, fmt.Sprintf("asked for %s, and row %d's backends are %q (no RPC)", legDevice, i+1, b)
		}
	}
	for _, d := range want {
		ep, _, _ := p.RPCDeviceEndpoint(d)
		ok := false
		for _, u := range uses {
			ok = ok || u.Device == d && u.Endpoint == ep
		}
		if !ok {
			return CodeRPCNotInLog, fmt.Sprintf("asked for %s, and llama.cpp's log does not show %s at %s (llama-bench -v: \"using device %s (%s)\")", legDevice, d, ep, d, ep)
		}
	}
	return "", ""
}
