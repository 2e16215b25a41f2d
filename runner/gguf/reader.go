package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
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

func (r *reader) kvs(n int64) ([]KV, error) {
	if err := r.charge(n * 64); err != nil {
		return nil, err
	}
	// Grow with what is actually read: a sparse file can declare many
	// entries that are only zeros.
	kvs := make([]KV, 0, min(n, 1024))
	seen := make(map[string]int64, min(n, 1024))
	for i := range n {
		r.set("the key of metadata entry", "", i, n)
		at := r.pos
		key, err := r.str(MaxKeyLen)
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, r.fail(ErrInvalid, at, fixRedownload, "metadata entry %d of %d has an empty key", i+1, n)
		}
		if j, dup := seen[key]; dup {
			return nil, r.fail(ErrDuplicate, at, fixRedownload,
				"duplicate key '%s' (metadata entries %d and %d)", key, j+1, i+1)
		}
		seen[key] = i
		r.set("the type of key", key, 0, 0)
		at = r.pos
		t, err := r.u32()
		if err != nil {
			return nil, err
		}
		vt := ValueType(t)
		if !vt.Valid() {
			return nil, r.fail(ErrInvalid, at, fixRedownload,
				"key '%s' has invalid value type %d (valid: 0 to 12)", key, t)
		}
		kv := KV{Key: key, Type: vt}
		r.set("the value of key", key, 0, 0)
		if vt == TypeArray {
			kv.ArrayType, kv.Value, err = r.array(1)
		} else {
			kv.Value, err = r.scalar(vt)
		}
		if err != nil {
			return nil, err
		}
		kvs = append(kvs, kv)
	}
	return kvs, nil
}

func (r *reader) scalar(t ValueType) (any, error) {
	if t == TypeString {
		return r.str(MaxStringLen)
	}
	n := t.fixedSize()
	if err := r.read(r.buf[:n]); err != nil {
		return nil, err
	}
	return decodeScalar(t, r.buf[:n]), nil
}

func decodeScalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0]
	case TypeInt8:
		return int8(b[0])
	case TypeUint16:
		return le.Uint16(b)
	case TypeInt16:
		return int16(le.Uint16(b))
	case TypeUint32:
		return le.Uint32(b)
	case TypeInt32:
		return int32(le.Uint32(b))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case TypeBool:
		return b[0] != 0
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	return nil
}

// array reads an array's element type, count and items.
func (r *reader) array(depth int) (ValueType, any, error) {
	savedItem, savedItems := r.item, r.items
	at := r.pos
	t, err := r.u32()
	if err != nil {
		return 0, nil, err
	}
	et := ValueType(t)
	if !et.Valid() {
		return 0, nil, r.fail(ErrInvalid, at, fixRedownload,
			"%s has invalid array element type %d (valid: 0 to 12)", r.where(), t)
	}
	if et == TypeArray && depth >= MaxArrayDepth {
		return 0, nil, r.fail(ErrLimit, at, fixRedownload,
			"%s nests arrays more than %d deep", r.where(), MaxArrayDepth)
	}
	at = r.pos
	count, err := r.u64()
	if err != nil {
		return 0, nil, err
	}
	if count > MaxArrayLen {
		return 0, nil, r.fail(ErrLimit, at, fixRedownload,
			"%s has %d items, more than the limit of %d", r.where(), count, MaxArrayLen)
	}
	if need := count * uint64(et.minSize()); need > uint64(r.remaining()) {
		return 0, nil, r.fail(ErrTruncated, at, fixRedownload,
			"file ends at byte %d while reading %s: an array of %d %s items needs at least %d bytes, %d remain",
			r.size, r.where(), count, et, need, r.remaining())
	}
	n := int(count)
	memSize := int64(et.fixedSize())
	switch et {
	case TypeString:
		memSize = 16
	case TypeArray:
		memSize = 24
	}
	if err := r.charge(int64(n) * memSize); err != nil {
		return 0, nil, err
	}
	r.items = int64(n)
	var v any
	switch et {
	case TypeString:
		a := make([]string, n)
		for i := range a {
			r.item = int64(i)
			if a[i], err = r.str(MaxStringLen); err != nil {
				return 0, nil, err
			}
		}
		v = a
	case TypeArray:
		a := make([]Array, n)
		for i := range a {
			r.item = int64(i)
			if a[i].Type, a[i].Value, err = r.array(depth + 1); err != nil {
				return 0, nil, err
			}
		}
		v = a
	default:
		if v, err = r.numbers(et, n); err != nil {
			return 0, nil, err
		}
	}
	r.item, r.items = savedItem, savedItems
	return et, v, nil
}

