package overview

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// SummaryKind names the stored per-study summary the overview reads (store.StudySummaries):
// a study's series and skipped reason (what studySeries computes from its rows) in the binary
// form below. A new form, or a change to what studySeries computes from the same rows (a
// series' key, a configuration label, which rows count), is a new kind: summaries of the old
// one are then never read. The form is binary because decoding it is about ten times faster
// than encoding/json's of the same series (0.13 ms against 1.3 ms for a study of 125 series,
// 500 points), the difference between about 0.2 s and 1.5 s for 1,000 studies.
const SummaryKind = "overview.series/v1"

// The form of SummaryKind, all integers unsigned varints unless said, strings a length and
// their bytes:
//
//	the skipped reason (string)
//	n strings, then each string: the string table
//	n series, n points in all (one allocation of each when decoding)
//	each series: model, file, sha256, test, backend, config, path (indices into the
//	  table), bandwidth (float64 bits, 8 bytes little endian), n points; each point: leg
//	  (index), row (string), depth (signed varint), t/s (float64 bits)
//
// A point's study is the summary's study, and each series' StudyRef is set by collect.

// encodeSummary is c's payload.
func encodeSummary(c cached) []byte {
	idx := map[string]uint64{}
	var table []string
	ref := func(s string) uint64 {
		i, ok := idx[s]
		if !ok {
			i = uint64(len(table))
			idx[s] = i
			table = append(table, s)
		}
		return i
	}
	var body []byte
	points := 0
	for _, sr := range c.series {
		points += len(sr.Points)
	}
	body = binary.AppendUvarint(body, uint64(len(c.series)))
	body = binary.AppendUvarint(body, uint64(points))
	for _, sr := range c.series {
		for _, s := range []string{sr.Model, sr.File, sr.SHA256, sr.Test, sr.Backend, sr.Config, sr.path} {
			body = binary.AppendUvarint(body, ref(s))
		}
		body = binary.LittleEndian.AppendUint64(body, math.Float64bits(sr.BandwidthGBs))
		body = binary.AppendUvarint(body, uint64(len(sr.Points)))
		for _, p := range sr.Points {
			body = binary.AppendUvarint(body, ref(p.Leg))
			body = appendString(body, p.Row)
			body = binary.AppendVarint(body, p.Depth)
			body = binary.LittleEndian.AppendUint64(body, math.Float64bits(p.TS))
		}
	}
	out := appendString(nil, c.skipped)
	out = binary.AppendUvarint(out, uint64(len(table)))
	for _, s := range table {
		out = appendString(out, s)
	}
	return append(out, body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errSummary = errors.New("malformed overview summary")

// decoder reads a payload b; its strings are slices of s, one copy of b (one allocation).
type decoder struct {
	b   []byte
	s   string
	off int
	err error
}

func (d *decoder) uvarint() uint64 { return read(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return read(d, binary.Varint) }

// read decodes one varint with f; a bad one sets d.err.
func read[T uint64 | int64](d *decoder, f func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := f(d.b[d.off:])
	if n <= 0 {
		d.err = errSummary
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) float() float64 {
	if d.err != nil || len(d.s)-d.off < 8 {
		d.err = errSummary
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return math.Float64frombits(v)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.s)-d.off) {
		d.err = errSummary
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

// count reads a length of items that each take at least one byte.
func (d *decoder) count() int {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.s)-d.off) {
		d.err = errSummary
		return 0 // never a length to allocate: a damaged summary is passed over, not a panic
	}
	return int(n)
}

func (d *decoder) ref(table []string) string {
	i := d.uvarint()
	if d.err != nil || i >= uint64(len(table)) {
		d.err = errSummary
		return ""
	}
	return table[i]
}

// decodeSummary reads a payload of SummaryKind of study id; an error when it is not one.
func decodeSummary(payload []byte, id int64) (cached, error) {
	d := &decoder{b: payload, s: string(payload)}
	c := cached{skipped: d.str()}
	table := make([]string, d.count())
	for i := range table {
		table[i] = d.str()
	}
	n, points := d.count(), d.count()
	if d.err != nil {
		return cached{}, d.err
	}
	c.series = make([]Series, n) // filled in place: no copy of each struct
	cells := make([]Cell, points)
	used := 0
	for i := 0; i < n && d.err == nil; i++ {
		sr := &c.series[i]
		sr.Model, sr.File, sr.SHA256, sr.Test = d.ref(table), d.ref(table), d.ref(table), d.ref(table)
		sr.Backend, sr.Config, sr.path = d.ref(table), d.ref(table), d.ref(table)
		sr.BandwidthGBs = d.float()
		np := d.count()
		if d.err == nil && np > points-used {
			d.err = fmt.Errorf("%w: more points than it says", errSummary)
		}
		if d.err != nil {
			break
		}
		pts := cells[used : used+np : used+np]
		used += np
		for j := range pts {
			p := &pts[j]
			p.Study, p.Leg, p.Row = id, d.ref(table), d.str()
			p.Depth, p.TS = d.varint(), d.float()
		}
		sr.Points = pts
	}
	if d.err == nil && used != points {
		d.err = fmt.Errorf("%w: fewer points than it says", errSummary)
	}
	if d.err == nil && d.off != len(d.s) {
		d.err = fmt.Errorf("%w: %d bytes after its end", errSummary, len(d.s)-d.off)
	}
	if d.err != nil {
		return cached{}, d.err
	}
	return c, nil
}
