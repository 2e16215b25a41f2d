package remote

import (
	"context"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
)

// MaxSkew is the clock difference above which a host's clock counts as far off. Timestamps
// are always taken on the desktop; the skew is recorded either way.
const MaxSkew = 2 * time.Second

// Clock is the host's clock against the desktop's: Skew = host − desktop at the midpoint of
// the round trip, within ±Uncertainty (half the round trip).
type Clock struct {
	Skew        time.Duration `json:"skew_ns"`
	Uncertainty time.Duration `json:"uncertainty_ns"`
}

// FarOff reports whether the skew is beyond MaxSkew plus the measurement's uncertainty.
func (c Clock) FarOff() bool {
	return time.Duration(math.Abs(float64(c.Skew))) > MaxSkew+c.Uncertainty
}

// FarOffWords says, for a clock far off, by how much and what it means: "host X's clock is
// 93 s ahead of this machine (± 4 ms): …". "" when the clock is within MaxSkew.
func (c Clock) FarOffWords(host string) string {
	if !c.FarOff() {
		return ""
	}
	way, d := "ahead of", c.Skew
	if d < 0 {
		way, d = "behind", -d
	}
	return fmt.Sprintf("host %s's clock is %s %s this machine (± %s): timestamps are taken on the desktop and the skew is recorded with the study; set the host's clock right (NTP)",
		host, d.Round(time.Second), way, c.Uncertainty.Round(time.Millisecond))
}

// HostInfo is a host's fingerprint (the same shape as a local leg's), its clock and its
// llama-bench path.
type HostInfo struct {
	Host        string              `json:"host"`
	Bench       string              `json:"bench"`
	Fingerprint *runner.Fingerprint `json:"fingerprint"`
	Clock       Clock               `json:"clock"`
}

// NoLlamaError is a host without llama-bench in its llama_dir.
type NoLlamaError struct{ Host, Dir, Detail string }

func (e *NoLlamaError) Error() string {
	return fmt.Sprintf("host %s: no executable llama-bench in %s (llama_dir)%s; install llama.cpp there or fix the hosts file", e.Host, e.Dir, e.Detail)
}

// fingerprintScript prints the sections the fingerprint reads, each after a "@@ name" line.
func fingerprintScript(dir string) string {
	d := QuotePath(dir)
	quiet := strings.Join(llamacpp.QuietEnv, " ")
	return strings.Join([]string{
		"D=" + d + "; B=\"$D/llama-bench\"",
		`echo '@@ clock'; date +%s.%N`,
		`echo '@@ bench'; if [ -x "$B" ]; then echo ok; else echo missing; ls -ld "$D" 2>&1 | head -1; exit 0; fi`,
		`echo '@@ version'; env ` + quiet + ` timeout 20 "$B" --version 2>&1 | head -c 65536`,
		`echo '@@ devices'; env ` + quiet + ` timeout 20 "$B" --list-devices 2>&1 | head -c 65536`,
		// the libraries the tool loads, as the dynamic loader resolves them, and every library
		// beside them and beside the tool (the loaded backends are picked from those)
		`echo '@@ files'; L=$(ldd "$B" 2>/dev/null | sed -n 's/^[[:space:]]*\(lib[^ ]*\) => \(\/[^ ]*\) .*/\2/p'); ` +
			`for f in "$B" $L; do echo "$f"; done > "${TMPDIR:-/tmp}/sb-fp.$$"; ` +
			`for f in $L; do ls "${f%/*}"/lib*.so* 2>/dev/null; done >> "${TMPDIR:-/tmp}/sb-fp.$$"; ls "$D"/lib*.so* 2>/dev/null >> "${TMPDIR:-/tmp}/sb-fp.$$"; ` +
			`sort -u "${TMPDIR:-/tmp}/sb-fp.$$" | while read -r f; do [ -f "$f" ] || continue; ` +
			`printf '%s %s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$(wc -c < "$f" | tr -d ' ')" "$f"; done; rm -f "${TMPDIR:-/tmp}/sb-fp.$$"`,
		`echo '@@ needed'; echo "$L"`,
		`echo '@@ cpuinfo'; cat /proc/cpuinfo 2>/dev/null`,
		`echo '@@ meminfo'; cat /proc/meminfo 2>/dev/null`,
		`echo '@@ nproc'; nproc 2>/dev/null`,
		`echo '@@ uname'; uname -s; uname -r; uname -v; uname -m; uname -n`,
		`echo '@@ end'`,
	}, "\n")
}

func sections(out string) map[string]string {
	m := map[string]string{}
	name := ""
	var b strings.Builder
	for _, l := range strings.SplitAfter(out, "\n") {
		if n, ok := strings.CutPrefix(strings.TrimRight(l, "\r\n"), "@@ "); ok {
			if name != "" {
				m[name] = b.String()
			}
			name = n
			b.Reset()
			continue
		}
		b.WriteString(l)
	}
	if name != "" {
		m[name] = b.String()
	}
	return m
}

