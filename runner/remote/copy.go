package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Copying a model to a host (docs/fleet.md, "Copying a model"): the file's bytes go through the
// host's own connection (the ControlMaster), appended to DIR/NAME.sparkbench-partial by the
// host's `cat`, so an interrupted copy resumes where it stopped; the partial file's prefix is
// checked against the local file's before it is trusted, and the whole file's SHA-256 is
// computed on the host before it is renamed into place. Nothing here needs rsync or scp on
// either side: ssh, cat, sha256sum, mkdir and mv are on every host that runs llama.cpp.

// PartialSuffix names a copy in progress on the host.
const PartialSuffix = ".sparkbench-partial"

// CopyResult is what a copy did.
type CopyResult struct {
	Dest    string `json:"dest"`    // the host path of the model
	SHA256  string `json:"sha256"`  // computed on the host
	Bytes   int64  `json:"bytes"`   // the file's size
	Sent    int64  `json:"sent"`    // bytes sent by this call
	Resumed int64  `json:"resumed"` // bytes of an earlier partial copy kept
	// AlreadyThere: the host already had the file with this SHA-256; nothing was sent.
	AlreadyThere bool `json:"already_there"`
	// Restarted says why an earlier partial copy was not kept (its prefix differs from the
	// local file's, or it is longer); "" when none was found or it was kept.
	Restarted string `json:"restarted,omitempty"`
}

// CopyOptions: Progress is called with the bytes done (resumed ones included) and the total,
// at most about ten times a second and once at the end; Timeout bounds the whole copy
// (default: 10 minutes plus a minute per 100 MiB).
type CopyOptions struct {
	Progress func(done, total int64)
	Timeout  time.Duration
}

// CopyModel copies the local file src, whose SHA-256 is want, to dir on the host as dir/NAME
// (NAME is src's file name). A file already there with the same SHA-256 is kept (AlreadyThere);
// one with another SHA-256 is never overwritten (a ModelError says so).
func (s *Session) CopyModel(ctx context.Context, src, want, dir string, o CopyOptions) (CopyResult, error) {
	h := s.Conn.Host.Name
	st, err := os.Stat(src)
	if err != nil {
		return CopyResult{}, err
	}
	if !st.Mode().IsRegular() {
		return CopyResult{}, fmt.Errorf("%s is not a regular file", src)
	}
	dest := HostPath(dir, filepath.Base(src))
	res := CopyResult{Dest: dest, Bytes: st.Size()}
	switch sha, _, err := s.HashFile(ctx, dest); {
	case err == nil && strings.EqualFold(sha, want):
		res.SHA256, res.AlreadyThere = sha, true
		return res, nil
	case err == nil:
		return res, &ModelError{Host: h, Model: src, Detail: fmt.Sprintf("%s is already on the host with SHA-256 %s, not %s: refused (never overwritten); move it away on the host, or copy to another folder", dest, sha, want)}
	case !isMissing(err):
		return res, err
	}
	partial := dest + PartialSuffix
	offset, why, err := s.resumeOffset(ctx, src, partial, st.Size())
	if err != nil {
		return res, err
	}
	res.Resumed, res.Restarted = offset, why
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10*time.Minute + time.Duration(st.Size()/(100<<20))*time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q := QuotePath(partial)
	head := Script(`mkdir -p ` + QuotePath(dir) + ` && cat >> ` + q)
	if offset == 0 {
		head = Script(`mkdir -p ` + QuotePath(dir) + ` && : > ` + q + ` && cat >> ` + q)
	}
	sent, err := s.sendFrom(cctx, src, offset, st.Size(), head, o.Progress)
	res.Sent = sent
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no end within %s (%v)", timeout, err)
		}
		return res, fmt.Errorf("host %s: copying %s stopped after %d of %d bytes: %w; run the same copy again to resume from %s", h, filepath.Base(src), offset+sent, st.Size(), err, partial)
	}
	sha, size, err := s.HashFile(ctx, partial)
	if err != nil {
		return res, err
	}
	if !strings.EqualFold(sha, want) || size != st.Size() {
		_, _ = s.Conn.Output(ctx, 0, Script(`rm -f `+q))
		return res, fmt.Errorf("host %s: the copy of %s hashes to %s (%d bytes) on the host, not %s (%d bytes); the partial file was removed: copy it again", h, filepath.Base(src), sha, size, want, st.Size())
	}
	if _, err := s.Conn.Output(ctx, 0, Script(`mv -f `+q+` `+QuotePath(dest))); err != nil {
		return res, err
	}
	res.SHA256 = sha
	return res, nil
}

func isMissing(err error) bool {
	var me *ModelError
	return errors.As(err, &me) && me.Detail == "no such file on the host"
}

// resumeOffset is where the copy starts: the size of an earlier partial copy on the host when
// its bytes are the local file's first bytes (the two SHA-256s agree), else 0 with the reason.
func (s *Session) resumeOffset(ctx context.Context, src, partial string, size int64) (int64, string, error) {
	sha, n, err := s.HashFile(ctx, partial)
	switch {
	case isMissing(err):
		return 0, "", nil
	case err != nil:
		return 0, "", err
	case n == 0:
		return 0, "", nil
	case n > size:
		return 0, fmt.Sprintf("the partial copy on the host (%d bytes) is longer than the file (%d bytes)", n, size), nil
	}
	f, err := os.Open(src)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	hh := sha256.New()
	if _, err := io.CopyN(hh, f, n); err != nil {
		return 0, "", err
	}
	if hex.EncodeToString(hh.Sum(nil)) != strings.ToLower(sha) {
		return 0, fmt.Sprintf("the partial copy on the host (%d bytes) is not the start of this file", n), nil
	}
	return n, "", nil
}

// sendFrom streams src from offset into the remote command head over the connection (no pty,
// runBounded); it returns the bytes the remote side read.
func (s *Session) sendFrom(ctx context.Context, src string, offset, size int64, head string, progress func(done, total int64)) (int64, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	pr := &progressReader{r: f, done: offset, total: size, report: progress}
	_, errOut, err := runBounded(ctx, s.Conn.Argv(false, head), pr)
	pr.flush()
	sent := pr.done - offset
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 255 {
			return sent, &ConnError{Host: s.Conn.Host.Name, Kind: classifySSH(errOut), Detail: errOut}
		}
		return sent, fmt.Errorf("%v %s", err, lastLines(errOut, 2))
	}
	if pr.done != size {
		return sent, fmt.Errorf("sent %d of %d bytes", pr.done, size)
	}
	return sent, nil
}

// progressReader counts what was read and reports it at most every 100 ms.
type progressReader struct {
	r           io.Reader
	done, total int64
	report      func(done, total int64)
	last        time.Time
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.report != nil && time.Since(p.last) >= 100*time.Millisecond {
		p.last = time.Now()
		p.report(p.done, p.total)
	}
	return n, err
}

func (p *progressReader) flush() {
	if p.report != nil {
		p.report(p.done, p.total)
	}
}

// ProgressLine is a copy's progress as one line: a bar, the percentage and the megabytes.
func ProgressLine(name string, done, total int64) string {
	frac := 1.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	const width = 30
	n := int(frac * width)
	return fmt.Sprintf("%s [%s%s] %3.0f%% %s of %s MB", name, strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100,
		strconv.FormatFloat(float64(done)/1e6, 'f', 1, 64), strconv.FormatFloat(float64(total)/1e6, 'f', 1, 64))
}
