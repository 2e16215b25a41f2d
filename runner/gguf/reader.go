package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"sparkbench/runner/fsread"
)

// Limits that keep a hostile or corrupt file from making the reader
// allocate without bound. Every count and length is also checked against
// the bytes left in the file before anything is allocated.
const (
	Magic            = "GGUF"
	DefaultAlignment = 32 // GGUF_DEFAULT_ALIGNMENT

	MaxKeyLen      = 65535    // GGUF spec: keys are at most 65535 bytes
	MaxStringLen   = 64 << 20 // longest metadata string accepted (chat templates are ~100 KB)
	MaxArrayLen    = 1 << 30  // GGUF_MAX_ARRAY_ELEMENTS in ggml
	MaxArrayDepth  = 8        // arrays of arrays, nested at most this deep
	MaxTensorName  = 63       // GGML_MAX_NAME (64) minus the NUL
	MaxDims        = 4        // GGML_MAX_DIMS
	MaxKVCount     = 1 << 20  // metadata entries
	MaxTensorCount = 1 << 20  // tensor table entries
	// MemoryBudget caps the memory the decoded metadata and tensor table
	// may take (a 262k-token vocabulary takes about 10 MB).
	MemoryBudget = 256 << 20

	minKVSize     = 8 + 1 + 4 + 1 // key length, 1-byte key, type, 1-byte value
	minTensorSize = 8 + 4 + 4 + 8 // name length, n_dims, type, offset
)

// ReadFile reads the header, metadata and tensor table of the GGUF file at
// path. Tensor data is never read; its placement is checked against the
// file size. Errors about the file's content are *FormatError values.
func ReadFile(path string) (*File, error) {
	// Only a regular file (or a link to one) is opened: a named pipe would block the open,
	// a device would never end.
	fh, st, err := fsread.OpenRegular(path)
	if err != nil {
		var nr *fsread.NotRegularError
		if errors.As(err, &nr) {
			if nr.IsDir() {
				return nil, &FormatError{Path: path, Offset: -1, Kind: ErrIsDirectory,
					Msg: "is a directory", Fix: fixNotModel}
			}
			return nil, &FormatError{Path: path, Offset: -1, Kind: ErrNotRegular,
				Msg: "is " + fsread.Describe(nr.Mode) + ", not a regular file", Fix: fixNotRegular}
		}
		return nil, err
	}
	defer fh.Close()
	f, err := Read(fh, st.Size())
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.Path = path
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Read parses a GGUF stream of size bytes from r (positioned at the
// file's first byte). It reads only up to the end of the tensor table.
func Read(r io.Reader, size int64) (*File, error) {
	bufSize := int64(64 << 10)
	if size < bufSize {
		bufSize = max(size, 16)
	}
	rd := &reader{br: bufio.NewReaderSize(r, int(bufSize)), size: size, budget: MemoryBudget}
	return rd.file()
}

// reader decodes little-endian GGUF and tracks its position and what it is
// reading, for error messages.
type reader struct {
	br     *bufio.Reader
	pos    int64
	size   int64
	budget int64
	buf    [8]byte

	// what is being read, for "file ends at byte N while reading ...".
	part        string // e.g. "the value of key"
	name        string // key or tensor name, quoted in messages
	index, of   int64  // entry index and count, when part names an entry
	item, items int64  // array item being read; items < 0 when not in an array
}

// fail builds a *FormatError. Keys and names come from the file, so
// control characters and invalid UTF-8 in the message are escaped.
func (r *reader) fail(kind error, at int64, fix, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if q := strconv.Quote(msg); q[1:len(q)-1] != msg {
		msg = q[1 : len(q)-1]
	}
	return &FormatError{Offset: at, Kind: kind, Msg: msg, Fix: fix}
}

// where describes the current read position in words.
func (r *reader) where() string {
	s := r.part
	switch {
	case r.name != "":
		s += " '" + r.name + "'"
	case r.of > 0:
		s += fmt.Sprintf(" %d of %d", r.index+1, r.of)
	}
	if r.items >= 0 {
		s = fmt.Sprintf("item %d of %d of %s", r.item+1, r.items, s)
	}
	return s
}

func (r *reader) set(part, name string, index, of int64) {
	r.part, r.name, r.index, r.of, r.items = part, name, index, of, -1
}

// truncated reports that need bytes starting at byte at run past the end.
func (r *reader) truncated(need, at int64) error {
	return r.fail(ErrTruncated, -1, fixRedownload,
		"file ends at byte %d while reading %s (%d bytes at byte %d)", r.size, r.where(), need, at)
}

func (r *reader) remaining() int64 { return r.size - r.pos }

// charge takes n bytes from the memory budget.
func (r *reader) charge(n int64) error {
	if n < 0 || n > r.budget {
		return r.fail(ErrLimit, r.pos, "this reader does not accept such files",
			"metadata and tensor table need more than %d MiB of memory while reading %s", MemoryBudget>>20, r.where())
	}
	r.budget -= n
	return nil
}

// read fills p from the stream.
func (r *reader) read(p []byte) error {
	start := r.pos
	if int64(len(p)) > r.remaining() {
		return r.truncated(int64(len(p)), start)
	}
	n, err := io.ReadFull(r.br, p)
	r.pos += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The stream is shorter than its declared size (file shrank).
			r.size = r.pos
			return r.truncated(int64(len(p)), start)
		}
		return fmt.Errorf("read %s at byte %d: %w", r.where(), r.pos, err)
	}
	return nil
}