// numbers reads n fixed-size items in bulk.
func (r *reader) numbers(t ValueType, n int) (any, error) {
	size := t.fixedSize()
	raw := make([]byte, n*size)
	if err := r.read(raw); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return raw, nil
	case TypeInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = int8(raw[i])
		}
		return a, nil
	case TypeBool:
		a := make([]bool, n)
		for i := range a {
			a[i] = raw[i] != 0
		}
		return a, nil
	case TypeUint16:
		a := make([]uint16, n)
		for i := range a {
			a[i] = le.Uint16(raw[2*i:])
		}
		return a, nil
	case TypeInt16:
		a := make([]int16, n)
		for i := range a {
			a[i] = int16(le.Uint16(raw[2*i:]))
		}
		return a, nil
	case TypeUint32:
		a := make([]uint32, n)
		for i := range a {
			a[i] = le.Uint32(raw[4*i:])
		}
		return a, nil
	case TypeInt32:
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeFloat32:
		a := make([]float32, n)
		for i := range a {
			a[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return a, nil
	case TypeUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = le.Uint64(raw[8*i:])
		}
		return a, nil
	case TypeInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(le.Uint64(raw[8*i:]))
		}
		return a, nil
	case TypeFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return a, nil
	}
	return nil, fmt.Errorf("gguf: internal error: numbers(%v)", t)
}

// alignment returns general.alignment, which llama.cpp requires to be a
// UINT32 power of two.
func alignment(r *reader, kvs []KV) (uint64, error) {
	for _, kv := range kvs {
		if kv.Key != "general.alignment" {
			continue
		}
		v, ok := kv.Value.(uint32)
		if !ok {
			return 0, r.fail(ErrInvalid, -1, fixRedownload,
				"key 'general.alignment' must be of type UINT32 but is %s", typeName(kv))
		}
		if v == 0 || v&(v-1) != 0 {
			return 0, r.fail(ErrInvalid, -1, fixRedownload,
				"general.alignment is %d, which is not a power of 2", v)
		}
		return uint64(v), nil
	}
	return DefaultAlignment, nil
}

func typeName(kv KV) string {
	if kv.Type == TypeArray {
		return "ARRAY/" + kv.ArrayType.String()
	}
	return kv.Type.String()
}

