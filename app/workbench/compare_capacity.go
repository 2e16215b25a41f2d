package workbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/app/capacity"
	"sparkbench/app/kinds"
	"sparkbench/store"
)

// A comparison of two or more capacity (or concurrency) studies: the cells they share, keyed
// by candidate × slots × clients, each study's cell generation rate, and each study's
// per-request TTFT, E2E and per-stream rate against the first study's (the baseline) with the
// statistics the throughput comparison uses (analysis.CompareMedians: medians, Hodges–Lehmann
// interval of the difference, Mann–Whitney U, ~ when not significant); shared predictions'
// verdicts side by side.

// CapacityComparisonSchema names a capacity comparison's JSON.
const CapacityComparisonSchema = "sparkbench.capacity-comparison/v1"

// Candidate matching: by candidate ID when every study ran the same plan, else by model
// SHA-256 and server flags.
const (
	MatchByCandidateID = "candidate id (every study ran the same plan)"
	MatchByModelFlags  = "model sha256 + server flags (the plans differ)"
)

// CapacityCompareRequest names the studies (the first is the baseline) and the significance
// level (0: 0.05).
type CapacityCompareRequest struct {
	IDs   []int64
	Alpha float64
}

// CapacityComparedStudy is one compared study's header.
type CapacityComparedStudy struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	PlanSHA256 string `json:"plan_sha256"`
}

// CapacityComparison is the comparison of Studies[1:] with Studies[0].
type CapacityComparison struct {
	Schema    string                   `json:"schema"`
	Studies   []CapacityComparedStudy  `json:"studies"`
	MatchedBy string                   `json:"matched_by"`
	Alpha     float64                  `json:"alpha"`
	Cells     []CapacityCellComparison `json:"cells"`
	Verdicts  []SharedVerdict          `json:"verdicts"`
	// RequestsPooled marks a comparison made since the per-request tests were labelled as
	// pooled across passes (issue 31): its footer says so. Absent in one made before, whose
	// receipt is re-made as it was.
	RequestsPooled bool `json:"requests_pooled,omitempty"`
}

// CapacityCellComparison is one shared cell. Candidates are each study's candidate ID and
// GenerationRate each study's cell generation rate (tok/s, median over passes), in Studies
// order; Pairs compare Studies[i] (i ≥ 1) with the baseline over the cell's per-request records.
type CapacityCellComparison struct {
	Candidate      string     `json:"candidate"`
	Candidates     []string   `json:"candidates"`
	Slots          int        `json:"slots"`
	Clients        int        `json:"clients"`
	GenerationRate []*float64 `json:"generation_rate"`
	// PerStreamRate, TTFTMsP95 and E2EMsP95 are each study's cell figures (the charts').
	PerStreamRate []*float64         `json:"per_stream_rate"`
	TTFTMsP95     []*float64         `json:"ttft_ms_p95"`
	E2EMsP95      []*float64         `json:"e2e_ms_p95"`
	Pairs         []CapacityCellPair `json:"pairs"`
}

// CapacityCellPair is one study's per-request figures against the baseline's.
type CapacityCellPair struct {
	Study     int64                     `json:"study"`
	TTFTMs    analysis.MedianComparison `json:"ttft_ms"`
	E2EMs     analysis.MedianComparison `json:"e2e_ms"`
	PerStream analysis.MedianComparison `json:"per_stream_rate"`
}

// capCell keys a cell of one study.
type capCell struct {
	cand           string
	slots, clients int
}

// capSamples are a cell's completed measured requests, every pass pooled.
type capSamples struct{ ttft, e2e, perStream []float64 }

// capStudy is one study read for comparison.
type capStudy struct {
	head    CapacityComparedStudy
	plan    *capacity.Plan
	result  *capacity.Result
	samples map[capCell]*capSamples
	verdict []capacity.ReportVerdict
}

// CompareCapacity compares req.IDs[1:] with req.IDs[0]. Fewer than two studies, a study named
// twice, a study that is not a capacity or concurrency study, one without a trusted assembled
// result, or studies that share no cell (the message says why) are refused.
func CompareCapacity(ctx context.Context, nb *store.Notebook, req CapacityCompareRequest) (*CapacityComparison, error) {
	if len(req.IDs) < 2 {
		return nil, refused("a comparison needs two or more studies (the first is the baseline); %d chosen", len(req.IDs))
	}
	if req.Alpha == 0 {
		req.Alpha = 0.05
	}
	if !(req.Alpha > 0 && req.Alpha < 1) {
		return nil, refused("alpha %g: want a significance level between 0 and 1, e.g. 0.05", req.Alpha)
	}
	studies := make([]*capStudy, 0, len(req.IDs))
	seen := map[int64]bool{}
	for _, id := range req.IDs {
		if seen[id] {
			return nil, refused("study %d is chosen twice: compare two or more different studies", id)
		}
		seen[id] = true
		s, err := readCapStudy(ctx, nb, id)
		if err != nil {
			return nil, err
		}
		studies = append(studies, s)
	}
	c := &CapacityComparison{Schema: CapacityComparisonSchema, Alpha: req.Alpha, MatchedBy: MatchByCandidateID, RequestsPooled: true,
		Cells: []CapacityCellComparison{}, Verdicts: []SharedVerdict{}}
	for _, s := range studies {
		c.Studies = append(c.Studies, s.head)
		if s.head.PlanSHA256 != studies[0].head.PlanSHA256 {
			c.MatchedBy = MatchByModelFlags
		}
	}
	if err := c.shareCells(studies); err != nil {
		return nil, err
	}
	c.Verdicts = sharedCapVerdicts(studies)
	return c, nil
}

