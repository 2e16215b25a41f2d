package runner

import "time"

// legTally is what the llama-bench and llama-batched-bench leg handlers keep alike: the
// fingerprint taken before the process started (and its fingerprinter, which compares it
// after), the rows beyond the cap, and the malformed result lines.
type legTally struct {
	fper       *Fingerprinter
	fp         *Fingerprint
	extraRows  int
	malformed  []Malformed
	nMalformed int
}

// badLine counts a line that looked like a result and did not parse; the first
// DefaultMaxMalformed are kept and emitted.
func (t *legTally) badLine(p *Proc, n int, text string, err error, at time.Duration) {
	t.nMalformed++
	if len(t.malformed) < DefaultMaxMalformed {
		m := malformedLine(n, text, err)
		t.malformed = append(t.malformed, m)
		p.emit(Event{Type: EventMalformed, T: at, Malformed: &m})
	}
}

// classify fills what the crash classifier reads of a bench leg: rows seen, rows expected and
// malformed lines.
func (t *legTally) classify(in *ClassifyInput, rows, expected int) {
	in.Bench, in.Rows, in.Expected, in.Malformed = true, rows, expected, t.nMalformed
}

// exit fills the same counts into the leg's exit and fingerprints the machine again.
func (t *legTally) exit(x *Exit, rows, expected int) {
	x.Rows, x.Expected, x.Malformed = rows, expected, t.nMalformed
	if t.fp != nil && t.fper != nil { // nil for a leg run elsewhere (WithVia)
		t.fper.After(t.fp)
	}
}
