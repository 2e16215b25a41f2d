package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"sparkbench/runner/remote"
)

// envHosts names the hosts file when --hosts is not given.
const envHosts = remote.EnvHosts

const hostUsage = "host list [--hosts F] | host check NAME [--hosts F] [--json] | " + hostCopyUsage

// loadHostsFlag reads the hosts file a command was given; the error says which file and why.
func loadHostsFlag(flagValue string) (*remote.HostsFile, error) {
	p, err := remote.HostsPath(flagValue)
	if err != nil {
		return nil, err
	}
	f, err := remote.LoadHosts(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("no hosts file at " + p + ": write one (docs/fleet.md, docs/examples/hosts.json) and pass --hosts or set $" + envHosts)
	}
	return f, err
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
	}
	fprintf(stderr, "sparkbench host: unknown sub-command %q (want list, check or copy-model)\n", args[0])
	return 2
}

func hostList(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("host list", stderr)
	hosts := fs.String("hosts", "", "hosts file (default: $"+envHosts+", then hosts.json in the user's sparkbench config folder)")
	if _, err := parseInterspersed(fs, args); err != nil {
		return usageError(err)
	}
	f, err := loadHostsFlag(*hosts)
	if err != nil {
		fprintf(stderr, "sparkbench host list: %v\n", err)
		return 2
	}
	for _, h := range f.Hosts {
		var labels []string
		for k, v := range h.Labels {
			labels = append(labels, k+"="+v)
		}
		sort.Strings(labels)
		fprintf(stdout, "%-16s ssh %-24s llama %s  models %s  %s\n", h.Name, h.SSH, h.LlamaDir, strings.Join(h.ModelDirs, ","), strings.Join(labels, " "))
	}
	return 0
}

// hostCheck is `doctor --host NAME` and `host check NAME`: connect and fingerprint the host.
func hostCheck(verb string, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(verb, stderr)
	hosts := fs.String("hosts", "", "hosts file (default: $"+envHosts+", then hosts.json in the user's sparkbench config folder)")
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
	f, err := loadHostsFlag(*hosts)
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
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