// readCapStudy reads study id: its kind, plan, trusted assembled result, per-request records
// and verdicts.
func readCapStudy(ctx context.Context, nb *store.Notebook, id int64) (*capStudy, error) {
	st, err := nb.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	if st.Kind != kinds.Capacity && st.Kind != kinds.Concurrency {
		return nil, refused("study %d (%s) is a %s study: a capacity comparison takes capacity and concurrency studies only; compare throughput studies with `sparkbench study compare`", id, st.Name, st.Kind)
	}
	rep, err := ShowCapacity(ctx, nb, id)
	if err != nil {
		return nil, err
	}
	if rep.Run == nil {
		return nil, refused("study %d (%s): %v", id, st.Name, capacity.ErrNotAssembled)
	}
	if !rep.Trusted || rep.Run.Result == nil {
		return nil, refused("study %d (%s): %s", id, st.Name, rep.Problem)
	}
	plan, err := CapacityPlan(ctx, nb, id)
	if err != nil {
		return nil, err
	}
	s := &capStudy{plan: plan, result: rep.Run.Result, verdict: rep.Verdicts, samples: map[capCell]*capSamples{},
		head: CapacityComparedStudy{ID: id, Name: st.Name, Kind: st.Kind, Status: st.Status, PlanSHA256: rep.Study.PlanSHA256}}
	dirs, err := capacity.RunFolderDirs(rep.Run.Note.RunDir) // the attempt each lifetime was assembled from
	if err != nil {
		return nil, refused("study %d (%s): %v", id, st.Name, err)
	}
	for _, cand := range s.result.Candidates {
		for _, l := range cand.Lifetimes {
			if err := s.readRequests(rep.Run.Note.RunDir, dirs, cand.ID, l); err != nil {
				return nil, refused("study %d (%s): %v", id, st.Name, err)
			}
		}
	}
	return s, nil
}

// readRequests adds one server lifetime's completed measured requests to the study's samples.
func (s *capStudy) readRequests(runDir string, dirs capacity.LifetimeDirs, cand string, l capacity.LifetimeResult) error {
	k := capacity.LifetimeKey{Pass: l.Pass, Candidate: cand, Slots: l.Slots}
	path := filepath.Join(runDir, filepath.FromSlash(dirs.Of(k)), capacity.RunRequestsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("the request records the comparison reads: %w", err)
	}
	f, err := capacity.ReadRequests(path, data)
	if err != nil {
		return err
	}
	for _, r := range f.Records {
		if r.Phase == capacity.PhaseWarmup || !r.Completed(s.plan.NPredict) {
			continue
		}
		ck := capCell{cand, l.Slots, r.Clients}
		x := s.samples[ck]
		if x == nil {
			x = &capSamples{}
			s.samples[ck] = x
		}
		if t, ok := r.TTFTMs(); ok {
			x.ttft = append(x.ttft, t)
		}
		x.e2e = append(x.e2e, r.E2EMs())
		if itl, ok := r.ITLMs(); ok && itl > 0 {
			x.perStream = append(x.perStream, 1000/itl)
		}
	}
	return nil
}

// candidateKey is how a candidate is matched across studies.
func (c *CapacityComparison) candidateKey(plan *capacity.Plan, id string) string {
	if c.MatchedBy == MatchByCandidateID {
		return id
	}
	cand, _ := plan.Candidate(id)
	return cand.Model.SHA256 + "\x00" + strings.Join(cand.ServerFlags, "\x00")
}

