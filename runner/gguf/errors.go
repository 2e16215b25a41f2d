package gguf

import (
	"errors"
	"strconv"
)

// Sentinel errors. Every error the reader returns for a bad file is a
// *FormatError whose Unwrap gives one of these, so callers can branch with
// errors.Is and still show the full message.
var (
	ErrIsDirectory        = errors.New("is a directory")
	ErrNotRegular         = errors.New("not a regular file") // a named pipe, socket or device
	ErrEmpty              = errors.New("empty file")
	ErrNotGGUF            = errors.New("not a GGUF file")
	ErrBigEndian          = errors.New("big-endian GGUF file")
	ErrUnsupportedVersion = errors.New("unsupported GGUF version")
	ErrTruncated          = errors.New("truncated GGUF file")
	ErrLimit              = errors.New("value exceeds a limit")
	ErrInvalid            = errors.New("invalid GGUF content")
	ErrDuplicate          = errors.New("duplicate name")
	ErrUnknownType        = errors.New("unknown tensor type")
	ErrRemovedType        = errors.New("removed tensor type")
	ErrMisaligned         = errors.New("misaligned tensor data")
	ErrOverlap            = errors.New("overlapping tensor data")
	ErrOutOfBounds        = errors.New("tensor data out of file bounds")
)

// FormatError describes what is wrong with a GGUF file: where (Path and,
// when it applies, the byte Offset), what (Msg) and what to do (Fix).
type FormatError struct {
	Path   string // file path; "" when reading from a stream
	Offset int64  // byte offset where the problem was found; -1 if none applies
	Kind   error  // one of the Err* sentinels
	Msg    string // what is wrong, in plain words
	Fix    string // what the user can do; may be ""
}

// Error renders "PATH: byte N: MSG; FIX" (PATH is "gguf" for a stream;
// "byte N: " only when Offset applies).
func (e *FormatError) Error() string {
	s := e.Path
	if s == "" {
		s = "gguf"
	}
	s += ": "
	if e.Offset >= 0 {
		s += "byte " + strconv.FormatInt(e.Offset, 10) + ": "
	}
	s += e.Msg
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

// Unwrap returns the sentinel, so errors.Is(err, ErrTruncated) works.
func (e *FormatError) Unwrap() error { return e.Kind }

// Fixes shared by several errors.
const (
	fixRedownload = "the file is corrupted or incomplete: download it again and check its SHA-256"
	fixNotModel   = "pass a .gguf model file"
	fixNotRegular = "give the path of a .gguf model file"
)
