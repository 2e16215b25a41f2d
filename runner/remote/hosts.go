// Package remote runs llama.cpp on bench hosts through the system OpenSSH client: one
// multiplexed connection per host (ControlMaster, owned by sparkbench and closed with it),
// llama-bench legs in a remote pty (ssh -tt) through the same pty driver, parsers, classes and
// transcripts as local legs, a host fingerprint with the same shape as the local one, model
// hashes computed on the host, and ggml-rpc-server lifetimes. docs/fleet.md has the formats.
//
// Why the system ssh and not golang.org/x/crypto/ssh: the user's ~/.ssh/config (aliases,
// ProxyJump, Match blocks, IdentityFile, certificates), their agent, known_hosts with hashed
// names and @cert-authority lines, and StrictHostKeyChecking as they set it are honoured by
// OpenSSH itself; x/crypto/ssh reads none of them and every one would have to be re-implemented
// (and kept in step) to honour the same config. sparkbench passes BatchMode=yes (never a
// prompt), its own ControlPath, and never an option that weakens host key checking.
package remote

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sparkbench/runner/fsread"
	"sparkbench/runner/jsonlex"
)

// HostsSchema is the hosts file's schema line.
const HostsSchema = "sparkbench.hosts/v1"

// Local is the reserved host name for this machine in fleet lists.
const Local = "local"

