package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"sparkbench/store"
)

// Fleet is a fleet run as the notebook records it: the member studies that carry its
// study.fleet entry (NoteKind), in the order of the hosts the run listed.
type Fleet struct {
	ID      string   `json:"id"` // the fleet's name and start time, as fleet run printed it
	Hosts   []string `json:"hosts"`
	PlanSHA string   `json:"base_plan_sha256"` // the plan file's SHA-256, as written
	Members []Member `json:"members"`
}

type fleetNote struct {
	Fleet string   `json:"fleet"`
	Host  string   `json:"host"`
	Hosts []string `json:"hosts"`
	Base  string   `json:"base_plan_sha256"`
	// BandwidthFrom: "host" (the host's bandwidth label) or "plan" (a remote member kept the
	// plan's entered figure); absent otherwise.
	BandwidthFrom string `json:"bandwidth_from,omitempty"`
}

// List reads every fleet of the notebook from its members' study.fleet entries, oldest fleet
// first; each member has its study's status now.
func List(ctx context.Context, nb *store.Notebook) ([]Fleet, error) {
	sts, err := nb.Studies(ctx)
	if err != nil {
		return nil, err
	}
	byStudy := map[int64]store.StudySummary{}
	for _, st := range sts {
		byStudy[st.ID] = st
	}
	entries, err := nb.JournalOfKind(ctx, NoteKind) // one query, not every study's journal
	if err != nil {
		return nil, err
	}
	byID := map[string]*Fleet{}
	var order []string
	member := map[int64]bool{}
	for _, e := range entries {
		st, ok := byStudy[e.StudyID]
		if !ok || st.Kind != store.StudyThroughput || member[st.ID] {
			continue // a study's first study.fleet entry makes it a member
		}
		var n fleetNote
		if err := json.Unmarshal(e.Payload, &n); err != nil || n.Fleet == "" {
			return nil, fmt.Errorf("study %d: its %s entry (seq %d) does not read as a fleet member: %v", st.ID, NoteKind, e.Seq, err)
		}
		member[st.ID] = true
		f := byID[n.Fleet]
		if f == nil {
			f = &Fleet{ID: n.Fleet, Hosts: n.Hosts, PlanSHA: n.Base}
			byID[n.Fleet] = f
			order = append(order, n.Fleet)
		}
		f.Members = append(f.Members, Member{Host: n.Host, StudyID: st.ID, Status: st.Status, BandwidthFrom: n.BandwidthFrom})
	}
	out := make([]Fleet, 0, len(order))
	for _, id := range order {
		f := byID[id]
		rank := map[string]int{}
		for i, h := range f.Hosts {
			rank[h] = i
		}
		sort.SliceStable(f.Members, func(i, j int) bool { return rank[f.Members[i].Host] < rank[f.Members[j].Host] })
		out = append(out, *f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Members[0].StudyID < out[j].Members[0].StudyID })
	return out, nil
}

// Find is the fleet named ref: its ID as fleet list prints it, or its name alone (the
// latest fleet of that name).
func Find(ctx context.Context, nb *store.Notebook, ref string) (Fleet, error) {
	all, err := List(ctx, nb)
	if err != nil {
		return Fleet{}, err
	}
	var named []Fleet
	for _, f := range all {
		if f.ID == ref {
			return f, nil
		}
		if name, _, ok := cutLast(f.ID, " "); ok && name == ref {
			named = append(named, f)
		}
	}
	if len(named) > 0 {
		return named[len(named)-1], nil
	}
	if len(all) == 0 {
		return Fleet{}, fmt.Errorf("no fleet %q: the notebook holds no fleet run (run one with: sparkbench fleet run FLEET, or study run PLAN --on HOST,…)", ref)
	}
	ids := make([]string, len(all))
	for i, f := range all {
		ids[i] = fmt.Sprintf("%q", f.ID)
	}
	return Fleet{}, fmt.Errorf("no fleet %q in the notebook; its fleets: %s (sparkbench fleet list)", ref, strings.Join(ids, ", "))
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// Complete are the members whose study is complete, in host order.
func (f Fleet) Complete() []Member {
	var out []Member
	for _, m := range f.Members {
		if m.Status == "complete" {
			out = append(out, m)
		}
	}
	return out
}
