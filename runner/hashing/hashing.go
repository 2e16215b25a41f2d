// Package hashing computes model files' SHA-256 as a stream, with progress events and cancel,
// and keys a cache by what identifies an unchanged file (path, size, mtime, device and inode)
// so that an unchanged 60 GB model is never hashed twice.
package hashing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"sparkbench/runner/fsread"
)

// Progress is reported while a file is hashed.
type Progress struct {
	Path    string
	Done    int64 // bytes hashed so far
	Total   int64 // file size
	Elapsed time.Duration
}

// Fraction is Done/Total (1 for an empty file).
func (p Progress) Fraction() float64 {
	if p.Total <= 0 {
		return 1
	}
	return float64(p.Done) / float64(p.Total)
}

// ProgressInterval is the least time between two progress reports (the last one always comes).
const ProgressInterval = 100 * time.Millisecond

// bufSize is the read size: large enough that syscalls cost nothing next to SHA-256.
const bufSize = 1 << 20

// File streams path through SHA-256. progress (may be nil) is called at most every
// ProgressInterval and once at the end; ctx cancels between reads.
func File(ctx context.Context, path string, progress func(Progress)) (string, error) {
	// A named pipe, socket or device would block the open or never end: only regular files
	// (or links to them) are hashed, and no more bytes than the file had when opened.
	f, st, err := fsread.OpenRegular(path)
	if err != nil {
		var nr *fsread.NotRegularError
		if errors.As(err, &nr) && nr.IsDir() {
			return "", fmt.Errorf("%s is a folder; give a file", path)
		}
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, bufSize)
	start := time.Now()
	last := start
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("hash %s: %w after %d of %d bytes", path, err, done, st.Size())
		}
		n, err := f.Read(buf)
		if done+int64(n) > st.Size() {
			return "", fmt.Errorf("hash %s: the file grew past its %d bytes while it was being hashed; hash it again when it is complete", path, st.Size())
		}
		if n > 0 {
			h.Write(buf[:n])
			done += int64(n)
			if progress != nil {
				if now := time.Now(); now.Sub(last) >= ProgressInterval {
					last = now
					progress(Progress{Path: path, Done: done, Total: st.Size(), Elapsed: now.Sub(start)})
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", path, err)
		}
	}
	if progress != nil {
		progress(Progress{Path: path, Done: done, Total: st.Size(), Elapsed: time.Since(start)})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Key identifies one version of a file: if none of these changed, neither did its bytes short
// of deliberate tampering below the file system (a user-level write or `touch -r` changes the
// ctime; a study's first leg re-reads the file whatever the key says, docs/notebook.md).
type Key struct {
	Path  string    `json:"path"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
	Dev   uint64    `json:"dev"`
	Inode uint64    `json:"inode"`
	// CTime is the inode's change time: any write, and any `touch` that restores the mtime,
	// sets it to now, and no user-level call sets it back; so a file modified in place with
	// its mtime restored still misses the cache.
	CTime time.Time `json:"ctime"`
}

// KeyOf stats path.
func KeyOf(path string) (Key, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Key{}, err
	}
	k := Key{Path: path, Size: st.Size(), MTime: st.ModTime().UTC()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		k.Dev, k.Inode = uint64(sys.Dev), sys.Ino
		k.CTime = time.Unix(sys.Ctim.Unix()).UTC()
	}
	return k, nil
}

// Diff names what differs between two identities of a file ("" when nothing does): size,
// mtime, device/inode (another file), ctime (written or touched).
func Diff(a, b Key) string {
	const stamp = "2006-01-02T15:04:05.000000000Z"
	var d []string
	if a.Size != b.Size {
		d = append(d, fmt.Sprintf("size %d → %d bytes", a.Size, b.Size))
	}
	if !a.MTime.Equal(b.MTime) {
		d = append(d, fmt.Sprintf("mtime %s → %s", a.MTime.UTC().Format(stamp), b.MTime.UTC().Format(stamp)))
	}
	if a.Dev != b.Dev || a.Inode != b.Inode {
		d = append(d, fmt.Sprintf("device/inode %d/%d → %d/%d (another file)", a.Dev, a.Inode, b.Dev, b.Inode))
	}
	if !a.CTime.Equal(b.CTime) {
		d = append(d, fmt.Sprintf("ctime %s → %s (written or touched)", a.CTime.UTC().Format(stamp), b.CTime.UTC().Format(stamp)))
	}
	return strings.Join(d, ", ")
}

// Moved reads k's file again and says what differs from k ("" when nothing does): the one
// stat each run makes before and after a leg to know it still measures the file it hashed.
// A file that can no longer be read is an error.
func Moved(k Key) (string, error) {
	now, err := KeyOf(k.Path)
	if err != nil {
		return "", err
	}
	return Diff(k, now), nil
}

// Cache remembers hashes by Key; the notebook implements it, tests use a map.
type Cache interface {
	Lookup(ctx context.Context, k Key) (sha256 string, ok bool, err error)
	Store(ctx context.Context, k Key, sha256 string) error
}

// Cached returns the file's hash from the cache when its Key is unchanged, else hashes it and
// stores the result. fromCache says which happened.
func Cached(ctx context.Context, c Cache, path string, progress func(Progress)) (sum string, fromCache bool, err error) {
	k, err := KeyOf(path)
	if err != nil {
		return "", false, err
	}
	if c != nil {
		if s, ok, err := c.Lookup(ctx, k); err != nil {
			return "", false, err
		} else if ok {
			return s, true, nil
		}
	}
	s, err := File(ctx, path, progress)
	if err != nil {
		return "", false, err
	}
	// The file may have changed while it was read: only cache a hash whose key still holds.
	if k2, err := KeyOf(path); err != nil || k2 != k {
		return "", false, fmt.Errorf("hash %s: the file changed while it was being hashed; hash it again when it is complete", path)
	}
	if c != nil {
		if err := c.Store(ctx, k, s); err != nil {
			return "", false, err
		}
	}
	return s, false, nil
}

// Status of an artefact against its expected hash.
type Status string

const (
	Pending  Status = "PENDING"  // not hashed yet, or no expected hash to compare with
	Verified Status = "VERIFIED" // computed hash equals the expected one
	Mismatch Status = "MISMATCH" // they differ: never used silently
)

// Compare gives the status of a computed hash against an expected one.
func Compare(computed, expected string) Status {
	switch {
	case computed == "" || expected == "":
		return Pending
	case computed == expected:
		return Verified
	default:
		return Mismatch
	}
}

// MapCache is an in-memory Cache.
type MapCache map[Key]string

func (m MapCache) Lookup(_ context.Context, k Key) (string, bool, error) {
	s, ok := m[k]
	return s, ok, nil
}

func (m MapCache) Store(_ context.Context, k Key, s string) error {
	m[k] = s
	return nil
}
