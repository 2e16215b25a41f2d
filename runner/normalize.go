package runner

import "strconv"

// lineSplitter turns a pty's byte stream into text lines for parsing. "\r\n", "\n" and a lone
// "\r" (a redrawn progress line) end a line; a run of "\r" counts once; ANSI escape sequences
// (CSI, OSC, DCS, two- and three-byte escapes) and the other C0 controls except TAB are
// removed. A line longer than max is cut there with a marker, and the rest of it is counted,
// not kept, until its end. Its state survives chunk boundaries, so any split of the same bytes
// yields the same lines. The verbatim bytes are the transcript's business, not this type's.
type lineSplitter struct {
	max int
	buf []byte
	cut int64 // bytes of the current line beyond max
	cr  bool  // the previous byte was a CR that already ended a line
	esc escState
	osc int // bytes inside the current OSC/DCS string
}

type escState uint8

const (
	escNone   escState = iota
	escStart           // after ESC
	escInter           // ESC + intermediate bytes (charset designation …)
	escCSI             // ESC [
	escString          // ESC ] / P / X / ^ / _ … until BEL or ESC \
	escStrEsc          // ESC inside a string (a following \ ends it)
)

// maxEscString bounds an unterminated OSC/DCS string before it is given up on.
const maxEscString = 4096

// ctl marks the bytes the fast path must stop at.
var ctl = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t'
	}
	t[0x7f] = true
	return
}()

func newLineSplitter(max int) *lineSplitter {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &lineSplitter{max: max}
}

// feed consumes p and calls emit for each completed line. line is only valid during the call;
// cut is how many bytes of the line were dropped beyond the cap.
func (s *lineSplitter) feed(p []byte, emit func(line []byte, cut int64)) {
	for i := 0; i < len(p); {
		if s.esc == escNone {
			// fast path: copy a run of ordinary bytes
			j := i
			for j < len(p) && !ctl[p[j]] {
				j++
			}
			if j > i {
				s.cr = false
				s.add(p[i:j])
				i = j
				continue
			}
		}
		c := p[i]
		i++
		if c == '\r' || c == '\n' {
			// a line end also ends any escape sequence it interrupts
			s.esc = escNone
			if c == '\n' {
				if s.cr {
					s.cr = false
					continue
				}
				s.end(emit)
				continue
			}
			if s.cr && len(s.buf) == 0 && s.cut == 0 {
				continue // "\r\r\n": one line end
			}
			s.end(emit)
			s.cr = true
			continue
		}
		s.cr = false
		switch s.esc {
		case escNone:
			if c == 0x1b {
				s.esc = escStart
			}
			// other controls (BEL, BS, NUL …) are dropped
		case escStart:
			switch {
			case c == '[':
				s.esc = escCSI
			case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
				s.esc, s.osc = escString, 0
			case c >= 0x20 && c <= 0x2f:
				s.esc = escInter
			case c == 0x1b:
				// ESC ESC: start again
			default:
				s.esc = escNone // two-byte sequence (ESC 7, ESC =, ESC c …) or junk
			}
		case escInter:
			if c < 0x20 || c > 0x2f {
				s.esc = escNone
			}
		case escCSI:
			if c >= 0x40 && c <= 0x7e {
				s.esc = escNone
			} else if c < 0x20 && c != 0x1b {
				s.esc = escNone // broken sequence
			} else if c == 0x1b {
				s.esc = escStart
			}
		case escString:
			s.osc++
			switch {
			case c == 0x07:
				s.esc = escNone
			case c == 0x1b:
				s.esc = escStrEsc
			case s.osc > maxEscString:
				s.esc = escNone
			}
		case escStrEsc:
			if c == '\\' {
				s.esc = escNone
			} else {
				s.esc = escString
			}
		}
	}
}

func (s *lineSplitter) add(b []byte) {
	room := s.max - len(s.buf)
	if room >= len(b) {
		s.buf = append(s.buf, b...)
		return
	}
	if room > 0 {
		s.buf = append(s.buf, b[:room]...)
	}
	s.cut += int64(len(b) - max(room, 0))
}

func (s *lineSplitter) end(emit func([]byte, int64)) {
	line, cut := s.buf, s.cut
	if cut > 0 {
		line = append(line, cutMarker(cut)...)
	}
	emit(line, cut)
	s.buf = s.buf[:0]
	if cap(s.buf) > 64<<10 {
		s.buf = nil // do not keep a huge buffer for ever
	}
	s.cut = 0
}

// flush emits a last line without a line end, if any.
func (s *lineSplitter) flush(emit func([]byte, int64)) {
	if len(s.buf) > 0 || s.cut > 0 {
		s.end(emit)
	}
	s.esc = escNone
}

func cutMarker(n int64) string {
	return " …[sparkbench: " + strconv.FormatInt(n, 10) + " more bytes of this line not kept]"
}
