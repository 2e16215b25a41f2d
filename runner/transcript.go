package runner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Transcript is the verbatim byte stream a process wrote to its pty, as chunks with their
// arrival times. Memory is capped: the first quarter of the cap keeps the head of the output
// (start-up, model load), the rest keeps its tail (the last results, the failure message); a
// record with Omitted > 0 and no data marks where bytes were left out. It is a plain value:
// encoding/json works on it, and MarshalBinary gives a compact form for the store.
type Transcript struct {
	Start   time.Time `json:"start"`
	Cap     int       `json:"cap"`   // in-memory cap in bytes
	Total   int64     `json:"total"` // bytes received
	Records []Record  `json:"records"`
}

// Record is one read from the pty (or a cut marker).
type Record struct {
	T       time.Duration `json:"t"` // arrival since Start
	Data    []byte        `json:"data,omitempty"`
	Omitted int64         `json:"omitted,omitempty"` // bytes left out at this point (cap)
}

// Kept is the number of bytes the transcript holds.
func (t *Transcript) Kept() int64 {
	var n int64
	for _, r := range t.Records {
		n += int64(len(r.Data))
	}
	return n
}

// Omitted is the number of bytes left out by the cap.
func (t *Transcript) Omitted() int64 {
	var n int64
	for _, r := range t.Records {
		n += r.Omitted
	}
	return n
}

// Bytes is the verbatim output, with a one-line marker where bytes were left out.
func (t *Transcript) Bytes() []byte {
	var b bytes.Buffer
	for _, r := range t.Records {
		if r.Omitted > 0 {
			fmt.Fprintf(&b, "\r\n[sparkbench: %d bytes of output not kept (transcript cap %d bytes)]\r\n", r.Omitted, t.Cap)
		}
		b.Write(r.Data)
	}
	return b.Bytes()
}

// transcriptMagic starts the binary form. Layout after it, all integers varints
// (encoding/binary): start (Unix ns), cap, total, record count, then per record: arrival delta
// in ns from the previous record, data length, data, omitted bytes.
const transcriptMagic = "SBTRANS1"

// MarshalBinary encodes the transcript compactly (about 3 bytes of overhead per chunk).
func (t *Transcript) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, len(transcriptMagic)+32+int(t.Kept())+len(t.Records)*8)
	b = append(b, transcriptMagic...)
	b = binary.AppendVarint(b, t.Start.UnixNano())
	b = binary.AppendUvarint(b, uint64(t.Cap))
	b = binary.AppendVarint(b, t.Total)
	b = binary.AppendUvarint(b, uint64(len(t.Records)))
	var prev time.Duration
	for _, r := range t.Records {
		b = binary.AppendVarint(b, int64(r.T-prev))
		prev = r.T
		b = binary.AppendUvarint(b, uint64(len(r.Data)))
		b = append(b, r.Data...)
		b = binary.AppendVarint(b, r.Omitted)
	}
	return b, nil
}

// UnmarshalBinary decodes MarshalBinary's form.
func (t *Transcript) UnmarshalBinary(data []byte) error {
	if !bytes.HasPrefix(data, []byte(transcriptMagic)) {
		return errors.New("transcript: not a sparkbench transcript (bad magic)")
	}
	d := decoder{b: data[len(transcriptMagic):]}
	start := d.varint()
	capB := d.uvarint()
	total := d.varint()
	n := d.uvarint()
	if d.err != nil {
		return d.err
	}
	if n > uint64(len(d.b)) { // each record takes at least 3 bytes
		return errors.New("transcript: record count beyond the data")
	}
	out := Transcript{Start: time.Unix(0, start), Cap: int(capB), Total: total, Records: make([]Record, 0, n)}
	var prev time.Duration
	for i := uint64(0); i < n && d.err == nil; i++ {
		prev += time.Duration(d.varint())
		l := d.uvarint()
		data := d.bytes(l)
		om := d.varint()
		out.Records = append(out.Records, Record{T: prev, Data: data, Omitted: om})
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("transcript: %d bytes after the last record", len(d.b))
	}
	*t = out
	return nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("transcript: truncated or bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errors.New("transcript: truncated or bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errors.New("transcript: record data beyond the end")
		return nil
	}
	if n == 0 {
		return nil
	}
	out := bytes.Clone(d.b[:n])
	d.b = d.b[n:]
	return out
}

// recorder builds a Transcript under its cap while the process runs (reader goroutine only).
type recorder struct {
	start    time.Time
	capB     int
	headCap  int
	head     []Record
	arena    []byte // head data lives here
	tail     []Record
	tailHead int // index of the oldest live tail record
	tailB    int
	omitted  int64
	omitT    time.Duration
	total    int64
}

func newRecorder(start time.Time, capBytes int) *recorder {
	if capBytes <= 0 {
		capBytes = DefaultTranscriptCap
	}
	hc := capBytes / 4
	return &recorder{start: start, capB: capBytes, headCap: hc, arena: make([]byte, 0, min(hc, 64<<10))}
}

func (r *recorder) add(t time.Duration, p []byte) {
	r.total += int64(len(p))
	if room := r.headCap - len(r.arena); room > 0 && len(r.tail) == r.tailHead && r.omitted == 0 {
		n := min(room, len(p))
		off := len(r.arena)
		r.arena = append(r.arena, p[:n]...)
		r.head = append(r.head, Record{T: t, Data: r.arena[off : off+n : off+n]})
		p = p[n:]
		if len(p) == 0 {
			return
		}
	}
	tailCap := r.capB - r.headCap
	if len(p) > tailCap {
		r.omitted += int64(len(p) - tailCap)
		r.omitT = t
		p = p[len(p)-tailCap:]
	}
	r.tail = append(r.tail, Record{T: t, Data: bytes.Clone(p)})
	r.tailB += len(p)
	for r.tailB > tailCap {
		old := r.tail[r.tailHead]
		r.tail[r.tailHead] = Record{}
		r.tailHead++
		r.tailB -= len(old.Data)
		r.omitted += int64(len(old.Data))
		r.omitT = old.T
	}
	// compact the live tail now and then so the slice does not grow without bound
	if r.tailHead > 1024 && r.tailHead*2 > len(r.tail) {
		n := copy(r.tail, r.tail[r.tailHead:])
		clear(r.tail[n:])
		r.tail = r.tail[:n]
		r.tailHead = 0
	}
}

func (r *recorder) transcript() *Transcript {
	t := &Transcript{Start: r.start, Cap: r.capB, Total: r.total}
	t.Records = make([]Record, 0, len(r.head)+len(r.tail)-r.tailHead+1)
	t.Records = append(t.Records, r.head...)
	if r.omitted > 0 {
		t.Records = append(t.Records, Record{T: r.omitT, Omitted: r.omitted})
	}
	t.Records = append(t.Records, r.tail[r.tailHead:]...)
	return t
}

// String summarises the transcript ("12345 bytes, 40 chunks").
func (t *Transcript) String() string {
	s := strconv.FormatInt(t.Total, 10) + " bytes in " + strconv.Itoa(len(t.Records)) + " records"
	if om := t.Omitted(); om > 0 {
		s += ", " + strconv.FormatInt(om, 10) + " not kept"
	}
	return s
}
