package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"sparkbench/app/hostlist"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

// hostNotebookUsage is the notebook verbs' line in `host`'s usage.
const hostNotebookUsage = "host add NAME --ssh DEST --llama-dir D [--model-dir D]... [--rpc-address A] [--label k=v]... [--notebook P] | " +
	"host remove NAME [--notebook P] | host import-file F [--replace] [--notebook P]"

// hostAdd: sparkbench host add NAME --ssh DEST --llama-dir D …: records the host (or its
// change) in the notebook's hosts list.
func hostAdd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("host add", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	var h remote.Host
	fs.StringVar(&h.SSH, "ssh", "", "the destination as you would type it after ssh: an alias of your ~/.ssh/config, host or user@host")
	fs.StringVar(&h.LlamaDir, "llama-dir", "", "the folder of llama.cpp binaries on the host: absolute, or ~/… (the remote user's home)")
	var dirs, labels multiFlag
	fs.Var(&dirs, "model-dir", "a folder on the host where plan models are looked up by file name (repeatable)")
	fs.StringVar(&h.RPCAddress, "rpc-address", "", "the address llama-bench --rpc uses for this host's ggml-rpc-server (default: the HostName ssh resolves)")
	fs.Var(&labels, "label", "a label key=value (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench host add: give one host name, then --ssh DEST --llama-dir D (got %d names)\n", len(pos))
		return 2
	}
	h.Name, h.ModelDirs = pos[0], dirs
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.TrimSpace(k) == "" {
			fprintf(stderr, "sparkbench host add: --label %q: write it as key=value\n", l)
			return 2
		}
		if h.Labels == nil {
			h.Labels = map[string]string{}
		}
		h.Labels[k] = v
	}
	if err := hostlist.Validate(h); err != nil {
		fprintf(stderr, "sparkbench host add: %v\n", err)
		return 2
	}
	nb, code := openNotebookFlag("host add", *nbFlag, false, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	action, err := nb.PutHost(context.Background(), hostlist.ToStore(h))
	if err != nil {
		fprintf(stderr, "sparkbench host add: %v\n", err)
		return 1
	}
	fprintf(stdout, "host %s %s in %s\n", h.Name, action, nb.Path())
	return 0
}

// hostRemove: sparkbench host remove NAME: records the host's removal from the notebook's
// hosts list (its earlier rows stay).
func hostRemove(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("host remove", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench host remove: give one host name (got %d)\n", len(pos))
		return 2
	}
	nb, code := openNotebookFlag("host remove", *nbFlag, false, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	if err := nb.RemoveHost(context.Background(), pos[0]); errors.Is(err, store.ErrNoHost) {
		fprintf(stderr, "sparkbench host remove: %s\n", unknownNotebookHost(context.Background(), nb, pos[0]))
		return 2
	} else if err != nil {
		fprintf(stderr, "sparkbench host remove: %v\n", err)
		return 1
	}
	fprintf(stdout, "host %s removed from %s\n", pos[0], nb.Path())
	return 0
}

// unknownNotebookHost says that the notebook's hosts list has no such host, and what it has.
func unknownNotebookHost(ctx context.Context, nb *store.Notebook, name string) string {
	hs, _ := nb.Hosts(ctx)
	var names []string
	for _, h := range hs {
		names = append(names, h.Name)
	}
	if len(names) == 0 {
		return fmt.Sprintf("unknown host %q: the notebook's hosts list is empty (sparkbench host list shows it)", name)
	}
	return fmt.Sprintf("unknown host %q: the notebook's hosts list has %s", name, strings.Join(names, ", "))
}

// hostImportFile: sparkbench host import-file F: every host of a hosts file into the
// notebook's list. A host the notebook already has with other fields is refused (nothing is
// recorded) unless --replace.
func hostImportFile(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("host import-file", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	replace := fs.Bool("replace", false, "record the file's host where the notebook has one of the same name with other fields")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench host import-file: give one hosts file (got %d)\n", len(pos))
		return 2
	}
	f, err := remote.LoadHosts(pos[0])
	if err != nil {
		fprintf(stderr, "sparkbench host import-file: %v\n", err)
		return 2
	}
	if f.SSHConfig != "" {
		fprintf(stderr, "sparkbench host import-file: note: the file's ssh_config %s is not kept; the notebook's hosts use your own ~/.ssh/config\n", f.SSHConfig)
	}
	nb, code := openNotebookFlag("host import-file", *nbFlag, false, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx := context.Background()
	have, err := nb.Hosts(ctx)
	if err != nil {
		fprintf(stderr, "sparkbench host import-file: %v\n", err)
		return 1
	}
	cur := map[string]remote.Host{}
	for _, h := range have {
		cur[h.Name] = hostlist.FromStore(h)
	}
	var differ []string
	for _, h := range f.Hosts {
		if c, ok := cur[h.Name]; ok && !hostlist.Same(c, h) {
			differ = append(differ, h.Name)
		}
	}
	if len(differ) > 0 && !*replace {
		fprintf(stderr, "sparkbench host import-file: the notebook already has %s with other fields; nothing imported: pass --replace to record the file's, or remove them first\n", strings.Join(differ, ", "))
		return 2
	}
	for _, h := range f.Hosts {
		action, err := nb.PutHost(ctx, hostlist.ToStore(h))
		if err != nil {
			fprintf(stderr, "sparkbench host import-file: %v\n", err)
			return 1
		}
		fprintf(stdout, "host %s %s\n", h.Name, action)
	}
	return 0
}
