package remote

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
)

// Session is a host ready for legs: its connection, its fingerprint and where the plan's
// models are on it.
type Session struct {
	Conn *Conn
	Info *HostInfo
	// Models maps a model path as the plan names it to its path on the host.
	Models map[string]string
}

// Connect opens the connection and fingerprints the host; the error is precise (ConnError,
// NoLlamaError) and the connection is closed on failure.
func Connect(ctx context.Context, h Host, o Options) (*Session, error) {
	c, err := Open(ctx, h, o)
	if err != nil {
		return nil, err
	}
	info, err := Fingerprint(ctx, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Session{Conn: c, Info: info, Models: map[string]string{}}, nil
}

// Close ends the host's connection.
func (s *Session) Close() { s.Conn.Close() }

// Bench is llama-bench's path on the host.
func (s *Session) Bench() string { return s.Info.Bench }

// Tool is a llama.cpp tool's path on the host.
func (s *Session) Tool(name string) string { return HostPath(s.Conn.Host.LlamaDir, name) }

// modelFlags are the llama-bench flags whose value is a model path.
var modelFlags = map[string]bool{"-m": true, "--model": true}

// remoteArgv maps the plan's model paths to the host's.
func (s *Session) remoteArgv(argv []string) []string {
	out := append([]string(nil), argv...)
	for i := 1; i+1 < len(out); i++ {
		if modelFlags[out[i]] {
			var parts []string
			for _, m := range strings.Split(out[i+1], ",") {
				if hp, ok := s.Models[m]; ok {
					m = hp
				}
				parts = append(parts, m)
			}
			out[i+1] = strings.Join(parts, ",")
			i++
		}
	}
	return out
}

// Wrap is the local command (ssh -tt) that runs argv with env on the host, the leg's tool
// leading the remote pty's session.
func (s *Session) Wrap(argv, env []string) ([]string, error) {
	cmd, err := ExecCommand(append(append([]string(nil), llamacpp.QuietEnv...), env...), s.remoteArgv(argv))
	if err != nil {
		return nil, err
	}
	return s.Conn.Argv(true, cmd), nil
}

// LegOption makes a runner leg (or every leg of a queue) run on the host.
func (s *Session) LegOption() runner.LegOption { return runner.WithVia(s.Wrap, s.Info.Fingerprint) }

// StartLeg runs a llama-bench leg on the host: spec.Bench is the host's llama-bench (when
// empty) and model paths are mapped through Models.
func (s *Session) StartLeg(ctx context.Context, spec runner.LegSpec) *runner.Leg {
	if spec.Bench == "" {
		spec.Bench = s.Bench()
	}
	return runner.StartLeg(ctx, spec, s.LegOption())
}

// ModelError is a plan model the host cannot give as the plan names it.
type ModelError struct {
	Host, Model, Detail string
}

func (e *ModelError) Error() string {
	return fmt.Sprintf("host %s: model %s: %s", e.Host, e.Model, e.Detail)
}

// HashFile streams a host file through sha256sum on the host: its SHA-256 and size.
func (s *Session) HashFile(ctx context.Context, p string) (string, int64, error) {
	q := QuotePath(p)
	out, err := s.Conn.Output(ctx, 30*time.Minute, Script(`f=`+q+`; [ -f "$f" ] || { echo missing; exit 0; }; `+
		`printf '%s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$(wc -c < "$f" | tr -d ' ')"`))
	if err != nil {
		return "", 0, err
	}
	f := strings.Fields(string(out))
	if len(f) == 1 && f[0] == "missing" {
		return "", 0, &ModelError{Host: s.Conn.Host.Name, Model: p, Detail: "no such file on the host"}
	}
	if len(f) != 2 || len(f[0]) != 64 {
		return "", 0, fmt.Errorf("host %s: sha256sum of %s printed %q", s.Conn.Host.Name, p, strings.TrimSpace(string(out)))
	}
	size, _ := strconv.ParseInt(f[1], 10, 64)
	return f[0], size, nil
}

// ResolveModel finds the plan's model (by file name) in the host's model_dirs and checks its
// SHA-256, computed on the host, against want (when given): a missing or different file is a
// ModelError. The mapping is kept for the legs.
func (s *Session) ResolveModel(ctx context.Context, planPath, want string) (string, error) {
	name := path.Base(strings.ReplaceAll(planPath, "\\", "/"))
	var looked []string
	for _, d := range s.Conn.Host.ModelDirs {
		hp := HostPath(d, name)
		looked = append(looked, hp)
		sha, _, err := s.HashFile(ctx, hp)
		if _, missing := err.(*ModelError); missing {
			continue
		}
		if err != nil {
			return "", err
		}
		if want != "" && !strings.EqualFold(sha, want) {
			return "", &ModelError{Host: s.Conn.Host.Name, Model: planPath,
				Detail: fmt.Sprintf("%s on the host has SHA-256 %s, the plan's is %s (MISMATCH: refused)", hp, sha, want)}
		}
		s.Models[planPath] = hp
		return hp, nil
	}
	return "", &ModelError{Host: s.Conn.Host.Name, Model: planPath,
		Detail: fmt.Sprintf("%s is in none of the host's model_dirs (looked at %s); copy it there: sparkbench host copy-model %s %s", name, strings.Join(looked, ", "), s.Conn.Host.Name, planPath)}
}
