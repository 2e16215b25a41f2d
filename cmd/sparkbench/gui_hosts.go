package main

import (
	"context"
	"errors"
	"strings"

	"sparkbench/app/hostlist"
	"sparkbench/runner/remote"
	"sparkbench/store"
	"sparkbench/ui"
)

// hostsService is ui.HostsService over the notebook's hosts list: the hosts file's validation
// (hostlist.Validate) and `sparkbench host check`'s connection and words.
type hostsService struct {
	nb *store.Notebook
	// connect opens the host's connection (nil: remote.Connect with the default timeout).
	connect func(ctx context.Context, h remote.Host) (*remote.Session, error)
}

var _ ui.HostsService = hostsService{}

func toEntry(h remote.Host) ui.HostEntry {
	return ui.HostEntry{Name: h.Name, SSH: h.SSH, LlamaDir: h.LlamaDir, ModelDirs: h.ModelDirs, RPCAddress: h.RPCAddress, Labels: h.Labels}
}

func fromEntry(e ui.HostEntry) remote.Host {
	return remote.Host{Name: e.Name, SSH: e.SSH, LlamaDir: e.LlamaDir, ModelDirs: e.ModelDirs, RPCAddress: e.RPCAddress, Labels: e.Labels}
}

func (s hostsService) Hosts(ctx context.Context) ([]ui.HostEntry, error) {
	hs, err := s.nb.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ui.HostEntry, 0, len(hs))
	for _, h := range hs {
		out = append(out, toEntry(hostlist.FromStore(h)))
	}
	return out, nil
}

func (s hostsService) PutHost(ctx context.Context, e ui.HostEntry) (string, error) {
	h := fromEntry(e)
	if err := hostlist.Validate(h); err != nil {
		return "", err
	}
	return s.nb.PutHost(ctx, hostlist.ToStore(h))
}

func (s hostsService) RemoveHost(ctx context.Context, name string) error {
	return s.nb.RemoveHost(ctx, name)
}

// CheckHost connects to the notebook's host and fingerprints it, as `host check NAME` does,
// and returns the same words.
func (s hostsService) CheckHost(ctx context.Context, name string) (string, error) {
	hs, err := s.nb.Hosts(ctx)
	if err != nil {
		return "", err
	}
	f, err := hostlist.File(hs).Find(name)
	if err != nil {
		return "", err
	}
	connect := s.connect
	if connect == nil {
		connect = func(ctx context.Context, h remote.Host) (*remote.Session, error) {
			return remote.Connect(ctx, h, remote.Options{ConnectTimeout: remote.DefaultConnectTimeout})
		}
	}
	sess, err := connect(ctx, f)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	if sess.Info == nil {
		return "", errors.New("connected, but the host was not fingerprinted")
	}
	var b strings.Builder
	writeHostInfo(&b, f, sess.Info)
	return b.String(), nil
}
