package server

import (
	"regexp"
	"sparkbench/runner/vocab"
	"strconv"
)

var (
	loadStartRE = regexp.MustCompile(`llama_model_loader: loaded meta data with`)
	layerRE     = regexp.MustCompile(`load_tensors: layer\s+(\d+) assigned to device ([^\s,]+)`)
	bufferREs   = []struct {
		kind string
		re   *regexp.Regexp
	}{
		{BufferModel, regexp.MustCompile(`load_tensors:\s+(\S+) model buffer size =\s*([0-9.]+) MiB`)},
		{BufferKV, regexp.MustCompile(`llama_kv_cache:\s+(\S+) KV buffer size =\s*([0-9.]+) MiB`)},
		{BufferCompute, regexp.MustCompile(`sched_reserve:\s+(\S+) compute buffer size =\s*([0-9.]+) MiB`)},
		{BufferOutput, regexp.MustCompile(`llama_context:\s+(\S+)\s+output buffer size =\s*([0-9.]+) MiB`)},
	}
)

// evidenceScanner builds Evidence line by line, keeping nothing but the current block's
// findings (a new load block starts them over).
type evidenceScanner struct {
	markers []vocab.MarkerRule
	ev      Evidence
}

func newEvidenceScanner(m Markers) (*evidenceScanner, error) {
	s := &evidenceScanner{}
	var err error
	if s.markers, err = vocab.CompileMarkers(m.Must, m.MustNot); err != nil {
		return nil, err
	}
	s.reset(0)
	return s, nil
}

func (s *evidenceScanner) reset(line int) {
	s.ev.BlockLine = line
	s.ev.Omitted = 0
	s.ev.Layers = []LayerDevice{}
	s.ev.Buffers = []Buffer{}
	s.ev.Markers = make([]MarkerCheck, len(s.markers))
	for i, m := range s.markers {
		s.ev.Markers[i] = MarkerCheck{Rule: m.Rule, Regex: m.Regex, Ok: m.Rule == "must_not"}
	}
}

// observe feeds log line n (1-based, ANSI and CR removed).
func (s *evidenceScanner) observe(n int, line string) {
	if loadStartRE.MatchString(line) {
		s.ev.Loads++
		s.reset(n)
	}
	if s.ev.BlockLine == 0 {
		return // markers and buffers only count inside a load block
	}
	for i, m := range s.markers {
		c := &s.ev.Markers[i]
		if !c.Found && m.Re.MatchString(line) {
			c.Found, c.Line = true, n
			c.Ok = m.Rule == "must"
		}
	}
	if m := layerRE.FindStringSubmatch(line); m != nil {
		if len(s.ev.Layers) >= MaxEvidenceEntries {
			s.ev.Omitted++
			return
		}
		l, _ := strconv.Atoi(m[1])
		s.ev.Layers = append(s.ev.Layers, LayerDevice{Layer: l, Device: m[2]})
		return
	}
	for _, b := range bufferREs {
		if m := b.re.FindStringSubmatch(line); m != nil {
			if len(s.ev.Buffers) >= MaxEvidenceEntries {
				s.ev.Omitted++
				return
			}
			mib, _ := strconv.ParseFloat(m[2], 64)
			s.ev.Buffers = append(s.ev.Buffers, Buffer{Kind: b.kind, Device: m[1], MiB: mib, Line: n})
			return
		}
	}
}

// evidence is a copy of what was found so far.
func (s *evidenceScanner) evidence() Evidence {
	e := s.ev
	e.Layers = append([]LayerDevice{}, e.Layers...)
	e.Buffers = append([]Buffer{}, e.Buffers...)
	e.Markers = append([]MarkerCheck{}, e.Markers...)
	return e
}

// ScanEvidence reads the evidence of a whole log (lines split on \n; trailing \r and ANSI
// colour sequences removed).
func ScanEvidence(log []byte, m Markers) (Evidence, error) {
	s, err := newEvidenceScanner(m)
	if err != nil {
		return Evidence{}, err
	}
	n := 0
	for start := 0; start < len(log); {
		end := start
		for end < len(log) && log[end] != '\n' {
			end++
		}
		n++
		s.observe(n, cleanLine(log[start:end]))
		start = end + 1
	}
	return s.evidence(), nil
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

func cleanLine(b []byte) string {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return ansiRE.ReplaceAllString(string(b), "")
}
