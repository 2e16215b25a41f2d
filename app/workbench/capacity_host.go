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

// capacityOnHost points engine e at bench host req.On (docs/fleet.md): it opens the host's
// connection, refuses a host without an executable llama-server in its llama_dir, checks the
// plan's server_flags against that llama-server's --help, and finds every candidate's model in
// the host's model_dirs, hashed there against the plan. Every refusal is a *RequestError
// naming the host, before anything runs; closeHost ends the connection after the run.
func capacityOnHost(ctx context.Context, e *caprun.Engine, st capacity.StoredStudy, plan *capacity.Plan, req CapacityRunRequest) (closeHost func(), err error) {
	if req.Hosts == nil {
		return nil, badInput(fmt.Errorf("--on %s: no hosts list", req.On))
	}
	h, err := req.Hosts.Find(req.On)
	if err != nil {
		return nil, badInput(err)
	}
	c, err := remote.Open(ctx, h, remote.Options{Config: req.Hosts.SSHConfig})
	if err != nil {
		return nil, badInput(err)
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	sh := &remote.ServerHost{Conn: c}
	if err := sh.CheckServer(ctx); err != nil {
		return nil, badInput(err)
	}
	if help, herr := c.Output(ctx, 30*time.Second, remote.Script(remote.ExecCommandOrEmpty(
		append(append([]string{"env"}, llamacpp.QuietEnv...), sh.Binary(), "--help"))+" 2>&1")); herr != nil {
		if req.Warn != nil {
			req.Warn(fmt.Sprintf("warning: server_flags not checked against host %s's llama-server: %v", h.Name, herr))
		}
	} else if probs := capacity.CheckServerFlags(plan, llamacpp.ParseHelpFlags(string(help)), sh.Binary()); len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, pr := range probs {
			msgs[i] = pr.String()
		}
		return nil, badInput(fmt.Errorf("study %d's plan refused on host %s: %s", req.ID, h.Name, strings.Join(msgs, "; ")))
	}
	sess := &remote.Session{Conn: c, Models: map[string]string{}}
	models := map[string]string{}
	dirs := []string{st.PlanDir}
	if st.PlanFile != "" {
		dirs = append(dirs, filepath.Dir(st.PlanFile))
	}
	for _, cand := range plan.Candidates {
		hp, err := sess.ResolveModel(ctx, cand.Model.Path, cand.Model.SHA256)
		if err != nil {
			return nil, badInput(err)
		}
		for _, d := range dirs {
			if abs, aerr := filepath.Abs(study.ResolvePath(d, cand.Model.Path)); aerr == nil {
				models[abs] = hp
			}
			models[study.ResolvePath(d, cand.Model.Path)] = hp
		}
	}
	e.Host = &caprun.RemoteHost{Remote: sh, Models: models}
	e.Server, e.Build = sh.Binary(), nil
	ok = true
	return c.Close, nil
}
