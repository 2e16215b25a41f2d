// Package fsread opens files for reading only when they are regular files. A named pipe, a
// socket or a device given where a file is expected would otherwise block the open or the
// read forever (a FIFO with no writer) or never end (/dev/zero); here they are refused with
// a message that says what the path is and what to give instead. Symbolic links are followed:
// a link to a regular file is a regular file.
package fsread

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is matched (errors.Is) by every *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError is a path that names something other than a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type the path had when it was checked
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file; give the path of a file", e.Path, Describe(e.Mode))
}

// Is makes errors.Is(err, ErrNotRegular) true.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// IsDir says whether the path was a folder (callers that have their own message for
// folders check this first).
func (e *NotRegularError) IsDir() bool { return e.Mode.IsDir() }

// Describe names a file type in words: "a named pipe (FIFO)", "a socket", "a character
// device", "a block device", "a directory", "a symbolic link".
func Describe(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return fmt.Sprintf("not a plain file (%v)", m.Type())
}

// OpenRegular opens path for reading if it is a regular file (after following symbolic
// links), and returns it with its FileInfo. Anything else is a *NotRegularError. The type is
// checked before the open and again on the opened descriptor, and the open itself uses
// O_NONBLOCK, so a path swapped for a FIFO between the two cannot block it either.
// (O_NONBLOCK changes nothing for reads of a regular file.)
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, asOpen(err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return reopen(path, func() (*os.File, error) {
		return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	})
}

// OpenRegularIn is OpenRegular for a name inside root (the name cannot resolve outside it).
func OpenRegularIn(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	st, err := root.Stat(name)
	if err != nil {
		return nil, nil, asOpen(err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Path: name, Mode: st.Mode()}
	}
	return reopen(name, func() (*os.File, error) {
		return root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	})
}

// asOpen words a failed look-up as the open it stands for ("open F: no such file or
// directory", as os.ReadFile says), so callers' messages read the same as before.
func asOpen(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "stat" {
		return &fs.PathError{Op: "open", Path: pe.Path, Err: pe.Err}
	}
	return err
}

func reopen(path string, open func() (*os.File, error)) (*os.File, fs.FileInfo, error) {
	f, err := open()
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, st, nil
}

// TooLargeError is a file longer than a reader's limit.
type TooLargeError struct {
	Path  string
	Size  int64 // bytes seen (at least Limit+1 when the file grew while read)
	Limit int64
	What  string // what the file was read as, e.g. "llama-bench output"; may be ""
}

func (e *TooLargeError) Error() string {
	what := ""
	if e.What != "" {
		what = " for " + e.What
	}
	return fmt.Sprintf("%s is %d bytes, more than the %d-byte limit%s; give a smaller file (split it)", e.Path, e.Size, e.Limit, what)
}

// ReadFile reads a whole regular file of at most limit bytes (OpenRegular's refusals, then a
// *TooLargeError for a longer file, checked on its size and again while reading, so a file
// that grows while read cannot make it read without end). what names the content for the
// message.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, st, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit, What: what}
	}
	buf := bytes.NewBuffer(make([]byte, 0, st.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, &TooLargeError{Path: path, Size: int64(buf.Len()), Limit: limit, What: what}
	}
	return buf.Bytes(), nil
}