// Host is one bench box as the user reaches it.
type Host struct {
	Name string `json:"name"` // sparkbench's name for it: [a-z0-9][a-z0-9._-]*
	// SSH is the destination as the user would type it after `ssh`: an alias from their
	// ~/.ssh/config, host, user@host.
	SSH string `json:"ssh"`
	// LlamaDir is the folder of llama.cpp binaries on the host: absolute, or ~/… (the remote
	// user's home).
	LlamaDir string `json:"llama_dir"`
	// ModelDirs are folders on the host where plan models are looked up by file name.
	ModelDirs []string `json:"model_dirs,omitempty"`
	// RPCAddress is the address llama-bench --rpc uses for this host's ggml-rpc-server (default:
	// the HostName ssh resolves the destination to).
	RPCAddress string            `json:"rpc_address,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// HostsFile is a hosts list (docs/fleet.md).
type HostsFile struct {
	Schema string `json:"schema"`
	// SSHConfig is an ssh_config file passed as ssh -F (empty: the user's own ~/.ssh/config).
	SSHConfig string `json:"ssh_config,omitempty"`
	Hosts     []Host `json:"hosts"`
}

var hostNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// badPathChars are refused in host paths: they cannot pass through a remote command line
// intact (NUL, newlines) or llama-bench splits on them (',').
const badPathChars = "\x00\n\r"

// Validate returns every problem of the host, each naming its field.
func (h Host) Validate() []string {
	var out []string
	at := "host " + h.Name
	switch {
	case h.Name == "":
		out = append(out, "host: name is empty")
	case h.Name == Local:
		out = append(out, "host local: the name is reserved for this machine; choose another")
	case !hostNameRE.MatchString(h.Name):
		out = append(out, fmt.Sprintf("host %q: name must match %s", h.Name, hostNameRE))
	}
	switch {
	case h.SSH == "":
		out = append(out, at+": ssh: empty; give the destination as you would type it after ssh")
	case strings.HasPrefix(h.SSH, "-") || strings.ContainsAny(h.SSH, " \t"+badPathChars):
		out = append(out, fmt.Sprintf("%s: ssh: %q is not a destination (no leading '-', no blanks)", at, h.SSH))
	}
	out = append(out, checkHostPath(at+": llama_dir", h.LlamaDir)...)
	for i, d := range h.ModelDirs {
		out = append(out, checkHostPath(fmt.Sprintf("%s: model_dirs[%d]", at, i), d)...)
	}
	if strings.ContainsAny(h.RPCAddress, " \t,:"+badPathChars) {
		out = append(out, fmt.Sprintf("%s: rpc_address: %q: a host name or IPv4 address, without port", at, h.RPCAddress))
	}
	if v, ok := h.Labels[BandwidthLabel]; ok {
		if _, err := parseBandwidth(v); err != nil {
			out = append(out, fmt.Sprintf("%s: labels: %s=%q: %v", at, BandwidthLabel, v, err))
		}
	}
	return out
}

// BandwidthLabel is the label that gives a host's memory bandwidth in GB/s (e.g.
// bandwidth_gbs=256): a fleet member on that host computes its ceilings with it instead of the
// plan's figure, which is the desktop's.
const BandwidthLabel = "bandwidth_gbs"

// BandwidthGBs is the host's bandwidth label's value; false when it has none (Validate refuses
// one that is not a positive number).
func (h Host) BandwidthGBs() (float64, bool) {
	v, ok := h.Labels[BandwidthLabel]
	if !ok {
		return 0, false
	}
	g, err := parseBandwidth(v)
	return g, err == nil
}

func parseBandwidth(v string) (float64, error) {
	g, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(g) || math.IsInf(g, 0) || g <= 0 || g > 1e6 {
		return 0, errors.New("the host's memory bandwidth in GB/s: a positive number, e.g. 256")
	}
	return g, nil
}

func checkHostPath(at, p string) []string {
	switch {
	case p == "":
		return []string{at + ": empty"}
	case strings.ContainsAny(p, badPathChars):
		return []string{at + ": contains a NUL or a line break"}
	case !strings.HasPrefix(p, "/") && p != "~" && !strings.HasPrefix(p, "~/"):
		return []string{fmt.Sprintf("%s: %q: give an absolute path or ~/… on the host", at, p)}
	}
	return nil
}

// ParseHosts reads and validates a hosts file; every problem is listed. name places a
// refusal of the JSON itself (name:line:col).
func ParseHosts(name string, b []byte) (*HostsFile, error) {
	var f HostsFile
	if err := jsonlex.DecodeFile(name, b, &f, "a hosts file", "docs/fleet.md"); err != nil {
		return nil, err
	}
	var probs []string
	if f.Schema != HostsSchema {
		probs = append(probs, fmt.Sprintf("schema: %q, want %q", f.Schema, HostsSchema))
	}
	if len(f.Hosts) == 0 {
		probs = append(probs, "hosts: empty")
	}
	seen := map[string]bool{}
	for _, h := range f.Hosts {
		probs = append(probs, h.Validate()...)
		if seen[h.Name] {
			probs = append(probs, fmt.Sprintf("host %s: listed twice", h.Name))
		}
		seen[h.Name] = true
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%s: hosts file: %s", name, strings.Join(probs, "; "))
	}
	return &f, nil
}

// MaxHostsBytes bounds a hosts file (a few KiB; this refuses a wrong file, not a hosts list).
const MaxHostsBytes = 4 << 20

// EnvHosts names the hosts file when a command is given none.
const EnvHosts = "SPARKBENCH_HOSTS"

// HostsPath is the hosts file to read: given ("" for none), else $SPARKBENCH_HOSTS, else
// hosts.json in the user's sparkbench configuration folder.
func HostsPath(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	if p := os.Getenv(EnvHosts); p != "" {
		return p, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "sparkbench", "hosts.json"), nil
}

// LoadHosts reads a hosts file from disk: a regular file (a named pipe or a device is
// refused, never waited on) of at most MaxHostsBytes; a relative ssh_config is relative to the
// file.
func LoadHosts(file string) (*HostsFile, error) {
	b, err := fsread.ReadFile(file, MaxHostsBytes, "a hosts file")
	if err != nil {
		return nil, err
	}
	f, err := ParseHosts(file, b)
	if err != nil {
		return nil, err
	}
	if f.SSHConfig != "" && !path.IsAbs(f.SSHConfig) {
		f.SSHConfig = path.Join(path.Dir(file), f.SSHConfig)
	}
	return f, nil
}

// ErrUnknownHost is returned for a host name the hosts list does not have.
var ErrUnknownHost = errors.New("unknown host")

// Find returns the named host, or ErrUnknownHost with the names it has.
func (f *HostsFile) Find(name string) (Host, error) {
	var names []string
	for _, h := range f.Hosts {
		if h.Name == name {
			return h, nil
		}
		names = append(names, h.Name)
	}
	sort.Strings(names)
	return Host{}, fmt.Errorf("%w %q: the hosts list has %s", ErrUnknownHost, name, strings.Join(names, ", "))
}
