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

// notebookHashCache keeps model hashes in the notebook's artefacts table, keyed by path, size,
// mtime, device and inode.
type notebookHashCache struct{ nb *store.Notebook }

func (c notebookHashCache) Lookup(ctx context.Context, k hashing.Key) (string, bool, error) {
	a, ok, err := c.nb.CachedArtefactFile(ctx, k.Path, k.Size, k.MTime, k.Dev, k.Inode)
	if err != nil || !ok || a.SHA256 == "" {
		return "", false, err
	}
	return a.SHA256, true, nil
}

func (c notebookHashCache) Store(ctx context.Context, k hashing.Key, sum string) error {
	_, err := c.nb.UpsertArtefact(ctx, store.Artefact{Path: k.Path, Size: k.Size, MTime: k.MTime, Dev: k.Dev, Inode: k.Inode, SHA256: sum})
	return err
}

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
	h, err := gguf.ReadFile(path)
	if err != nil {
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var progress func(hashing.Progress)
	if isTerminal(stderr) {
		progress = func(p hashing.Progress) {
			fprintf(stderr, "\rhashing %s: %5.1f%% (%s of %s)", filepath.Base(p.Path), p.Fraction()*100, app.HumanBytes(p.Done), app.HumanBytes(p.Total))
		}
	}
	start := time.Now()
	sum, cached, err := hashing.Cached(ctx, notebookHashCache{nb}, path, progress)
	if progress != nil && !cached {
		fprintf(stderr, "\n")
	}
	if err != nil {
		fprintf(stderr, "sparkbench model verify: %v\n", err)
		if errors.Is(err, context.Canceled) {
			return 1
		}
		return 2
	}
	k, _ := hashing.KeyOf(path)
	a, err := nb.UpsertArtefact(ctx, store.Artefact{Path: path, Size: k.Size, MTime: k.MTime, Dev: k.Dev, Inode: k.Inode,
		SHA256: sum, ExpectedSHA256: want, Name: h.Name, Architecture: h.Architecture, Quant: h.FileTypeName, NParams: int64(h.ParamCount)})
	if err != nil {
		fprintf(stderr, "sparkbench model verify: record in the notebook: %v\n", err)
		return 1
	}
	rep := modelVerifyReport{Path: path, Size: k.Size, SHA256: sum, Expected: a.ExpectedSHA256, Status: a.Status,
		FromCache: cached, Seconds: time.Since(start).Seconds()}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		how := "hashed"
		if cached {
			how = "from the notebook's cache (file unchanged)"
		}
		fprintf(stdout, "%s  %s\n%s  %s\n", sum, path, rep.Status, how)
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