// shareCells fills c.Cells with every cell all studies share, in the baseline's order.
func (c *CapacityComparison) shareCells(studies []*capStudy) error {
	base := studies[0]
	for _, bc := range base.result.Candidates {
		key := c.candidateKey(base.plan, bc.ID)
		for _, cell := range bc.Cells {
			cc := CapacityCellComparison{Candidate: bc.ID, Slots: cell.Slots, Clients: cell.Clients,
				Candidates: []string{bc.ID}, GenerationRate: []*float64{cell.GenerationRate},
				PerStreamRate: []*float64{cell.PerStreamRate}, TTFTMsP95: []*float64{cell.TTFTMsP95}, E2EMsP95: []*float64{cell.E2EMsP95}}
			bs := base.samples[capCell{bc.ID, cell.Slots, cell.Clients}]
			ok := true
			for _, s := range studies[1:] {
				oc, ocell := c.findCell(s, key, cell.Slots, cell.Clients)
				if ocell == nil {
					ok = false
					break
				}
				cc.Candidates = append(cc.Candidates, oc)
				cc.GenerationRate = append(cc.GenerationRate, ocell.GenerationRate)
				cc.PerStreamRate = append(cc.PerStreamRate, ocell.PerStreamRate)
				cc.TTFTMsP95 = append(cc.TTFTMsP95, ocell.TTFTMsP95)
				cc.E2EMsP95 = append(cc.E2EMsP95, ocell.E2EMsP95)
				ns := s.samples[capCell{oc, cell.Slots, cell.Clients}]
				cc.Pairs = append(cc.Pairs, capPair(s.head.ID, bs, ns, c.Alpha))
			}
			if ok {
				c.Cells = append(c.Cells, cc)
			}
		}
	}
	if len(c.Cells) == 0 {
		return refused("the studies share no cell (candidate × slots × clients, candidates matched by %s): %s", c.MatchedBy, noSharedWhy(c, studies))
	}
	return nil
}

// findCell is study s's cell of the candidate matching key at slots × clients.
func (c *CapacityComparison) findCell(s *capStudy, key string, slots, clients int) (string, *capacity.CellResult) {
	for _, cand := range s.result.Candidates {
		if c.candidateKey(s.plan, cand.ID) != key {
			continue
		}
		for i := range cand.Cells {
			if cand.Cells[i].Slots == slots && cand.Cells[i].Clients == clients {
				return cand.ID, &cand.Cells[i]
			}
		}
	}
	return "", nil
}

func capPair(id int64, base, next *capSamples, alpha float64) CapacityCellPair {
	if base == nil {
		base = &capSamples{}
	}
	if next == nil {
		next = &capSamples{}
	}
	return CapacityCellPair{Study: id,
		TTFTMs:    analysis.CompareMedians(base.ttft, next.ttft, alpha),
		E2EMs:     analysis.CompareMedians(base.e2e, next.e2e, alpha),
		PerStream: analysis.CompareMedians(base.perStream, next.perStream, alpha)}
}

// noSharedWhy says what each study measured: its models (with their SHA-256 prefix), slots
// and client levels.
func noSharedWhy(c *CapacityComparison, studies []*capStudy) string {
	parts := make([]string, len(studies))
	for i, s := range studies {
		var models []string
		var slots, clients []int
		for _, cand := range s.plan.Candidates {
			h := cand.Model.SHA256
			if len(h) > 12 {
				h = h[:12]
			}
			models = append(models, fmt.Sprintf("%s (%s, sha256 %s…, flags %q)", cand.ID, filepath.Base(cand.Model.Path), h, cand.ServerFlags))
		}
		for _, cand := range s.result.Candidates {
			for _, cell := range cand.Cells {
				if !slices.Contains(slots, cell.Slots) {
					slots = append(slots, cell.Slots)
				}
				if !slices.Contains(clients, cell.Clients) {
					clients = append(clients, cell.Clients)
				}
			}
		}
		slices.Sort(slots)
		slices.Sort(clients)
		parts[i] = fmt.Sprintf("study %d: candidates %s, slots %v, clients %v", s.head.ID, strings.Join(models, ", "), slots, clients)
	}
	return strings.Join(parts, "; ") + " — compare studies of the same models and server flags at common slot counts and client levels"
}

// sharedCapVerdicts lists the predictions every study has a journaled verdict for, in the
// baseline's order.
func sharedCapVerdicts(studies []*capStudy) []SharedVerdict {
	out := []SharedVerdict{}
	for _, v := range studies[0].verdict {
		sv := SharedVerdict{Prediction: v.Prediction, Text: v.Detail, About: v.Prediction, Words: []string{v.Outcome}, Agree: true}
		for _, s := range studies[1:] {
			i := slices.IndexFunc(s.verdict, func(o capacity.ReportVerdict) bool { return o.Prediction == v.Prediction })
			if i < 0 {
				sv.Words = nil
				break
			}
			sv.Words = append(sv.Words, s.verdict[i].Outcome)
			sv.Agree = sv.Agree && s.verdict[i].Outcome == v.Outcome
		}
		if sv.Words != nil {
			out = append(out, sv)
		}
	}
	return out
}

// VerdictLine is a shared verdict as people read it: "P1: study 1 hit · study 2 hit — they agree".
func (c *CapacityComparison) VerdictLine(v SharedVerdict) string {
	parts := make([]string, len(v.Words))
	for i, w := range v.Words {
		parts[i] = fmt.Sprintf("study %d %s", c.Studies[i].ID, w)
	}
	agree := "they differ"
	if v.Agree {
		agree = "they agree"
	}
	return fmt.Sprintf("%s: %s — %s", v.Prediction, strings.Join(parts, " · "), agree)
}
