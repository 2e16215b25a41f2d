package workbench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/capacity/caprun"
	"sparkbench/app/study"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/remote"
)

// capacityOnHost points engine e at bench host req.On (CapacityHost); closeHost ends the
// connection after the run.
func capacityOnHost(ctx context.Context, e *caprun.Engine, st capacity.StoredStudy, plan *capacity.Plan, req CapacityRunRequest) (closeHost func(), err error) {
	dirs := []string{st.PlanDir}
	if st.PlanFile != "" {
		dirs = append(dirs, filepath.Dir(st.PlanFile))
	}
	rh, closeHost, err := CapacityHost(ctx, req.Hosts, req.On, plan, dirs, req.Warn)
	if err != nil {
		return nil, err
	}
	e.Host, e.Server, e.Build = rh, rh.Binary, rh.Build
	return closeHost, nil
}

// CapacityHost readies bench host on of hf for a capacity run whose llama-servers run there
// (docs/fleet.md): it opens the host's connection, refuses a host without an executable
// llama-server in its llama_dir, checks the plan's server_flags against that llama-server's
// --help, read on the host, and finds every candidate's model in the host's model_dirs, hashed
// there against the plan (planDirs: the folders the plan's relative paths may be resolved
// against). The host's machine is fingerprinted for run.json (a host that cannot be, e.g.
// without llama-bench, is warned about, not refused). Every refusal is a *RequestError naming
// the host, before anything runs; closeHost ends the connection after the run.
func CapacityHost(ctx context.Context, hf *remote.HostsFile, on string, plan *capacity.Plan, planDirs []string, warn func(string)) (*caprun.RemoteHost, func(), error) {
	if hf == nil {
		return nil, nil, badInput(fmt.Errorf("--on %s: no hosts list", on))
	}
	h, err := hf.Find(on)
	if err != nil {
		return nil, nil, badInput(err)
	}
	if plan.Telemetry != nil {
		// the samplers read this machine's devices: they would record the desktop's power and
		// temperatures as the host's servers' (and judge its energy gates on them)
		return nil, nil, badInput(fmt.Errorf("--on %s: the plan has a telemetry block, and telemetry samples this machine's devices, not host %s's: "+
			"run it here (without --on), or run it on the host headless (sparkbench capacity run there) and import its bundle", on, on))
	}
	c, err := remote.Open(ctx, h, remote.Options{Config: hf.SSHConfig})
	if err != nil {
		return nil, nil, badInput(err)
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	sh := &remote.ServerHost{Conn: c}
	if err := sh.CheckServer(ctx); err != nil {
		return nil, nil, badInput(err)
	}
	if help, herr := c.Output(ctx, 30*time.Second, remote.Script(remote.ExecCommandOrEmpty(
		append(append([]string{"env"}, llamacpp.QuietEnv...), sh.Binary(), "--help"))+" 2>&1")); herr != nil {
		if warn != nil {
			warn(fmt.Sprintf("warning: server_flags not checked against host %s's llama-server: %v", h.Name, herr))
		}
	} else if probs := capacity.CheckServerFlags(plan, llamacpp.ParseHelpFlags(string(help)), sh.Binary()); len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, pr := range probs {
			msgs[i] = pr.String()
		}
		return nil, nil, badInput(fmt.Errorf("plan refused on host %s: %s", h.Name, strings.Join(msgs, "; ")))
	}
	sess := &remote.Session{Conn: c, Models: map[string]string{}}
	models := map[string]string{}
	for _, cand := range plan.Candidates {
		hp, err := sess.ResolveModel(ctx, cand.Model.Path, cand.Model.SHA256)
		if err != nil {
			return nil, nil, badInput(err)
		}
		for _, d := range planDirs {
			p := study.ResolvePath(d, cand.Model.Path)
			models[p] = hp
			if abs, aerr := filepath.Abs(p); aerr == nil {
				models[abs] = hp
			}
		}
	}
	rh := &caprun.RemoteHost{Remote: sh, Binary: sh.Binary(), Models: models}
	// the host's CPU, memory and kernel are the run's machine (read as `host check` does)
	if info, ferr := remote.Fingerprint(ctx, c); ferr != nil {
		if warn != nil {
			warn(fmt.Sprintf("warning: host %s not fingerprinted (%v): run.json records no machine", h.Name, ferr))
		}
	} else {
		m := info.Fingerprint.Machine
		m.Hostname = "" // run.json travels in receipt bundles
		rh.Machine = &m
		if rh.Build, err = hostBuild(ctx, sess, h, info, sh.Binary()); err != nil && warn != nil {
			warn(fmt.Sprintf("warning: host %s's llama-server not hashed (%v): run.json records no build", h.Name, err))
		}
	}
	ok = true
	return rh, c.Close, nil
}

// hostBuild is the host's llama.cpp build as run.json records a local one (llamacpp.Inspect):
// the version, devices, backends and libraries the host's fingerprint read, and the SHA-256
// of its llama-bench and of the llama-server the run starts, hashed on the host.
func hostBuild(ctx context.Context, sess *remote.Session, h remote.Host, info *remote.HostInfo, server string) (*llamacpp.Build, error) {
	fp := info.Fingerprint
	sha, size, err := sess.HashFile(ctx, server)
	if err != nil {
		return nil, err
	}
	b := &llamacpp.Build{Location: llamacpp.Location{Dir: h.LlamaDir, Source: llamacpp.Source("host " + h.Name), Bench: info.Bench, Server: server},
		VersionLine: fp.VersionLine, Version: fp.Version, BuildNumber: fp.BuildNumber, Commit: fp.Commit,
		Devices: fp.Devices, Backends: fp.Backends, Libraries: fp.Libraries,
		Binaries: []llamacpp.Binary{fp.Binary, {Name: filepath.Base(server), Path: server, Size: size, SHA256: sha}}}
	return b, nil
}
