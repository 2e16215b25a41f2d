package capacity

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/vocab"
)

// SchemaRSS identifies the project's own peak-RSS record: {"schema": …, "vmhwm_kib": N}, the
// VmHWM line of /proc/PID/status read just before the server exits (docs/capacity.md).
const SchemaRSS = "sparkbench.rss/v1"

// RSSRecord is the project's peak-RSS record of one server lifetime.
type RSSRecord struct {
	Schema   string `json:"schema,omitempty"` // optional; when present SchemaRSS
	VmHWMKiB int64  `json:"vmhwm_kib"`        // peak resident set size in KiB
	Source   string `json:"source,omitempty"` // free text, e.g. "/proc/1234/status"
}

// RSS formats.
const (
	RSSFormatGNUTime = "gnu_time_v"
	RSSFormatRecord  = "vmhwm_record"
)

var gnuTimeRSS = regexp.MustCompile(`^\s*Maximum resident set size \(kbytes\):\s*(\S+)\s*$`)

// ReadRSS reads a server lifetime's peak RSS in KiB from GNU `time -v` output (its "Maximum
// resident set size (kbytes): N" line; kbytes there are KiB) or from an RSSRecord (a file whose
// first non-space byte is '{').
func ReadRSS(name string, data []byte) (kib int64, format string, err error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return 0, "", &LineError{name, 1, "empty file; want GNU `time -v` output or {\"vmhwm_kib\": N} (see docs/capacity.md)"}
	}
	if trimmed[0] == '{' {
		var r RSSRecord
		if err := study.DecodeFileStrict(name, data, &r, "an RSS record is one JSON object", "docs/capacity.md"); err != nil {
			return 0, "", err
		}
		switch {
		case r.Schema != "" && r.Schema != SchemaRSS:
			return 0, "", &LineError{name, 1, fmt.Sprintf("schema %q: want %q (or leave it out)", r.Schema, SchemaRSS)}
		case r.VmHWMKiB <= 0:
			return 0, "", &LineError{name, 1, fmt.Sprintf("vmhwm_kib %d: want the peak resident set size in KiB (> 0)", r.VmHWMKiB)}
		}
		return r.VmHWMKiB, RSSFormatRecord, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n, found := 0, 0
	for sc.Scan() {
		n++
		m := gnuTimeRSS.FindStringSubmatch(strings.TrimRight(sc.Text(), "\r"))
		if m == nil {
			continue
		}
		v, perr := strconv.ParseInt(m[1], 10, 64)
		if perr != nil || v <= 0 {
			return 0, "", &LineError{name, n, fmt.Sprintf("maximum resident set size %q: want a positive whole number of kbytes", m[1])}
		}
		kib, found = v, n
	}
	if found == 0 {
		return 0, "", &LineError{name, 1, "no \"Maximum resident set size (kbytes): N\" line; want the stderr of GNU `/usr/bin/time -v` (not the shell's time builtin) or {\"vmhwm_kib\": N}"}
	}
	return kib, RSSFormatGNUTime, nil
}

// loadStartRE marks the start of a model load: llama.cpp reads the GGUF metadata first every
// time it loads a model. llama-server loads twice by default (a dry fitting pass, then the
// real load), so the last match starts the load that serves requests.
var loadStartRE = regexp.MustCompile(`llama_model_loader: loaded meta data with`)

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// LoadBlock is the last model-load block of a server log: from the last line matching
// "llama_model_loader: loaded meta data with" to the end of the log.
type LoadBlock struct {
	StartLine int // 1-based line of the block's first line in the file; 0 when none was found
	Loads     int // how many load blocks the log holds (2 with llama-server's default fitting pass)
	lines     []string
}

// LastLoadBlock finds the last load block of a server log. Lines are split on \n with a
// trailing \r and ANSI colour sequences removed (a log captured under a pty has both).
func LastLoadBlock(log []byte) LoadBlock {
	var all []string
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		all = append(all, ansiRE.ReplaceAllString(strings.TrimRight(sc.Text(), "\r"), ""))
	}
	var b LoadBlock
	for i, l := range all {
		if loadStartRE.MatchString(l) {
			b.Loads++
			b.StartLine = i + 1
		}
	}
	if b.StartLine > 0 {
		b.lines = all[b.StartLine-1:]
	}
	return b
}

