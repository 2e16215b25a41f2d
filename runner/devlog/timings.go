package devlog

import (
	"encoding/json"
	"strings"

	"sparkbench/runner/vocab"
)

// Generation timings: the print_timings / llama_perf / INFO and JSON log lines of every
// generation, and a response's "timings" object, possibly spread over lines.

func (s *Scanner) timingLine(n int, line string) {
	if !strings.Contains(line, " time") {
		return
	}
	if m := promptRE.FindStringSubmatch(line); m != nil {
		ms, tok, tps := num(m[2]), count(m[3]), num(m[4])
		task := taskOf(line)
		cur := s.openFor(task)
		if m[1] == "prompt eval" {
			s.closeTiming(cur)
			cur = s.openTiming(n, line, task)
			cur.PromptMS, cur.PromptTokens, cur.PromptTPS = ms, tok, tps
			return
		}
		if cur == nil || cur.GenMS != 0 || cur.GenTokens != 0 || cur.TotalMS != 0 {
			s.closeTiming(cur)
			cur = s.openTiming(n, line, task)
		}
		cur.GenMS, cur.GenTokens, cur.GenTPS = ms, tok, tps
		return
	}
	if m := totalRE.FindStringSubmatch(line); m != nil {
		task := taskOf(line)
		cur := s.openFor(task)
		if cur == nil {
			cur = s.openTiming(n, line, task)
		}
		cur.TotalMS, cur.TotalTokens = num(m[1]), count(m[2])
		s.closeTiming(cur)
	}
}

// maxOpen bounds the generations being read at once (one per task whose lines interleave).
const maxOpen = 64

// openFor is the generation being read for a task ("" for lines without one).
func (s *Scanner) openFor(task string) *Timing {
	for _, t := range s.open {
		if t.Task == task {
			return t
		}
	}
	return nil
}

func taskOf(line string) string {
	if m := taskRE.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

func sourceOf(line string) string {
	switch {
	case strings.Contains(line, "print_timing:"):
		return "print_timing"
	case strings.Contains(line, "llama_perf_context_print"):
		return "llama_perf"
	case strings.Contains(line, "llama_print_timings"):
		return "llama_print_timings"
	case strings.Contains(line, `"function":"print_timings"`):
		return "json_log"
	case strings.Contains(line, "print_timings]"):
		return "info_log"
	}
	return "plain"
}

func (s *Scanner) openTiming(n int, line, task string) *Timing {
	if len(s.open) >= maxOpen {
		s.closeTiming(s.open[0])
	}
	t := &Timing{Source: sourceOf(line), Line: n, Task: task}
	s.open = append(s.open, t)
	return t
}

// closeTiming ends a generation being read (nil: none).
func (s *Scanner) closeTiming(t *Timing) {
	for i, o := range s.open {
		if o == t {
			s.open = append(s.open[:i], s.open[i+1:]...)
			s.addTiming(*t)
			return
		}
	}
}

func (s *Scanner) addTiming(t Timing) {
	if len(s.timings) >= vocab.MaxEvidenceEntries {
		s.timOmitted++
		return
	}
	s.timings = append(s.timings, t)
}

// objectLine reads a response's "timings" object, on one line or over several.
func (s *Scanner) objectLine(n int, line string) {
	if s.obj == nil {
		if !strings.Contains(line, `"timings"`) {
			return
		}
		loc := timingsKeyRE.FindStringIndex(line)
		if loc == nil {
			return
		}
		s.obj, s.objLine, s.objLines = []byte{}, n, 0
		line = line[loc[1]-1:]
	}
	s.objLines++
	s.obj = append(s.obj, line...)
	s.obj = append(s.obj, '\n')
	if end := objectEnd(s.obj); end > 0 {
		s.decodeTimings(s.obj[:end])
		s.obj = nil
		return
	}
	if s.objLines >= maxObjectLines || len(s.obj) > maxObjectBytes {
		s.obj = nil
	}
}

// objectEnd is the length of the JSON object starting b, or 0 when it does not end in b.
func objectEnd(b []byte) int {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}

func (s *Scanner) decodeTimings(obj []byte) {
	var t struct {
		CacheN             int     `json:"cache_n"`
		PromptN            int     `json:"prompt_n"`
		PromptMS           float64 `json:"prompt_ms"`
		PromptPerSecond    float64 `json:"prompt_per_second"`
		PredictedN         int     `json:"predicted_n"`
		PredictedMS        float64 `json:"predicted_ms"`
		PredictedPerSecond float64 `json:"predicted_per_second"`
	}
	if json.Unmarshal(obj, &t) != nil {
		return
	}
	s.addTiming(Timing{Source: "timings_json", Line: s.objLine, CacheTokens: t.CacheN,
		PromptTokens: t.PromptN, PromptMS: t.PromptMS, PromptTPS: t.PromptPerSecond,
		GenTokens: t.PredictedN, GenMS: t.PredictedMS, GenTPS: t.PredictedPerSecond})
}
