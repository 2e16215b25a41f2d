package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"sparkbench/app"
	"sparkbench/runner/gguf"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// modelVerifyReport is `model verify --json`.
type modelVerifyReport struct {
	Path      string  `json:"path"`
	Size      int64   `json:"size"`
	SHA256    string  `json:"sha256"`
	Expected  string  `json:"expected_sha256,omitempty"`
	Status    string  `json:"status"`
	FromCache bool    `json:"from_cache"`
	Seconds   float64 `json:"seconds"`
}

// modelVerify hashes a model file (streamed, with progress on a terminal, cached in the
// notebook) and compares it with --expect. Exit 0: VERIFIED, or PENDING when nothing was
// expected; 1: MISMATCH; 2: bad input.
func modelVerify(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("model verify", stderr)
	expect := fs.String("expect", "", "the SHA-256 the source publishes")
	nbFlag := fs.String("notebook", "", "notebook file (the hash cache)")
	asJSON := fs.Bool("json", false, "print JSON")
	rehash := fs.Bool("rehash", false, "read the whole file again even when the notebook's cache has its hash")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench model verify: want exactly one GGUF file\n")
		return 2
	}
	want := strings.ToLower(strings.TrimSpace(*expect))
	if want != "" && !isSHA256(want) {
		fprintf(stderr, "sparkbench model verify: --expect %q is not a SHA-256 (64 hex digits)\n", *expect)
		return 2
	}
	path, err := filepath.Abs(pos[0])
	if err != nil {
		fprintf(stderr, "sparkbench model verify: %v\n", err)
		return 2
	}
	if _, err := gguf.ReadFile(path); err != nil {
		fprintf(stderr, "sparkbench model verify: %v\n", err)
		return 2
	}
	nbPath, err := notebookPath(*nbFlag)
	if err != nil {
		fprintf(stderr, "sparkbench model verify: %v\n", err)
		return 2
	}
	nb, err := store.Open(nbPath)
	if err != nil {
		fprintf(stderr, "sparkbench model verify: %v\n", err)
		return 2
	}
	defer nb.Close()
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()

	var progress func(hashing.Progress)
	if isTerminal(stderr) {
		progress = func(p hashing.Progress) {
			fprintf(stderr, "\rhashing %s: %5.1f%% (%s of %s)", filepath.Base(p.Path), p.Fraction()*100, app.HumanBytes(p.Done), app.HumanBytes(p.Total))
		}
	}
	start := time.Now()
	lib := notebookLibrary{nb}
	var st app.ModelStatus
	if *rehash {
		st, err = lib.Rehash(ctx, path, progress)
	} else {
		st, err = lib.Hash(ctx, path, progress)
	}
	if progress != nil && !st.FromCache {
		fprintf(stderr, "\n")
	}
	if err == nil && want != "" {
		cached := st.FromCache
		st, err = lib.SetExpected(ctx, path, want)
		st.FromCache = cached
	}
	if err != nil {
		fprintf(stderr, "sparkbench model verify: %v\n", err)
		if errors.Is(err, context.Canceled) {
			return 1
		}
		return 2
	}
	k, _ := hashing.KeyOf(path)
	rep := modelVerifyReport{Path: path, Size: k.Size, SHA256: st.SHA256, Expected: st.Expected, Status: string(st.Status),
		FromCache: st.FromCache, Seconds: time.Since(start).Seconds()}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		how := "hashed"
		if rep.FromCache {
			how = "from the notebook's cache, not read again: its path, size, mtime, device, inode and ctime are those it had when it was hashed (--rehash reads it)"
		}
		fprintf(stdout, "%s  %s\n%s  %s\n", rep.SHA256, path, rep.Status, how)
		if rep.Status == string(hashing.Mismatch) {
			fprintf(stdout, "expected %s: the file differs from the published one; download it again\n", rep.Expected)
		}
	}
	if rep.Status == string(hashing.Mismatch) {
		return 1
	}
	return 0
}

func isSHA256(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