// Fingerprint reads the host over c in one ssh session: llama.cpp's version and devices, the
// SHA-256 of llama-bench and its libraries, CPU, memory, OS, and the clock.
func Fingerprint(ctx context.Context, c *Conn) (*HostInfo, error) {
	t0 := time.Now()
	out, err := c.Output(ctx, 90*time.Second, Script(fingerprintScript(c.Host.LlamaDir)))
	t1 := time.Now()
	if err != nil {
		return nil, err
	}
	s := sections(string(out))
	if _, ok := s["end"]; !ok && strings.TrimSpace(s["bench"]) == "ok" {
		return nil, fmt.Errorf("host %s: the fingerprint's output ended early", c.Host.Name)
	}
	bench := HostPath(c.Host.LlamaDir, "llama-bench")
	if b := strings.TrimSpace(s["bench"]); b != "ok" {
		detail := strings.TrimSpace(strings.TrimPrefix(b, "missing"))
		if detail != "" {
			detail = " (" + detail + ")"
		}
		return nil, &NoLlamaError{Host: c.Host.Name, Dir: c.Host.LlamaDir, Detail: detail}
	}
	info := &HostInfo{Host: c.Host.Name, Bench: bench, Clock: clockFrom(s["clock"], t0, t1)}
	info.Fingerprint = parseFingerprint(s, t1)
	return info, nil
}

func clockFrom(text string, t0, t1 time.Time) Clock {
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil {
		return Clock{}
	}
	sec, frac := math.Modf(v)
	host := time.Unix(int64(sec), int64(frac*1e9))
	mid := t0.Add(t1.Sub(t0) / 2)
	return Clock{Skew: host.Sub(mid), Uncertainty: t1.Sub(t0) / 2}
}

func parseFingerprint(s map[string]string, at time.Time) *runner.Fingerprint {
	fp := &runner.Fingerprint{TakenAt: at, TempsBefore: []runner.Temp{}, TempsAfter: []runner.Temp{}}
	if line, v, n, c, err := llamacpp.ParseVersion(s["version"]); err != nil {
		fp.Errors = append(fp.Errors, "--version: "+err.Error())
	} else {
		fp.VersionLine, fp.Version, fp.BuildNumber, fp.Commit = line, v, n, c
	}
	fp.Devices = llamacpp.ParseDevices(s["devices"])
	fp.Backends = llamacpp.ParseBackends(s["devices"])
	if fp.Devices == nil {
		fp.Devices = []llamacpp.Device{}
	}
	fp.Binary, fp.Libraries = hostLibraries(s["files"], s["needed"], fp.Backends)
	if fp.Binary.SHA256 == "" {
		fp.Errors = append(fp.Errors, "llama-bench: not hashed on the host")
	}
	u := strings.Split(strings.TrimSpace(s["uname"]), "\n")
	for len(u) < 5 {
		u = append(u, "")
	}
	nproc, _ := strconv.Atoi(strings.TrimSpace(s["nproc"]))
	fp.Machine = runner.ParseMachine(s["cpuinfo"], s["meminfo"], nproc, strings.TrimSpace(u[0]), strings.TrimSpace(u[1]),
		strings.TrimSpace(u[2]), strings.TrimSpace(u[3]), strings.TrimSpace(u[4]))
	if s["cpuinfo"] == "" {
		fp.Errors = append(fp.Errors, "cpuinfo: not readable on the host")
	}
	return fp
}

// codeLib and backendRE name what the local fingerprint hashes (llamacpp.Libraries): the
// llama.cpp code libraries the tool needs, and the backend libraries it reported loading.
var (
	codeLib   = regexp.MustCompile(`^lib(llama|ggml|mtmd)[-.]`)
	backendRE = regexp.MustCompile(`\(([^()]+)\)$`)
)

// hostLibraries picks llama-bench and, as the local fingerprint does, the code libraries it
// needs (ldd's resolution on the host) and the backends it loaded, from the hashed files
// ("SHA SIZE PATH" lines), sorted by name.
func hostLibraries(files, needed string, backends []string) (llamacpp.Binary, []llamacpp.Binary) {
	want := map[string]bool{}
	for _, p := range strings.Fields(needed) {
		if name := path.Base(p); codeLib.MatchString(name) {
			want[p] = true
		}
	}
	bes := map[string]bool{}
	for _, b := range backends {
		if m := backendRE.FindStringSubmatch(b); m != nil {
			bes[path.Base(m[1])] = true
		}
	}
	var bench llamacpp.Binary
	var libs []llamacpp.Binary
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(files), "\n") {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 {
			continue
		}
		size, _ := strconv.ParseInt(f[1], 10, 64)
		b := llamacpp.Binary{Name: path.Base(f[2]), Path: f[2], Size: size, SHA256: f[0]}
		switch {
		case b.Name == "llama-bench" && bench.SHA256 == "":
			bench = b
		case (want[b.Path] || bes[b.Name]) && !seen[b.Name]:
			seen[b.Name] = true
			libs = append(libs, b)
		}
	}
	sort.Slice(libs, func(i, j int) bool { return libs[i].Name < libs[j].Name })
	return bench, libs
}
