// Package sshdtest starts OpenSSH servers on 127.0.0.1 for tests: each its own free port,
// throwaway host key, authorized client key, known_hosts line and ssh_config alias, run as
// `sshd -D -e -f CONFIG` in its own process group (no system service), stopped by t.Cleanup.
package sshdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is one running sshd.
type Server struct {
	Alias      string // the ssh_config alias that reaches it
	Port       int
	Dir        string // its files: keys, config, known_hosts, log
	HostPub    string // the host public key line
	ClientKey  string // private key that is authorized
	KnownHosts string
	cmd        *exec.Cmd
	exited     chan struct{}
	log        *SyncBuffer
}

// SyncBuffer is a bytes.Buffer that several goroutines may write and read (a process's log).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Binary is where sshd is looked up.
func Binary() (string, error) {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("sshd not found: install openssh-server (make system does)")
}

// Need skips (or, under make, where SPARKBENCH_REQUIRE_LLAMA=1, fails) a test without sshd,
// ssh or ssh-keygen.
func Need(t testing.TB) string {
	t.Helper()
	sshd, err := Binary()
	if err == nil {
		for _, c := range []string{"ssh", "ssh-keygen"} {
			if _, e := exec.LookPath(c); e != nil {
				err = fmt.Errorf("%s not found: install openssh-client", c)
			}
		}
	}
	if err != nil {
		if os.Getenv("SPARKBENCH_REQUIRE_LLAMA") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// sshd run as root wants its privilege separation folder (the system service makes it).
	if os.Geteuid() == 0 {
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshd needs /run/sshd: %v", err)
		}
	}
	return sshd
}

