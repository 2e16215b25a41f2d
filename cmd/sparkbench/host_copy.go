package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"sparkbench/runner/hashing"
	"sparkbench/runner/remote"
)

// hostCopyUsage is the copy verb's line in `host`'s usage.
const hostCopyUsage = "host copy-model NAME FILE [--to DIR] [--expect SHA256] [--yes] [--hosts F] [--json]"

// hostCopyModel is `sparkbench host copy-model NAME FILE`: copy a local model to a host over
// its ssh connection (docs/fleet.md, "Copying a model"), with the user's permission (--yes, or
// y at the prompt on a terminal), progress on stderr, resumable, checked by SHA-256 on the host.
func hostCopyModel(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("host copy-model", stderr)
	hosts := fs.String("hosts", "", hostsFlagHelp)
	to := fs.String("to", "", "folder on the host (default: the host's first model_dirs entry)")
	expect := fs.String("expect", "", "the SHA-256 the file must have (refused before anything is sent when it differs)")
	yes := fs.Bool("yes", false, "copy without asking")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 2 {
		fprintf(stderr, "usage: sparkbench %s\n", hostCopyUsage)
		return 2
	}
	f, err := loadHostsFlag(*hosts)
	var h remote.Host
	if err == nil {
		h, err = f.Find(pos[0])
	}
	if err != nil {
		fprintf(stderr, "sparkbench host copy-model: %v\n", err)
		return 2
	}
	src := pos[1]
	st, err := os.Stat(src)
	if err != nil || !st.Mode().IsRegular() {
		fprintf(stderr, "sparkbench host copy-model: %s: not a readable file (%v); give the local model file to copy\n", src, err)
		return 2
	}
	dir := *to
	if dir == "" {
		if len(h.ModelDirs) == 0 {
			fprintf(stderr, "sparkbench host copy-model: host %s has no model_dirs in the hosts file: give --to DIR\n", h.Name)
			return 2
		}
		dir = h.ModelDirs[0]
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	sum, err := hashing.File(ctx, src, nil)
	if err != nil {
		fprintf(stderr, "sparkbench host copy-model: hashing %s: %v\n", src, err)
		return 1
	}
	if e := strings.ToLower(*expect); e != "" && e != sum {
		fprintf(stderr, "sparkbench host copy-model: %s has SHA-256 %s, not the expected %s: nothing was sent\n", src, sum, e)
		return 2
	}
	what := filepath.Base(src) + " (" + mb(st.Size()) + " MB, sha256 " + sum[:12] + ") to " + h.Name + ":" + dir
	if !*yes && !askYes(stdin, stderr, "copy "+what+"? [y/N] ") {
		fprintf(stderr, "sparkbench host copy-model: copying %s needs your permission: answer y on a terminal, or rerun with --yes\n", what)
		return 2
	}
	c, err := remote.Open(ctx, h, remote.Options{Config: f.SSHConfig})
	if err != nil {
		fprintf(stderr, "sparkbench host copy-model: %v\n", err)
		return 1
	}
	s := &remote.Session{Conn: c, Models: map[string]string{}}
	defer s.Close()
	var show func(done, total int64)
	if isTerminal(stderr) {
		show = func(done, total int64) {
			fprintf(stderr, "\r\033[K%s", remote.ProgressLine(filepath.Base(src), done, total))
		}
	}
	res, err := s.CopyModel(ctx, src, sum, dir, remote.CopyOptions{Progress: show})
	if show != nil {
		fprintf(stderr, "\n")
	}
	if err != nil {
		fprintf(stderr, "sparkbench host copy-model: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return 0
	}
	switch {
	case res.AlreadyThere:
		fprintf(stdout, "%s: already on %s with SHA-256 %s; nothing sent\n", res.Dest, h.Name, res.SHA256)
	default:
		if res.Restarted != "" {
			fprintf(stdout, "started over: %s\n", res.Restarted)
		}
		fprintf(stdout, "copied %s to %s:%s: %d bytes sent (%d resumed from an earlier copy), SHA-256 %s checked on the host\n",
			filepath.Base(src), h.Name, res.Dest, res.Sent, res.Resumed, res.SHA256)
	}
	return 0
}

func mb(n int64) string { return fmt.Sprintf("%.1f", float64(n)/1e6) }

// askYes asks on a terminal; anything but y or yes (or no terminal) is no.
func askYes(stdin io.Reader, stderr io.Writer, q string) bool {
	f, ok := stdin.(*os.File)
	if !ok || !isTerminal(f) || !isTerminal(stderr) {
		return false
	}
	fprintf(stderr, "%s", q)
	line, _ := bufio.NewReader(f).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}
