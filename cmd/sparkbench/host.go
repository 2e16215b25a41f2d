package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"sparkbench/app/hostlist"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

// envHosts names the hosts file when --hosts is not given.
const envHosts = remote.EnvHosts

const hostUsage = "host list [--hosts F] [--notebook P] [--json] | host check NAME [--hosts F] [--notebook P] [--json] | " + hostNotebookUsage + " | " + hostCopyUsage

// hostsFlagHelp is the --hosts flag's help.
const hostsFlagHelp = "hosts file (default: $" + envHosts + ", then the notebook's hosts, then hosts.json in the user's sparkbench config folder)"

// loadHostsFlag reads the hosts list a command was given (--hosts), else the one found by
// default (hostlist.Resolve with the default notebook); the error says which file and why.
func loadHostsFlag(flagValue string) (*remote.HostsFile, error) {
	f, err := findHosts(flagValue, "")
	return f.Hosts, err
}

// findHosts is hostlist.Resolve with the notebook --notebook names (its default when empty),
// read only; a notebook that does not exist has no hosts.
func findHosts(hostsFlag, nbFlag string) (hostlist.Found, error) {
	p, err := notebookPath(nbFlag)
	if err != nil {
		return hostlist.Resolve(hostsFlag, nil, "")
	}
	return hostlist.Resolve(hostsFlag, func() ([]store.Host, error) {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		nb, err := store.OpenWith(p, store.Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer nb.Close()
		return nb.Hosts(context.Background())
	}, p)
}

func cmdHost(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fprintf(stderr, "usage: sparkbench %s\n", hostUsage)
		return 2
	}
	switch args[0] {
	case "list":
		return hostList(args[1:], stdout, stderr)
	case "check":
		return hostCheck("host check", args[1:], stdout, stderr)
	case "copy-model":
		return hostCopyModel(args[1:], os.Stdin, stdout, stderr)
	case "add":
		return hostAdd(args[1:], stdout, stderr)
	case "remove":
		return hostRemove(args[1:], stdout, stderr)
	case "import-file":
		return hostImportFile(args[1:], stdout, stderr)
	}
	fprintf(stderr, "sparkbench host: unknown sub-command %q (want list, check, add, remove, import-file or copy-model)\n", args[0])
	return 2
}

func hostList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("host list", stderr)
	hosts := fs.String("hosts", "", hostsFlagHelp)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, "print the list as JSON: where it was found and its hosts")
	if pos, err := parseInterspersed(fs, args); err != nil {
		return usageError(err)
	} else if !flagsOnly("host list", pos, stderr) {
		return 2
	}
	found, err := findHosts(*hosts, *nbFlag)
	if err != nil {
		fprintf(stderr, "sparkbench host list: %v\n", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"from": found.From, "path": found.Path, "hosts": found.Hosts.Hosts}); err != nil {
			fprintf(stderr, "sparkbench host list: %v\n", err)
			return 1
		}
		return 0
	}
	for _, h := range found.Hosts.Hosts {
		fprintf(stdout, "%s\n", hostLine(h))
	}
	fprintf(stderr, "(%d host(s) from %s %s)\n", len(found.Hosts.Hosts), found.From, found.Path)
	return 0
}

// hostLine is one host as `host list` prints it.
func hostLine(h remote.Host) string {
	var labels []string
	for k, v := range h.Labels {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	return strings.TrimRight(fmt.Sprintf("%-16s ssh %-24s llama %s  models %s  %s", h.Name, h.SSH, h.LlamaDir, strings.Join(h.ModelDirs, ","), strings.Join(labels, " ")), " ")
}

// hostCheck is `doctor --host NAME` and `host check NAME`: connect and fingerprint the host.
func hostCheck(verb string, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(verb, stderr)
	hosts := fs.String("hosts", "", hostsFlagHelp)
	nbFlag := fs.String("notebook", "", "the notebook whose hosts are read when no hosts file is named ("+nbFlagHelp+")")
	asJSON := fs.Bool("json", false, "print the fingerprint as JSON")
	timeout := fs.Duration("connect-timeout", remote.DefaultConnectTimeout, "how long to wait for the host's ssh connection")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench %s: give one host name\n", verb)
		return 2
	}
	found, err := findHosts(*hosts, *nbFlag)
	f := found.Hosts
	if err == nil {
		_, err = f.Find(pos[0])
	}
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return 2
	}
	return doctorHost(verb, f, pos[0], *timeout, *asJSON, stdout, stderr)
}

func doctorHost(verb string, f *remote.HostsFile, name string, timeout time.Duration, asJSON bool, stdout, stderr io.Writer) int {
	h, err := f.Find(name)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	s, err := remote.Connect(ctx, h, remote.Options{Config: f.SSHConfig, ConnectTimeout: timeout})
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return 1
	}
	defer s.Close()
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s.Info); err != nil {
			fprintf(stderr, "sparkbench %s: %v\n", verb, err)
			return 1
		}
		return 0
	}
	writeHostInfo(stdout, h, s.Info)
	return 0
}

func writeHostInfo(w io.Writer, h remote.Host, in *remote.HostInfo) {
	fp := in.Fingerprint
	fprintf(w, "host %s (ssh %s)\n", h.Name, h.SSH)
	fprintf(w, "  llama.cpp:  %s\n", fp.VersionLine)
	fprintf(w, "  llama-bench: %s  sha256 %s\n", in.Bench, fp.Binary.SHA256)
	for _, l := range fp.Libraries {
		fprintf(w, "  library:    %s  sha256 %s\n", l.Name, l.SHA256)
	}
	if len(fp.Devices) == 0 {
		fprintf(w, "  devices:    none reported (CPU only)\n")
	}
	for _, d := range fp.Devices {
		fprintf(w, "  device:     %s (%s)\n", d.Name, d.Description)
	}
	fprintf(w, "  backends:   %s\n", strings.Join(fp.Backends, ", "))
	fprintf(w, "  machine:    %s, %s %s, %s\n", fp.Machine.String(), fp.Machine.OS, fp.Machine.Arch, fp.Machine.Hostname)
	fprintf(w, "  clock:      host − desktop %s ± %s", in.Clock.Skew.Round(time.Millisecond), in.Clock.Uncertainty.Round(time.Millisecond))
	fprintf(w, "\n")
	if far := in.Clock.FarOffWords(h.Name); far != "" {
		fprintf(w, "  FAR OFF:    %s\n", far)
	}
	for _, e := range fp.Errors {
		fprintf(w, "  note:       %s\n", e)
	}
}
