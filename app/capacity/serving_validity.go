package capacity

import "slices"

// NoteValidity journals the per-sample validity checks of a serving plan's probes once the
// study is assembled (docs/serving.md, "Validity"): how many requests each check caught, so
// the notebook says in words what the figures excluded or flagged. Closed-loop plans have no
// such entry.
const NoteValidity = "capacity.validity"

// ValidityNote is the NoteValidity payload: one entry per probe, in lifetime then probe order.
type ValidityNote struct {
	Probes []ProbeValidity `json:"probes"`
}

// ProbeValidity is one probe's validity counts. Timing is present when the plan sets
// timing_tolerance; BehindSchedule when the probe failed client_behind_schedule.
type ProbeValidity struct {
	Lifetime       string               `json:"lifetime"` // PASS/CANDIDATE/pP
	Probe          int                  `json:"probe"`
	OfferedRate    float64              `json:"offered_rate"`
	Requests       int                  `json:"requests"`
	Completed      int                  `json:"completed"`
	Contaminated   int                  `json:"contaminated"`
	TokenMismatch  int                  `json:"token_mismatch"`
	Timing         *TimingDisagreements `json:"timing,omitempty"`
	BehindSchedule bool                 `json:"behind_schedule"`
	ClientBound    bool                 `json:"client_bound"`
	Failures       []string             `json:"failures"`
}

// Validity is the NoteValidity payload of an assembled result, or nil when no candidate has
// open-loop probes.
func Validity(r *Result) *ValidityNote {
	var out []ProbeValidity
	for _, c := range r.Candidates {
		for _, sv := range c.Serving {
			key := LifetimeKey{Pass: sv.Pass, Candidate: c.ID, Slots: sv.Slots}.String()
			for _, p := range sv.Probes {
				out = append(out, ProbeValidity{Lifetime: key, Probe: p.Probe, OfferedRate: p.OfferedRate, Requests: p.Requests,
					Completed: p.Completed, Contaminated: p.Contaminated, TokenMismatch: p.TokenMismatch, Timing: p.TimingDisagreements,
					BehindSchedule: slices.Contains(p.Failures, CodeBehindSchedule), ClientBound: p.ClientBound, Failures: p.Failures})
			}
		}
	}
	if out == nil {
		return nil
	}
	return &ValidityNote{Probes: out}
}
