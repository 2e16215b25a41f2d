package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"sparkbench/runner/atomicfile"
	"sparkbench/runner/jsonlex"
)

// The anchor: a chain alone cannot show that its last entries were deleted (what is left
// still verifies), so the last head seen is kept beside the notebook, in NOTEBOOK.anchor, and
// `notebook verify` reports a journal that ends before it, or holds another entry in its place.

// AnchorSchema is the anchor file's schema.
const AnchorSchema = "sparkbench.anchor/v1"

// maxAnchorBytes bounds the read of an anchor file (a real one is about 200 bytes).
const maxAnchorBytes = 4096

// Anchor is the last journal head seen: written when a writable notebook is closed (the
// head then, if it extends the anchored one) and when `notebook verify` finds the chain
// intact.
type Anchor struct {
	Schema    string `json:"schema"`
	Seq       int64  `json:"seq"`        // the head entry's seq
	Head      string `json:"head"`       // its hash
	WrittenAt string `json:"written_at"` // notebook timestamp format
	By        string `json:"by"`         // "close" or "verify"
}

// AnchorPath is the anchor file of the notebook at path.
func AnchorPath(notebook string) string { return notebook + ".anchor" }

// ReadAnchor reads an anchor file; found is false when there is none. A file that is not a
// plain file, too large, or not an anchor is an error that says so.
func ReadAnchor(path string) (a Anchor, found bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	if !fi.Mode().IsRegular() {
		return a, false, fmt.Errorf("%s is not a plain file", path)
	}
	if fi.Size() > maxAnchorBytes {
		return a, false, fmt.Errorf("%s is %d bytes, more than an anchor holds (at most %d)", path, fi.Size(), maxAnchorBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return a, false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAnchorBytes+1))
	if err != nil {
		return a, false, err
	}
	if e := jsonlex.DecodeStrict(b, &a); e != nil {
		return Anchor{}, false, fmt.Errorf("%s is not an anchor: %v", path, e)
	}
	switch {
	case a.Schema != AnchorSchema:
		return Anchor{}, false, fmt.Errorf("%s is not an anchor: schema %q, want %q", path, a.Schema, AnchorSchema)
	case a.Seq < 1 || !IsJournalHash(a.Head):
		return Anchor{}, false, fmt.Errorf("%s is not an anchor: entry %d, head %q (want an entry ≥ 1 and a 64-digit hex hash)", path, a.Seq, a.Head)
	}
	return a, true, nil
}

// IsJournalHash reports whether s is a SHA-256 in lower-case hex, as the journal stores them.
func IsJournalHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// writeAnchor replaces the anchor file (mode 0600) atomically: a temporary file in the same
// folder, synced, renamed over it, the folder synced.
func writeAnchor(path string, a Anchor) error {
	a.Schema = AnchorSchema
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return atomicfile.WriteFile(path, b, 0o600)
}

// AnchorCheck is what the anchor says about the journal.
type AnchorCheck struct {
	Path   string
	Anchor Anchor
	// Problem is "" when the journal holds the anchored entry with the anchored hash,
	// AnchorTruncated when the journal ends before it, AnchorRewritten when that entry has
	// another hash (entries deleted and others written in their place, or another notebook).
	Problem string
	HashAt  string // the hash of the journal's entry at Anchor.Seq ("" when it has none)
}

// AnchorCheck problems.
const (
	AnchorTruncated = "truncated"
	AnchorRewritten = "rewritten"
)

// hashAt is the hash of the journal's entry seq ("" when there is none).
func hashAt(ctx context.Context, q querier, seq int64) (string, error) {
	var h string
	err := q.QueryRowContext(ctx, "SELECT hash FROM journal WHERE seq = ?", seq).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return h, err
}

// CheckAnchor compares the journal, as Verify walked it (rep: the chain ends at rep.HeadSeq),
// with the notebook's anchor file; nil when there is none. err is for an anchor that cannot
// be read and for I/O problems.
func (n *Notebook) CheckAnchor(ctx context.Context, rep VerifyReport) (*AnchorCheck, error) {
	path := AnchorPath(n.path)
	a, found, err := ReadAnchor(path)
	if err != nil || !found {
		return nil, err
	}
	c := &AnchorCheck{Path: path, Anchor: a}
	if c.HashAt, err = hashAt(ctx, n.rdb, a.Seq); err != nil {
		return nil, err
	}
	switch {
	// Beyond the walk, the journal holding the anchored entry: another process appended
	// entries and closed (moving the anchor) while Verify walked the chain. Not a truncation.
	case a.Seq > rep.HeadSeq && c.HashAt == "":
		c.Problem = AnchorTruncated
	case c.HashAt != a.Head:
		c.Problem = AnchorRewritten
	}
	return c, nil
}

// SeqOfHash finds the journal entry whose hash is h (found false: none).
func (n *Notebook) SeqOfHash(ctx context.Context, h string) (seq int64, found bool, err error) {
	err = n.rdb.QueryRowContext(ctx, "SELECT seq FROM journal WHERE hash = ? ORDER BY seq LIMIT 1", h).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return seq, err == nil, err
}

// WriteAnchor records the head of a chain Verify found intact (and that CheckAnchor found
// holding the anchored head) as the notebook's anchor. Nothing is written for an empty
// journal.
func (n *Notebook) WriteAnchor(rep VerifyReport) error {
	if !rep.OK() || rep.HeadSeq < 1 {
		return nil
	}
	// An anchor at or beyond the walked head (another process closed after appending while
	// Verify walked) stays: the anchor only moves forward.
	if a, found, err := ReadAnchor(AnchorPath(n.path)); err == nil && found && a.Seq >= rep.HeadSeq {
		return nil
	}
	return writeAnchor(AnchorPath(n.path), Anchor{Seq: rep.HeadSeq, Head: rep.Head, WrittenAt: n.nowText(), By: "verify"})
}

// advanceAnchor moves the anchor to the journal's head when a writable notebook is closed,
// if the head extends the anchored one (the journal still holds the anchored entry with its
// hash). An anchor the journal contradicts (truncated, rewritten) or that cannot be read is
// left as it is, for `notebook verify` to report. Best effort: the notebook is closed anyway.
func (n *Notebook) advanceAnchor(ctx context.Context) error {
	var seq int64
	var head string
	err := n.rdb.QueryRowContext(ctx, "SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").Scan(&seq, &head)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	path := AnchorPath(n.path)
	a, found, err := ReadAnchor(path)
	if err != nil {
		return err
	}
	if found {
		if a.Seq >= seq {
			return nil // the same head, or one the journal does not reach
		}
		h, err := hashAt(ctx, n.rdb, a.Seq)
		if err != nil || h != a.Head {
			return err
		}
	}
	return writeAnchor(path, Anchor{Seq: seq, Head: head, WrittenAt: n.nowText(), By: "close"})
}
