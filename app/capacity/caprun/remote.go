package caprun

import (
	"fmt"

	"sparkbench/app/capacity"
	"sparkbench/runner/server"
	"sparkbench/runner/vocab"
)

// DefaultRTTProbes is how many round trips measure a remote server's network floor.
const DefaultRTTProbes = 20

// RemoteHost runs a study's llama-servers on a bench host (RunSpec.Host): through
// runner/remote.ServerHost, with the load generator here against a forwarded port.
type RemoteHost struct {
	Remote server.Remote
	// Binary is llama-server's path on the host (RunSpec.Server is set to it).
	Binary string
	// Models maps a model path of the schedule (as resolved here) to its path on the host
	// (hashed there against the plan before the run).
	Models map[string]string
	// Probes is how many round trips measure the network floor (0: DefaultRTTProbes).
	Probes int
	// Machine is the host's machine fingerprint (its host name left out), recorded in run.json
	// as the run's machine; nil: it could not be read, and run.json has none.
	Machine *vocab.Machine
	// Build is the host's llama.cpp build (its llama-bench and llama-server hashed there),
	// recorded in run.json as the run's build; nil: it could not be read.
	Build *vocab.Build
}

// serverSpec is the server.Spec of a lifetime or guard with args: on the host when the run has
// one (its model paths mapped to the host's), else here under the plan's launch wrapper.
func (r *Run) serverSpec(args []string, log logLines) server.Spec {
	spec := r.spec
	s := server.Spec{Binary: spec.Server, Args: args, Env: spec.Env, Log: log, StartTimeout: spec.StartTimeout, Grace: spec.Grace,
		Wrapper: spec.Plan.Build.LaunchWrapper}
	if h := spec.Host; h != nil {
		s.Wrapper, s.Remote = nil, h.Remote
		s.Args = append([]string(nil), args...)
		for i := 0; i+1 < len(s.Args); i++ {
			if s.Args[i] == "-m" || s.Args[i] == "--model" {
				if hp, ok := h.Models[s.Args[i+1]]; ok {
					s.Args[i+1] = hp
				}
			}
		}
	}
	return s
}

// network is the network record of a healthy server on a host, with its round-trip floor
// measured now (nil for a local server).
func (r *Run) network(srv *server.Server) *capacity.RunNetwork {
	n := srv.Network()
	if n == nil {
		return nil
	}
	probes := r.spec.Host.Probes
	if probes <= 0 {
		probes = DefaultRTTProbes
	}
	rn := &capacity.RunNetwork{Host: n.Host, SSH: n.SSH, Path: n.Path(), LocalPort: n.LocalPort, RemotePort: n.RemotePort,
		RTTProbes: probes, Left: []string{}}
	rtt, err := srv.RoundTrips(r.ctx, probes)
	if err != nil {
		rn.RTTError = clipText(err.Error())
	} else {
		rn.RTTMinMs, rn.RTTMedianMs = rtt.MinMs, rtt.MedianMs
	}
	return rn
}

// remoteStopped records how a server on a host was stopped; a llama-server left on the host
// (or no way to tell) is the lifetime's error.
func remoteStopped(rs *capacity.RunServer, st server.Stopped) error {
	if st.Remote == nil || rs.Network == nil {
		return nil
	}
	rs.Network.StopSignal, rs.Network.Left, rs.Network.StopError = st.Remote.Signal, st.Remote.Left, st.Remote.Error
	if st.Remote.Error != "" {
		return fmt.Errorf("llama-server on host %s (PID %d): %s", st.Remote.Host, st.Remote.PID, st.Remote.Error)
	}
	return nil
}
