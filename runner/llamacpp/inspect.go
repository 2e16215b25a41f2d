package llamacpp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sparkbench/runner/capout"
	"sparkbench/runner/fsread"
)

// QuietEnv is what every llama.cpp child gets besides its caller's environment: no colour
// escapes, a dumb terminal.
var QuietEnv = []string{"NO_COLOR=1", "TERM=dumb"}

// MetaTimeout bounds each metadata command (--version, --list-devices).
const MetaTimeout = 20 * time.Second

// MetaCap is the most output of one metadata command that is kept (its head and tail, see
// capout.Buffer): llama.cpp prints a few KiB; a flooding build must not grow sparkbench.
const MetaCap = 1 << 20

// Inspect runs the tools' --version and --list-devices (each bounded by MetaTimeout) and hashes
// the binaries. An error means the folder's tools do not run; its text carries their output.
func Inspect(ctx context.Context, loc Location) (*Build, error) {
	b := &Build{Location: loc}
	out, err := RunMeta(ctx, MetaTimeout, loc.Server, "--version")
	if err != nil {
		return nil, fmt.Errorf("run %s --version: %w", loc.Server, err)
	}
	if err := parseVersion(b, out); err != nil {
		return nil, fmt.Errorf("%s --version: %w", loc.Server, err)
	}
	devOut, err := RunMeta(ctx, MetaTimeout, loc.Bench, "--list-devices")
	if err != nil {
		return nil, fmt.Errorf("run %s --list-devices: %w", loc.Bench, err)
	}
	b.Devices = ParseDevices(devOut)
	b.Backends = ParseBackends(devOut) // --version loads no backend; --list-devices does
	for _, p := range []string{loc.Bench, loc.Server} {
		bin, err := HashBinary(p)
		if err != nil {
			return nil, err
		}
		b.Binaries = append(b.Binaries, bin)
	}
	seen := map[string]bool{}
	for _, p := range []string{loc.Bench, loc.Server} {
		libs, _, err := Libraries(p, b.Backends)
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			if !seen[l.Name] {
				seen[l.Name] = true
				b.Libraries = append(b.Libraries, l)
			}
		}
	}
	sort.Slice(b.Libraries, func(i, j int) bool { return b.Libraries[i].Name < b.Libraries[j].Name })
	return b, nil
}

// Debian's packaged build prints "version: 0.7.0 (build 11669, commit Debian)"; upstream
// builds print "version: 6500 (b1a2c3d4)" (build number, then the commit).
var versionRE = regexp.MustCompile(`(?m)^version: (\S+) \(build (\d+), commit ([^)]*)\)\s*$`)
var upstreamVersionRE = regexp.MustCompile(`(?m)^version: (\d+) \(([^)\s]*)\)\s*$`)
var builtWithRE = regexp.MustCompile(`(?m)^built with (.+?)\s*$`)

// ParseVersion reads the version line llama.cpp tools print for --version.
func ParseVersion(out string) (line, version string, build int, commit string, err error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		if u := upstreamVersionRE.FindStringSubmatch(out); u != nil {
			m = []string{u[0], "b" + u[1], u[1], u[2]}
		}
	}
	if m == nil {
		return "", "", 0, "", fmt.Errorf("no version line (want %q or %q) in output: %s",
			"version: X (build N, commit C)", "version: N (COMMIT)", firstLines(out, 3))
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return "", "", 0, "", fmt.Errorf("bad build number %q: %w", m[2], err)
	}
	return strings.TrimSpace(m[0]), m[1], n, m[3], nil
}

func parseVersion(b *Build, out string) error {
	line, v, n, c, err := ParseVersion(out)
	if err != nil {
		return err
	}
	b.VersionLine, b.Version, b.BuildNumber, b.Commit = line, v, n, c
	if m := builtWithRE.FindStringSubmatch(out); m != nil {
		b.BuiltWith = m[1]
	}
	return nil
}

var backendRE = regexp.MustCompile(`(?m)load_backend: loaded (\S+) backend from (\S+)`)

// ParseBackends lists the backends a tool reported loading, e.g. "CPU (libggml-cpu-zen4.so)".
func ParseBackends(out string) []string {
	var res []string
	seen := map[string]bool{}
	for _, m := range backendRE.FindAllStringSubmatch(out, -1) {
		s := fmt.Sprintf("%s (%s)", m[1], filepath.Base(m[2]))
		if !seen[s] {
			seen[s] = true
			res = append(res, s)
		}
	}
	return res
}

var deviceRE = regexp.MustCompile(`^\s+([^\s:]+): (.*?)(?: \((\d+) MiB, (\d+) MiB free\))?\s*$`)

// ParseDevices reads the "Available devices:" block of --list-devices.
func ParseDevices(out string) []Device {
	var devs []Device
	in := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(line, "Available devices") {
			in = true
			continue
		}
		if !in {
			continue
		}
		m := deviceRE.FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" {
				in = false
			}
			continue
		}
		d := Device{Name: m[1], Description: m[2]}
		d.TotalMiB, _ = strconv.ParseInt(m[3], 10, 64)
		d.FreeMiB, _ = strconv.ParseInt(m[4], 10, 64)
		devs = append(devs, d)
	}
	return devs
}

// HashBinary streams the file through SHA-256 (a regular file only: a named pipe or device
// in a binaries folder is refused, not opened for a read that would block or never end).
func HashBinary(path string) (Binary, error) {
	f, _, err := fsread.OpenRegular(path)
	if err != nil {
		return Binary{}, fmt.Errorf("hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Binary{}, fmt.Errorf("hash %s: %w", path, err)
	}
	return Binary{Name: filepath.Base(path), Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// RunMeta runs a short metadata command (argv, no shell) in its own process group with
// Pdeathsig, bounded by timeout: on expiry the whole group gets SIGKILL. It returns stdout and
// stderr merged, at most MetaCap bytes of them (head and tail, with a marker line saying how
// many bytes were left out). A non-zero exit is an error carrying the output's last lines.
func RunMeta(ctx context.Context, timeout time.Duration, argv0 string, args ...string) (string, error) {
	return RunMetaEnv(ctx, timeout, nil, argv0, args...)
}

// RunMetaEnv is RunMeta with KEY=VALUE extras in the child's environment (after the process's
// own, NO_COLOR=1 and TERM=dumb).
func RunMetaEnv(ctx context.Context, timeout time.Duration, env []string, argv0 string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(argv0, args...)
	buf := capout.New(MetaCap)
	cmd.Stdout = buf
	cmd.Stderr = buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(append(os.Environ(), QuietEnv...), env...)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return buf.String(), fmt.Errorf("%w: %s", err, lastLines(buf.String(), 3))
		}
		return buf.String(), nil
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return buf.String(), fmt.Errorf("no answer within %s (killed)", timeout)
		}
		return buf.String(), ctx.Err()
	}
}

// noise lines every ggml start-up prints; they say nothing about the failure.
func interesting(out string) []string {
	var keep []string
	for _, l := range strings.Split(strings.ReplaceAll(out, "\r", ""), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "ggml_backend_load_best:") || strings.HasPrefix(l, "load_backend:") {
			continue
		}
		keep = append(keep, l)
	}
	return keep
}

func lastLines(out string, n int) string {
	l := interesting(out)
	if len(l) > n {
		l = l[len(l)-n:]
	}
	if len(l) == 0 {
		return "(no output)"
	}
	return strings.Join(l, " | ")
}

func firstLines(out string, n int) string {
	l := interesting(out)
	if len(l) > n {
		l = l[:n]
	}
	if len(l) == 0 {
		return "(no output)"
	}
	return strings.Join(l, " | ")
}
