package bundle

import (
	"bytes"
	"path/filepath"
	"strings"
)

// Redactor writes the user's home folder as "~" in text. A home folder is replaced only where
// it is a whole path prefix: "/home/al" in "/home/al/x" or "/home/al" alone, never in
// "/home/alice".
type Redactor struct {
	homes [][]byte // longest first
	on    bool
	// Counts maps a bundle file to the replacements made in it.
	Counts map[string]int
}

// Replacement is what a home folder becomes.
const Replacement = "~"

// NewRedactor redacts home (and the folder it resolves to through symbolic links); off
// returns a redactor that changes nothing.
func NewRedactor(home string, on bool) *Redactor {
	r := &Redactor{on: on && home != "" && home != "/", Counts: map[string]int{}}
	if !r.on {
		return r
	}
	add := func(h string) {
		h = strings.TrimRight(filepath.Clean(h), "/")
		if h == "" || h == "." {
			return
		}
		for _, x := range r.homes {
			if string(x) == h {
				return
			}
		}
		r.homes = append(r.homes, []byte(h))
	}
	add(home)
	if real, err := filepath.EvalSymlinks(home); err == nil {
		add(real)
	}
	for i := range r.homes {
		for j := i + 1; j < len(r.homes); j++ {
			if len(r.homes[j]) > len(r.homes[i]) {
				r.homes[i], r.homes[j] = r.homes[j], r.homes[i]
			}
		}
	}
	return r
}

// On says whether the redactor changes anything.
func (r *Redactor) On() bool { return r.on }

func pathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c >= 0x80
}

// Bytes redacts b, counting the replacements under file.
func (r *Redactor) Bytes(file string, b []byte) []byte {
	if !r.on {
		return b
	}
	out := b
	n := 0
	for _, h := range r.homes {
		var buf []byte
		from := 0 // out[from:] is not copied yet
		changed := false
		for at := 0; ; {
			i := bytes.Index(out[at:], h)
			if i < 0 {
				break
			}
			i += at
			end := i + len(h)
			at = end
			if end < len(out) && pathByte(out[end]) || i > 0 && (pathByte(out[i-1]) || out[i-1] == '/') {
				continue
			}
			buf = append(append(buf, out[from:i]...), Replacement...)
			from = end
			n++
			changed = true
		}
		if changed {
			out = append(buf, out[from:]...)
		}
	}
	if n > 0 {
		r.Counts[file] += n
	}
	return out
}

// String redacts s.
func (r *Redactor) String(file, s string) string { return string(r.Bytes(file, []byte(s))) }
