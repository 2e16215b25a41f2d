package vocab

// Default CV gate limits (stddev / mean of t/s over a row's repetitions): what the runner
// applies where a plan leaves a limit at zero, and what a report re-deriving its flags reads.
const (
	DefaultCVTG      = 0.05 // tg (and pg) at any depth
	DefaultCVPPDepth = 0.10 // pp at depth > 0
	DefaultCVPP      = 0.05 // pp at depth 0
)
