// Package capout keeps a child process's output within a memory cap. A tool that floods its
// output (a debug build, a loop printing the same line) must not make sparkbench grow with
// it: a Buffer keeps the head and the tail of what was written, up to its cap, counts the
// rest and says where it was left out. Writes never fail, so the child never blocks on a
// full pipe.
package capout

import (
	"bytes"
	"fmt"
	"sync"
)

// Buffer keeps at most Cap bytes of what is written to it: the first quarter of the cap (the
// head: start-up, versions, loaded backends) and the last three quarters (the tail: the
// last lines, the failure message, a device list printed last). It is safe for concurrent
// writes (a child's stdout and stderr).
type Buffer struct {
	mu    sync.Mutex
	cap   int
	head  []byte
	tail  []byte // ring of the last tailCap bytes once the head is full
	pos   int    // next write in tail
	full  bool   // tail has wrapped
	total int64
}

// New returns a Buffer that keeps at most capBytes (at least 4).
func New(capBytes int) *Buffer {
	return &Buffer{cap: max(capBytes, 4)}
}

func (b *Buffer) headCap() int { return b.cap / 4 }
func (b *Buffer) tailCap() int { return b.cap - b.cap/4 }

// Write keeps what fits and drops the rest; it always reports len(p) written.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headCap() - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return n, nil
	}
	tc := b.tailCap()
	if b.tail == nil {
		b.tail = make([]byte, tc)
	}
	if len(p) >= tc {
		copy(b.tail, p[len(p)-tc:])
		b.pos, b.full = 0, true
		return n, nil
	}
	c := copy(b.tail[b.pos:], p)
	if c < len(p) {
		c2 := copy(b.tail, p[c:])
		b.pos, b.full = c2, true
	} else {
		b.pos += c
		if b.pos == tc {
			b.pos, b.full = 0, true
		}
	}
	return n, nil
}

// WriteString is Write for a string.
func (b *Buffer) WriteString(s string) (int, error) {
	// small strings (a line) are copied through a stack buffer
	var buf [512]byte
	n := len(s)
	for len(s) > 0 {
		k := copy(buf[:], s)
		b.Write(buf[:k])
		s = s[k:]
	}
	return n, nil
}

// Cap is the most bytes the Buffer keeps.
func (b *Buffer) Cap() int { return b.cap }

// Total is the number of bytes written.
func (b *Buffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Kept is the number of bytes held (at most Cap).
func (b *Buffer) Kept() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kept()
}

func (b *Buffer) kept() int {
	if b.full {
		return len(b.head) + len(b.tail)
	}
	return len(b.head) + b.pos
}

// Omitted is the number of bytes written but not kept.
func (b *Buffer) Omitted() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total - int64(b.kept())
}

// Marker is the line String puts where bytes were left out.
func Marker(omitted int64, capBytes int) string {
	return fmt.Sprintf("[sparkbench: %d bytes of output not kept (capture cap %d bytes)]", omitted, capBytes)
}

// String is the output as kept. When bytes were left out, the head is cut back to its last
// complete line and the tail starts at its first complete line, and a Marker line stands
// between them, so a line-based parser never reads half a line as a whole one.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var tail []byte
	if b.full {
		tail = append(append(make([]byte, 0, len(b.tail)), b.tail[b.pos:]...), b.tail[:b.pos]...)
	} else {
		tail = b.tail[:b.pos]
	}
	omitted := b.total - int64(len(b.head)+len(tail))
	if omitted == 0 {
		return string(b.head) + string(tail)
	}
	head := b.head
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		omitted += int64(len(head) - (i + 1))
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 {
		omitted += int64(i + 1)
		tail = tail[i+1:]
	}
	var s bytes.Buffer
	s.Grow(len(head) + len(tail) + 100)
	s.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		s.WriteByte('\n')
	}
	s.WriteString(Marker(omitted, b.cap))
	s.WriteByte('\n')
	s.Write(tail)
	return s.String()
}