func (r *reader) tensors(n int64) ([]Tensor, error) {
	if err := r.charge(n * 96); err != nil {
		return nil, err
	}
	ts := make([]Tensor, 0, min(n, 4096))
	seen := make(map[string]int64, min(n, 4096))
	dims := make([]uint64, 0, min(n, 4096)*2) // shared backing array for the shapes
	for i := range n {
		r.set("the name of tensor", "", i, n)
		at := r.pos
		name, err := r.str(MaxTensorName)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[name]; dup {
			return nil, r.fail(ErrDuplicate, at, fixRedownload,
				"duplicate tensor name '%s' (tensors %d and %d)", name, j+1, i+1)
		}
		seen[name] = i
		t := Tensor{Name: name}

		r.set("the dimension count of tensor", name, 0, 0)
		at = r.pos
		nd, err := r.u32()
		if err != nil {
			return nil, err
		}
		if nd > MaxDims {
			return nil, r.fail(ErrLimit, at, fixRedownload,
				"tensor '%s' has %d dimensions; GGUF allows at most %d", name, nd, MaxDims)
		}
		r.set("the shape of tensor", name, 0, 0)
		start := len(dims)
		for range nd {
			d, err := r.u64()
			if err != nil {
				return nil, err
			}
			dims = append(dims, d)
		}
		t.Shape = dims[start:len(dims):len(dims)]
		at = r.pos
		elems := uint64(1)
		overflow := false
		for _, d := range t.Shape {
			hi, lo := bits.Mul64(elems, d)
			if d >= 1<<63 || hi != 0 || lo >= 1<<63 {
				overflow = true
				break
			}
			elems = lo
		}
		if overflow {
			return nil, r.fail(ErrLimit, at, fixRedownload,
				"tensor '%s' has shape %v, whose element count does not fit in 63 bits", name, t.Shape)
		}

		r.set("the type of tensor", name, 0, 0)
		at = r.pos
		tt, err := r.u32()
		if err != nil {
			return nil, err
		}
		t.Type = GGMLType(tt)
		if !t.Type.Known() {
			if rm, ok := removedTypes[t.Type]; ok {
				return nil, r.fail(ErrRemovedType, at, rm.fix,
					"tensor '%s' has type %d (%s), which ggml no longer supports", name, tt, rm.name)
			}
			return nil, r.fail(ErrUnknownType, at,
				"the file may need a newer llama.cpp and sparkbench",
				"tensor '%s' has unknown ggml type %d (known: 0 to %d)", name, tt, ggmlTypeCount-1)
		}
		blck, tsize := t.Type.BlockSize(), t.Type.TypeSize()
		ne0 := uint64(1)
		if len(t.Shape) > 0 {
			ne0 = t.Shape[0]
		}
		if ne0%blck != 0 {
			return nil, r.fail(ErrInvalid, at, fixRedownload,
				"tensor '%s' of type %s has %d elements per row, not a multiple of the block size %d",
				name, t.Type, ne0, blck)
		}
		// size = ne0/blck * type_size * ne1 * ne2 * ne3 = elems/blck * type_size.
		hi, size := bits.Mul64(elems/blck, tsize)
		if hi != 0 || size >= 1<<63 {
			return nil, r.fail(ErrLimit, at, fixRedownload,
				"tensor '%s' of type %s with shape %v has a size in bytes that does not fit in 63 bits", name, t.Type, t.Shape)
		}
		t.Size = size

		r.set("the data offset of tensor", name, 0, 0)
		if t.Offset, err = r.u64(); err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// pad rounds x up to a multiple of align (a power of two).
func pad(x, align uint64) uint64 { return (x + align - 1) &^ (align - 1) }

// checkPlacement checks each tensor's data lies within the file, is
// aligned and overlaps no other tensor.
func checkPlacement(r *reader, f *File) error {
	base := uint64(f.DataOffset)
	for _, t := range f.Tensors {
		if t.Offset%f.Alignment != 0 {
			return r.fail(ErrMisaligned, -1, fixRedownload,
				"tensor '%s' has data offset %d, not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		start, c1 := bits.Add64(base, t.Offset, 0)
		end, c2 := bits.Add64(start, t.Size, 0)
		if c1 != 0 || c2 != 0 || end > uint64(f.Size) {
			endText := fmt.Sprint(end)
			if c1 != 0 || c2 != 0 {
				endText = "beyond 2^64"
			}
			return r.fail(ErrOutOfBounds, -1, fixRedownload,
				"tensor '%s' data is not within the file bounds: it ends at byte %s but the file has %d bytes",
				t.Name, endText, f.Size)
		}
	}
	order := make([]int, 0, len(f.Tensors))
	for i, t := range f.Tensors {
		if t.Size > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset
	})
	for k := 1; k < len(order); k++ {
		prev, cur := f.Tensors[order[k-1]], f.Tensors[order[k]]
		if cur.Offset < prev.Offset+prev.Size {
			return r.fail(ErrOverlap, -1, fixRedownload,
				"tensor '%s' (data bytes %d to %d) overlaps tensor '%s' (data bytes %d to %d)",
				cur.Name, cur.Offset, cur.Offset+cur.Size, prev.Name, prev.Offset, prev.Offset+prev.Size)
		}
	}
	return nil
}
