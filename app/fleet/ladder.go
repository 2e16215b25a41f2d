package fleet

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/overview"
	"sparkbench/app/workbench"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

// memberSource is the notebook as the overview reads it, holding one study only: the ladder
// of one host is the ladder of its member study (the overview's own ladder keeps one series per
// model file, test, backend and configuration across studies, so the hosts would be merged).
type memberSource struct {
	overview.Source
	id int64
}

func (s memberSource) ThroughputStudies(ctx context.Context) ([]overview.StudyRef, error) {
	refs, err := s.Source.ThroughputStudies(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		if r.ID == s.id {
			return []overview.StudyRef{r}, nil
		}
	}
	return nil, nil
}

type ladderKey = overview.Group

// LadderByHost is the constants ladder by host of the members (`fleet show --json`; the fleet
// receipt's ladder of its complete members).
func LadderByHost(ctx context.Context, nb *store.Notebook, ms []Member) (workbench.FleetLadder, error) {
	return ladderOf(ctx, nb, ms)
}

// ladderOf is the constants ladder by host: for each group (architecture, quant, backend) that
// any compared host has, each host's constant from its own study's rows, or why it has none
// there (no bandwidth figure, not measured on that host).
func ladderOf(ctx context.Context, nb *store.Notebook, ms []Member) (workbench.FleetLadder, error) {
	out := workbench.FleetLadder{Test: overview.DefaultTest, Convention: overview.Convention, Rows: []workbench.FleetLadderRow{}, Unresolved: []workbench.FleetUnresolved{}}
	type hostLadder struct {
		constants map[ladderKey]overview.Constant
		pending   map[ladderKey][]string
	}
	per := make([]hostLadder, len(ms))
	keys := map[ladderKey]bool{}
	for i, m := range ms {
		svc := overview.New(memberSource{Source: overview.Notebook(nb), id: m.StudyID})
		l, pending, err := svc.LadderOf(ctx, overview.DefaultTest)
		if err != nil {
			return out, fmt.Errorf("%s (study %d): constants ladder: %w", m.Host, m.StudyID, err)
		}
		per[i] = hostLadder{constants: map[ladderKey]overview.Constant{}, pending: map[ladderKey][]string{}}
		for _, c := range l.Constants {
			k := ladderKey{Architecture: c.Architecture, Quant: c.Quant, Backend: c.Backend}
			per[i].constants[k], keys[k] = c, true
		}
		for _, p := range pending {
			k := ladderKey{Architecture: p.Architecture, Quant: p.Quant, Backend: p.Backend}
			why := p.Reason
			if strings.Contains(why, "no memory bandwidth") {
				why = fmt.Sprintf("no bandwidth figure (study %d: enter bandwidth.gbs in its plan)", p.Study)
				if m.Host != remote.Local {
					why = fmt.Sprintf("no bandwidth figure (study %d: give host %s a %s label, then run the fleet again)", p.Study, m.Host, remote.BandwidthLabel)
				}
			}
			if !contains(per[i].pending[k], why) {
				per[i].pending[k] = append(per[i].pending[k], why)
			}
			keys[k] = true
		}
		for _, u := range l.Unresolved {
			if !isPending(pending, u) {
				out.Unresolved = append(out.Unresolved, workbench.FleetUnresolved{Host: m.Host, Unresolved: u})
			}
		}
	}
	sorted := make([]ladderKey, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Compare(sorted[j]) < 0
	})
	for _, k := range sorted {
		row := workbench.FleetLadderRow{Architecture: k.Architecture, Quant: k.Quant, Backend: k.Backend}
		for i, m := range ms {
			fc := workbench.FleetConstant{Host: m.Host}
			if c, ok := per[i].constants[k]; ok {
				fc.Constant = &c
			} else if why := per[i].pending[k]; len(why) > 0 {
				fc.Missing = strings.Join(why, "; ")
			} else {
				fc.Missing = "not measured on this host"
			}
			row.Hosts = append(row.Hosts, fc)
		}
		out.Rows = append(out.Rows, row)
	}
	return out, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// isPending says whether an unresolved series is one of the pending ones (shown in its
// group's cell instead).
func isPending(ps []overview.Pending, u overview.Unresolved) bool {
	for _, p := range ps {
		if p.Study == u.Study && p.Model == u.Model && p.Test == u.Test && p.Reason == u.Reason {
			return true
		}
	}
	return false
}
