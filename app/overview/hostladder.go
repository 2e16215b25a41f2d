package overview

import (
	"context"
	"sort"
)

// Pending is a ladder series whose group (architecture, quant, backend) is known, its model's
// header having been read, but which has no efficiency: the study has no bandwidth figure, or
// the ceiling cannot be computed. A fleet receipt says so in that group's cell of the host
// instead of leaving the cell out (docs/fleet.md).
type Pending struct {
	Architecture string `json:"architecture"`
	Quant        string `json:"quant"`
	Backend      string `json:"backend"`
	Model        string `json:"model"`
	Test         string `json:"test"`
	Study        int64  `json:"study"`
	Reason       string `json:"reason"`
}

// LadderOf is the constants ladder of every study the Service's Source lists, read from the
// rows (never from a stored summary), and the series of it that have a group but no
// efficiency. A Source without a result of test gives an empty ladder, not an error.
func (s *Service) LadderOf(ctx context.Context, test string) (Ladder, []Pending, error) {
	if test == "" {
		test = DefaultTest
	}
	_, all, err := s.collect(ctx, test, true)
	if err != nil {
		return Ladder{}, nil, err
	}
	headers := s.headers(all)
	l := BuildLadder(all, test, headers)
	chosen, _, _ := pick(all)
	pending := []Pending{}
	for _, sr := range chosen {
		h := headers[sr.SHA256]
		if h.file == nil {
			continue // no group: it stays in l.Unresolved only
		}
		if _, _, why := member(sr, h); why != "" {
			arch := h.file.Architecture
			if arch == "" {
				arch = "unknown"
			}
			pending = append(pending, Pending{Architecture: arch, Quant: quantOf(h.file), Backend: sr.Backend,
				Model: sr.Model, Test: sr.Test, Study: sr.ID, Reason: why})
		}
	}
	sort.SliceStable(pending, func(i, j int) bool {
		a, b := pending[i], pending[j]
		return Group{a.Architecture, a.Quant, a.Backend}.Compare(Group{b.Architecture, b.Quant, b.Backend}) < 0
	})
	return l, pending, nil
}