func (r *reader) u32() (uint32, error) {
	if err := r.read(r.buf[:4]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(r.buf[:4]), nil
}

func (r *reader) u64() (uint64, error) {
	if err := r.read(r.buf[:8]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(r.buf[:8]), nil
}

// str reads a length-prefixed string of at most limit bytes.
func (r *reader) str(limit uint64) (string, error) {
	at := r.pos
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	if n > limit {
		return "", r.fail(ErrLimit, at, fixRedownload,
			"string length %d while reading %s exceeds the limit of %d bytes", n, r.where(), limit)
	}
	if int64(n) > r.remaining() {
		return "", r.truncated(int64(n), r.pos)
	}
	if err := r.charge(int64(n) + 16); err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	b := make([]byte, n)
	if err := r.read(b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (r *reader) file() (*File, error) {
	if r.size <= 0 {
		return nil, r.fail(ErrEmpty, -1, "download it again, or "+fixNotModel, "empty file (0 bytes)")
	}
	if err := r.header(); err != nil {
		return nil, err
	}
	f := &File{Size: r.size, Alignment: DefaultAlignment}
	var err error
	if f.Version, err = r.version(); err != nil {
		return nil, err
	}
	r.set("the tensor count", "", 0, 0)
	nTensors, err := r.u64()
	if err != nil {
		return nil, err
	}
	r.set("the metadata count", "", 0, 0)
	nKV, err := r.u64()
	if err != nil {
		return nil, err
	}
	if err := r.checkCounts(nTensors, nKV); err != nil {
		return nil, err
	}
	if f.KVs, err = r.kvs(int64(nKV)); err != nil {
		return nil, err
	}
	if f.Alignment, err = alignment(r, f.KVs); err != nil {
		return nil, err
	}
	if f.Tensors, err = r.tensors(int64(nTensors)); err != nil {
		return nil, err
	}
	f.DataOffset = r.pos
	if nTensors > 0 {
		f.DataOffset = int64(pad(uint64(r.pos), f.Alignment))
	}
	if err := checkPlacement(r, f); err != nil {
		return nil, err
	}
	f.derive()
	return f, nil
}

// header checks the magic.
func (r *reader) header() error {
	var m [4]byte
	n, err := io.ReadFull(r.br, m[:min(4, int(r.size))])
	r.pos += int64(n)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read magic: %w", err)
	}
	if n == 4 && string(m[:]) == Magic {
		return nil
	}
	shown := printable(m[:n])
	fix := fixNotModel
	switch string(m[:n]) {
	case "lmgg", "fmgg", "tjgg": // 'ggml', 'ggmf', 'ggjt' stored little-endian
		fix = "this is a pre-GGUF GGML model: convert it with llama.cpp's convert_llama_ggml_to_gguf.py"
	}
	if n < 4 {
		unit := "bytes"
		if n == 1 {
			unit = "byte"
		}
		return r.fail(ErrNotGGUF, -1, fix,
			"not a GGUF file: only %d %s ('%s'), too short for the 4-byte magic 'GGUF'", n, unit, shown)
	}
	return r.fail(ErrNotGGUF, -1, fix,
		"not a GGUF file: invalid magic characters: '%s', expected 'GGUF' (bytes % x)", shown, m[:])
}

// printable renders bytes as llama.cpp does: printable ASCII as is, others '?'.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 0x20 && c < 0x7f {
			out[i] = c
		} else {
			out[i] = '?'
		}
	}
	return string(out)
}

func (r *reader) version() (uint32, error) {
	r.set("the version", "", 0, 0)
	at := r.pos
	v, err := r.u32()
	if err != nil {
		return 0, err
	}
	switch {
	case v == 2 || v == 3:
		return v, nil
	case v == 0:
		return 0, r.fail(ErrUnsupportedVersion, at, fixRedownload, "bad GGUF version 0")
	case v&0xFFFF == 0:
		return 0, r.fail(ErrBigEndian, at,
			"only little-endian files are supported: use a little-endian build of the model (or gguf-py's gguf_convert_endian.py)",
			"version field reads %d (0x%08x): this is a big-endian GGUF file", v, v)
	case v == 1:
		return 0, r.fail(ErrUnsupportedVersion, at,
			"convert the model again with a current llama.cpp (convert_hf_to_gguf.py)",
			"GGUF version 1 is no longer supported")
	default:
		return 0, r.fail(ErrUnsupportedVersion, at,
			"update sparkbench, or use a file written by an older llama.cpp",
			"GGUF version %d is newer than this reader supports (2 and 3)", v)
	}
}

func (r *reader) checkCounts(nTensors, nKV uint64) error {
	if nTensors > MaxTensorCount {
		return r.fail(ErrLimit, 8, fixRedownload,
			"tensor count %d exceeds the limit of %d", nTensors, MaxTensorCount)
	}
	if nKV > MaxKVCount {
		return r.fail(ErrLimit, 16, fixRedownload,
			"metadata count %d exceeds the limit of %d", nKV, MaxKVCount)
	}
	need := nTensors*minTensorSize + nKV*minKVSize
	if int64(need) > r.remaining() {
		return r.fail(ErrTruncated, -1, fixRedownload,
			"file ends at byte %d, but its header declares %d metadata entries and %d tensors, which need at least %d more bytes",
			r.size, nKV, nTensors, need)
	}
	return nil
}
