// Package hostlist is the bench hosts list as sparkbench finds it: a hosts file named by --hosts
// or $SPARKBENCH_HOSTS, else the hosts registered in the notebook (`sparkbench host add`, the
// window's Preferences), else hosts.json in the user's sparkbench configuration folder
// (docs/fleet.md "Where hosts are found"). It converts between the notebook's rows and the
// hosts file's hosts, and validates a host for the notebook with the hosts file's rules.
package hostlist

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sparkbench/runner/remote"
	"sparkbench/store"
)

// Where a hosts list was found.
const (
	FromFlag     = "--hosts"
	FromEnv      = "$" + remote.EnvHosts
	FromNotebook = "notebook"
	FromConfig   = "config"
)

// Found is a hosts list and where it came from.
type Found struct {
	Hosts *remote.HostsFile
	From  string // FromFlag, FromEnv, FromNotebook or FromConfig
	Path  string // the hosts file or the notebook
}

// Validate returns the host's problems (the hosts file's rules) as one error, nil when none.
func Validate(h remote.Host) error {
	if probs := h.Validate(); len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	return nil
}

// ToStore is the notebook's row for a hosts file's host.
func ToStore(h remote.Host) store.Host {
	return store.Host{Name: h.Name, SSH: h.SSH, LlamaDir: h.LlamaDir, ModelDirs: slices.Clone(h.ModelDirs),
		RPCAddress: h.RPCAddress, Labels: maps.Clone(h.Labels)}
}

// FromStore is a notebook row as a hosts file's host.
func FromStore(h store.Host) remote.Host {
	return remote.Host{Name: h.Name, SSH: h.SSH, LlamaDir: h.LlamaDir, ModelDirs: slices.Clone(h.ModelDirs),
		RPCAddress: h.RPCAddress, Labels: maps.Clone(h.Labels)}
}

// File is the notebook's hosts as a hosts list (the user's own ~/.ssh/config).
func File(hs []store.Host) *remote.HostsFile {
	f := &remote.HostsFile{Schema: remote.HostsSchema}
	for _, h := range hs {
		f.Hosts = append(f.Hosts, FromStore(h))
	}
	return f
}

// Resolve finds the hosts list: the file flag names (when not empty), else $SPARKBENCH_HOSTS,
// else the notebook's hosts (notebook returns them; nil or an empty list: none), else
// hosts.json in the user's configuration folder. nbPath only names the notebook in messages.
func Resolve(flag string, notebook func() ([]store.Host, error), nbPath string) (Found, error) {
	from := FromConfig
	switch {
	case flag != "":
		from = FromFlag
	case os.Getenv(remote.EnvHosts) != "":
		from = FromEnv
	case notebook != nil:
		hs, err := notebook()
		if err != nil {
			return Found{}, fmt.Errorf("hosts in the notebook %s: %w", nbPath, err)
		}
		if len(hs) > 0 {
			return Found{Hosts: File(hs), From: FromNotebook, Path: nbPath}, nil
		}
	}
	p, err := remote.HostsPath(flag)
	if err != nil {
		return Found{}, err
	}
	f, err := remote.LoadHosts(p)
	if errors.Is(err, os.ErrNotExist) && from != FromConfig {
		return Found{}, fmt.Errorf("no hosts file at %s: write one (docs/fleet.md, docs/examples/hosts.json) or give another", p)
	}
	if errors.Is(err, os.ErrNotExist) {
		return Found{}, fmt.Errorf("no hosts file at %s and no hosts in the notebook: add one with `sparkbench host add NAME --ssh DEST --llama-dir D`, "+
			"or write a hosts file (docs/fleet.md, docs/examples/hosts.json) and pass --hosts or set $%s", p, remote.EnvHosts)
	}
	if err != nil {
		return Found{}, err
	}
	return Found{Hosts: f, From: from, Path: p}, nil
}

// Same reports whether two hosts have the same fields.
func Same(a, b remote.Host) bool {
	return a.Name == b.Name && a.SSH == b.SSH && a.LlamaDir == b.LlamaDir && slices.Equal(a.ModelDirs, b.ModelDirs) &&
		a.RPCAddress == b.RPCAddress && maps.Equal(a.Labels, b.Labels)
}
