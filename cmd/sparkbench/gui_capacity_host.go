package main

import (
	"context"
	"errors"
	"os"

	"sparkbench/app/capacity"
	"sparkbench/app/hostlist"
	"sparkbench/app/workbench"
	"sparkbench/runner/remote"
	"sparkbench/store"
	"sparkbench/ui"
)

// The window's Run on picker (ui/capacity_host.go): a capacity study's llama-servers on a bench
// host, found as every command finds hosts ($SPARKBENCH_HOSTS, the window's notebook, hosts.json).

var _ ui.CapacityHostRunner = capacityService{}

func (s capacityService) hosts() (hostlist.Found, error) {
	return hostlist.Resolve("", func() ([]store.Host, error) { return s.nb.Hosts(context.Background()) }, s.nb.Path())
}

// CapacityHosts lists the bench hosts; none (and no error) when there is no hosts list at all.
func (s capacityService) CapacityHosts(ctx context.Context) ([]string, error) {
	found, err := s.hosts()
	if err != nil {
		if p, perr := remote.HostsPath(""); perr == nil && os.Getenv(remote.EnvHosts) == "" {
			if _, serr := os.Stat(p); errors.Is(serr, os.ErrNotExist) {
				return nil, nil // no hosts file and none in the notebook: this machine only
			}
		}
		return nil, err
	}
	var names []string
	for _, h := range found.Hosts.Hosts {
		names = append(names, h.Name)
	}
	return names, nil
}

// RunCapacityOn is RunCapacity with every llama-server on host (`capacity run ID --on HOST`).
func (s capacityService) RunCapacityOn(ctx context.Context, id int64, host string, onEvent func(capacity.RunEvent), onLine func(string)) (*capacity.RunSummary, error) {
	found, err := s.hosts()
	if err != nil {
		return nil, err
	}
	sum, _, err := workbench.RunCapacity(ctx, s.nb, workbench.CapacityRunRequest{ID: id, LlamaDir: s.dir(), DataDir: s.dataDir, OnEvent: onEvent,
		On: host, Hosts: found.Hosts, Warn: onLine})
	var ns *workbench.NotStartedError
	if errors.As(err, &ns) {
		return nil, ns.Err
	}
	return sum, err
}
