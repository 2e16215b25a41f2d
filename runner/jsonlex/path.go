package jsonlex

import (
	"encoding/json"
	"strconv"
	"strings"
)

// PathOffset is the byte offset where the value at path begins in data: path is the form plan
// problems name a field by ("name", "models[0].path": object members by key, array elements
// by [N]). ok is false when data holds no such value (a field left out and defaulted, or data
// that is not JSON up to it). Keys match as encoding/json matches them to struct fields:
// exactly, else regardless of case.
func PathOffset(data []byte, path string) (off int64, ok bool) {
	l := &Lexer{Data: data}
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" && !l.member(key) {
			return 0, false
		}
		for rest != "" {
			n, after, found := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !found || err != nil || i < 0 || !l.element(i) {
				return 0, false
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	l.SkipSpace()
	return int64(l.Pos), l.Pos < len(data)
}

// member moves into the object at Pos to the value of its member key.
func (l *Lexer) member(key string) bool {
	const maxDepth = 512
	l.SkipSpace()
	if !l.Consume('{') {
		return false
	}
	at := -1
	start := l.Pos
	for pass := 0; pass < 2 && at < 0; pass++ { // exact match first, then regardless of case
		l.Pos = start
		for {
			l.SkipSpace()
			content, flags, ok := l.ScanString()
			if !ok {
				break
			}
			name := string(content)
			if !Plain(content, flags) {
				_ = json.Unmarshal([]byte(`"`+name+`"`), &name)
			}
			l.SkipSpace()
			if !l.Consume(':') {
				return false
			}
			l.SkipSpace()
			if name == key || pass == 1 && strings.EqualFold(name, key) {
				at = l.Pos
				break
			}
			if !l.SkipValue(maxDepth) {
				return false
			}
			l.SkipSpace()
			if !l.Consume(',') {
				break
			}
		}
	}
	l.Pos = max(at, 0)
	return at >= 0
}

// element moves into the array at Pos to its element i.
func (l *Lexer) element(i int) bool {
	const maxDepth = 512
	l.SkipSpace()
	if !l.Consume('[') {
		return false
	}
	for ; i > 0; i-- {
		l.SkipSpace()
		if !l.SkipValue(maxDepth) {
			return false
		}
		l.SkipSpace()
		if !l.Consume(',') {
			return false
		}
	}
	l.SkipSpace()
	return l.Peek() != ']' && l.Peek() != 0
}
