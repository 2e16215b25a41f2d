package remote

import (
	"fmt"
	"strings"
)

// Quote makes s one word for a POSIX shell: in single quotes, each ' inside closed, escaped and
// reopened. The host's login shell reads the remote command line, so every word sparkbench sends goes through here.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuotePath quotes a host path; a leading ~/ stays outside the quotes as "$HOME"/ so the host
// expands it.
func QuotePath(p string) string {
	switch {
	case p == "~":
		return `"$HOME"`
	case strings.HasPrefix(p, "~/"):
		return `"$HOME"/` + Quote(p[2:])
	}
	return Quote(p)
}

// Command is a remote command line: argv quoted word by word, argv[0] as a host path.
func Command(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("remote command: empty")
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, "\x00\n\r") {
			return "", fmt.Errorf("remote command: argument %d contains a NUL or a line break", i)
		}
		if i == 0 {
			words[i] = QuotePath(a)
		} else {
			words[i] = Quote(a)
		}
	}
	return strings.Join(words, " "), nil
}

// ExecCommand is the remote command line of a leg: exec env K=V … argv, so the tool replaces
// the login shell and leads the remote pty's session (it gets SIGHUP when the connection goes).
func ExecCommand(env, argv []string) (string, error) {
	cmd, err := Command(argv)
	if err != nil {
		return "", err
	}
	pre := "exec"
	if len(env) > 0 {
		e, err := Command(append([]string{"env"}, env...))
		if err != nil {
			return "", err
		}
		pre += " " + e
	}
	return pre + " " + cmd, nil
}

// Script runs a POSIX sh script on the host whatever its login shell.
func Script(s string) string { return "exec /bin/sh -c " + Quote(s) }

// HostPath joins a host folder and a name the way the host reads it.
func HostPath(dir, name string) string { return strings.TrimRight(dir, "/") + "/" + name }

// ExecCommandOrEmpty is ExecCommand(nil, argv), or "false" (which fails on the host) for an
// argv that cannot be sent.
func ExecCommandOrEmpty(argv []string) string {
	c, err := ExecCommand(nil, argv)
	if err != nil {
		return "false"
	}
	return c
}
