package server

import (
	"sparkbench/runner/devlog"
	"sparkbench/runner/vocab"
)

// evidenceScanner is runner/devlog's scanner with the candidate's markers: it builds Evidence
// line by line, keeping nothing but the current block's findings (a new load block starts
// them over) and the devices the log announced.
type evidenceScanner struct {
	s *devlog.Scanner
}

func newEvidenceScanner(m Markers) (*evidenceScanner, error) {
	rules, err := vocab.CompileMarkers(m.Must, m.MustNot)
	if err != nil {
		return nil, err
	}
	return &evidenceScanner{s: devlog.NewScanner(rules)}, nil
}

// observe feeds log line n (1-based, ANSI and CR removed).
func (s *evidenceScanner) observe(n int, line string) { s.s.Line(n, line) }

// evidence is a copy of what was found so far.
func (s *evidenceScanner) evidence() Evidence { return s.s.Evidence() }

// ScanEvidence reads the evidence of a whole log (lines split on \n; trailing \r and ANSI
// colour sequences removed).
func ScanEvidence(log []byte, m Markers) (Evidence, error) {
	rules, err := vocab.CompileMarkers(m.Must, m.MustNot)
	if err != nil {
		return Evidence{}, err
	}
	return devlog.ScanText(log, rules).Evidence, nil
}