// MarkerCheck is one marker regex checked against a load block.
type MarkerCheck struct {
	Rule  string `json:"rule"` // "must" or "must_not"
	Regex string `json:"regex"`
	Found bool   `json:"found"`
	Line  int    `json:"line,omitempty"` // 1-based file line of the first match in the block
	Ok    bool   `json:"ok"`
}

// CheckMarkers matches a candidate's markers line by line against the last load block of its
// server log. A log without any load block is refused when the candidate has markers: the
// server ran below info log level and the gate cannot see the load.
func CheckMarkers(name string, log []byte, m Markers) (LoadBlock, []MarkerCheck, error) {
	b := LastLoadBlock(log)
	if len(m.Must)+len(m.MustNot) == 0 {
		return b, []MarkerCheck{}, nil
	}
	if b.StartLine == 0 {
		return b, nil, &LineError{name, 1, "no model-load block (no \"llama_model_loader: loaded meta data\" line): the marker gate cannot see the load; run llama-server with -lv 4 (info) or -v"}
	}
	rules, err := vocab.CompileMarkers(m.Must, m.MustNot)
	if err != nil {
		return b, nil, err
	}
	out := []MarkerCheck{}
	for _, r := range rules {
		c := MarkerCheck{Rule: r.Rule, Regex: r.Regex}
		for i, l := range b.lines {
			if r.Re.MatchString(l) {
				c.Found, c.Line = true, b.StartLine+i
				break
			}
		}
		c.Ok = c.Found == (r.Rule == "must")
		out = append(out, c)
	}
	return b, out, nil
}

// SchemaQuality identifies quality evidence: one guard run of one (candidate, P).
const SchemaQuality = vocab.SchemaQualityEvidence

// QualityEvidence is the outcome of the quality guard's fixed case list on a fresh server of
// one candidate at one slot count.
type QualityEvidence struct {
	Schema    string        `json:"schema"`
	Candidate string        `json:"candidate"`
	Slots     int           `json:"slots"`
	Cases     []QualityCase `json:"cases"`
}

// QualityCase is one guard case's outcome.
type QualityCase struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"`           // "pass" or "fail"
	Matcher string `json:"matcher,omitempty"` // exact, contains, regex, numeric_within (informative)
	Detail  string `json:"detail,omitempty"`  // e.g. what the model answered
}

// ReadQuality parses quality evidence strictly.
func ReadQuality(name string, data []byte) (*QualityEvidence, error) {
	var q QualityEvidence
	if err := study.DecodeFileStrict(name, data, &q, "quality evidence is one JSON object", "docs/capacity.md"); err != nil {
		return nil, err
	}
	bad := func(msg string, a ...any) error { return &LineError{name, 1, fmt.Sprintf(msg, a...)} }
	switch {
	case q.Schema != SchemaQuality:
		return nil, bad("schema %q: want %q", q.Schema, SchemaQuality)
	case !idRE.MatchString(q.Candidate):
		return nil, bad("candidate %q: want a candidate ID of the plan", q.Candidate)
	case q.Slots < 1:
		return nil, bad("slots %d: want the guard server's --parallel (>= 1)", q.Slots)
	case len(q.Cases) == 0:
		return nil, bad("no cases; the guard's score needs its fixed case list")
	}
	seen := map[string]int{}
	for i, c := range q.Cases {
		if strings.TrimSpace(c.ID) == "" {
			return nil, bad("cases[%d].id is empty", i)
		}
		if j, dup := seen[c.ID]; dup {
			return nil, bad("cases[%d].id %q repeats cases[%d]", i, c.ID, j)
		}
		seen[c.ID] = i
		if c.Outcome != "pass" && c.Outcome != "fail" {
			return nil, bad("cases[%d].outcome %q: want \"pass\" or \"fail\"", i, c.Outcome)
		}
	}
	return &q, nil
}

// Score is the number of passed cases.
func (q *QualityEvidence) Score() int {
	k := 0
	for _, c := range q.Cases {
		if c.Outcome == "pass" {
			k++
		}
	}
	return k
}

// outcomes maps case ID to outcome.
func (q *QualityEvidence) outcomes() map[string]string {
	m := make(map[string]string, len(q.Cases))
	for _, c := range q.Cases {
		m[c.ID] = c.Outcome
	}
	return m
}