func run(t testing.TB, argv ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreePort is a port that was free on 127.0.0.1 a moment ago.
func FreePort(t testing.TB) int { return freePort(t) }

// Start runs an sshd reached as alias. Lines of extra go into its sshd_config.
func Start(t testing.TB, alias string, extra ...string) *Server {
	t.Helper()
	sshd := Need(t)
	dir := t.TempDir()
	s := &Server{Alias: alias, Dir: dir, Port: freePort(t), exited: make(chan struct{}), log: &SyncBuffer{}}
	hostKey := filepath.Join(dir, "host_ed25519")
	s.ClientKey = filepath.Join(dir, "client_ed25519")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sparkbench-test-host", "-f", hostKey)
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sparkbench-test-client", "-f", s.ClientKey)
	pub, err := os.ReadFile(s.ClientKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	hp, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	s.HostPub = strings.TrimSpace(string(hp))
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	s.WriteKnownHosts(t, s.HostPub)
	conf := []string{
		"Port " + strconv.Itoa(s.Port), "ListenAddress 127.0.0.1", "HostKey " + hostKey,
		"AuthorizedKeysFile " + auth, "PidFile " + filepath.Join(dir, "sshd.pid"), "StrictModes no",
		"UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password", "PrintMotd no", "PrintLastLog no", "UseDNS no",
		"MaxSessions 64", "MaxStartups 64",
	}
	conf = append(conf, extra...)
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(sshd, "-D", "-e", "-f", cfg)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.Stop)
	s.waitListening(t)
	return s
}

func (s *Server) waitListening(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			t.Fatalf("sshd exited at start: %s", s.log.String())
		default:
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("sshd did not listen on 127.0.0.1:%d within 20s", s.Port)
}

// WriteKnownHosts replaces the client's known_hosts with one line for this server and key.
func (s *Server) WriteKnownHosts(t testing.TB, key string) {
	t.Helper()
	line := fmt.Sprintf("[127.0.0.1]:%d %s\n", s.Port, key)
	if err := os.WriteFile(s.KnownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ConfigBlock is this server's ssh_config Host block: strict host key checking against its
// own known_hosts, its own key, BatchMode.
func (s *Server) ConfigBlock() string {
	u := "root"
	if cur, err := user.Current(); err == nil {
		u = cur.Username
	}
	return fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  BatchMode yes\n",
		s.Alias, s.Port, u, s.ClientKey, s.KnownHosts)
}

// WriteConfig writes an ssh_config with the blocks of every server (and extra text) and
// returns its path.
func WriteConfig(t testing.TB, extra string, servers ...*Server) string {
	t.Helper()
	var b strings.Builder
	for _, s := range servers {
		b.WriteString(s.ConfigBlock())
	}
	b.WriteString(extra)
	p := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Stop ends the server and every session it started (its process group, then each session
// process, which sshd puts in a group of its own), bounded.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// Log is what sshd printed so far (-e: to stderr).
func (s *Server) Log() string { return s.log.String() }

// HostDirs makes a host's own llama.cpp folder and model folder under a new temporary folder:
// ROOT/bin holds links to every file of the llama.cpp folder llamaDir, ROOT/lib links to the
// folder beside it (the prefix's libraries), ROOT/models links to each model. It returns the
// two folders as the hosts file names them.
func HostDirs(t testing.TB, llamaDir string, models ...string) (bin, modelDir string) {
	t.Helper()
	root := t.TempDir()
	bin, modelDir = filepath.Join(root, "bin"), filepath.Join(root, "models")
	for _, d := range []string{bin, modelDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(llamaDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(llamaDir, e.Name()), filepath.Join(bin, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if lib := filepath.Join(filepath.Dir(llamaDir), "lib"); isDir(lib) {
		if err := os.Symlink(lib, filepath.Join(root, "lib")); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range models {
		if err := os.Symlink(m, filepath.Join(modelDir, filepath.Base(m))); err != nil {
			t.Fatal(err)
		}
	}
	return bin, modelDir
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Processes lists the live processes whose program (argv[0]) starts with prefix (a host's own
// folder: on a loopback host, its processes are this machine's), as "PID argv".
func Processes(prefix string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(b), prefix) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && (st[i+2] == 'Z' || st[i+2] == 'X') {
				continue
			}
		}
		out = append(out, strconv.Itoa(pid)+" "+strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
	}
	return out
}

// Lab is the example hosts file run against loopback sshd hosts: one sshd per host of the
// file (reached by the file's own ssh alias), each with its own llama.cpp and model folders,
// which replace the file's ~/ folders (the loopback hosts share this machine's home).
type Lab struct {
	HostsFile string             // the hosts file the test passes (--hosts)
	Servers   map[string]*Server // by host name
	LlamaDirs map[string]string  // by host name
	ModelDirs map[string]string
}

// StartLab reads the hosts file example, starts its hosts and writes the test's copy.
func StartLab(t testing.TB, example, llamaDir string, models ...string) *Lab {
	t.Helper()
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	lab := &Lab{Servers: map[string]*Server{}, LlamaDirs: map[string]string{}, ModelDirs: map[string]string{}}
	var servers []*Server
	for _, hv := range f["hosts"].([]any) {
		h := hv.(map[string]any)
		name, alias := h["name"].(string), h["ssh"].(string)
		s := Start(t, alias)
		bin, md := HostDirs(t, llamaDir, models...)
		h["llama_dir"], h["model_dirs"] = bin, []string{md}
		lab.Servers[name], lab.LlamaDirs[name], lab.ModelDirs[name] = s, bin, md
		servers = append(servers, s)
	}
	f["ssh_config"] = WriteConfig(t, "", servers...)
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	lab.HostsFile = filepath.Join(t.TempDir(), "hosts.json")
	if err := os.WriteFile(lab.HostsFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return lab
}

// KillSessions cuts every connection the server holds (SIGKILL to each per-connection sshd
// process, the listener's children), as a network failure or a host going down would.
func (s *Server) KillSessions() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(st, ')')
		if err != nil || i < 0 {
			continue
		}
		if f := strings.Fields(string(st[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(s.cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
