package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sparkbench/app/textsafe"
)

// Registration is the result of Register.
type Registration struct {
	StudyID    int64     `json:"study"`
	Name       string    `json:"name"`
	PlanSHA256 string    `json:"plan_sha256"`
	Existing   bool      `json:"existing"` // the plan was registered before: same SHA-256, same study
	Legs       int       `json:"legs"`
	Warnings   []Problem `json:"warnings"`
}

// Register validates a plan file's plan (models read and hashed) and freezes it with its
// predictions in the notebook. Models are hashed only once the rest of the plan is valid.
// Registering the same plan again finds the same study (a plan's SHA-256 is its identity), so
// it is idempotent.
func Register(ctx context.Context, rec Recorder, p *Plan, planFile string, hash HashFunc) (Registration, error) {
	return RegisterWith(ctx, rec, p, planFile, RegisterOptions{Hash: hash})
}

// RegisterOptions are how Register hashes the models and the notebook's history of them (the
// repetition planner's warnings: ValidateOptions.History).
type RegisterOptions struct {
	Hash    HashFunc
	History map[string]BenchHistory
}

// RegisterWith is Register with the models' history: its warnings join the registration's.
func RegisterWith(ctx context.Context, rec Recorder, p *Plan, planFile string, o RegisterOptions) (Registration, error) {
	hash := o.Hash
	abs, err := filepath.Abs(planFile)
	if err != nil {
		return Registration{}, err
	}
	dir := filepath.Dir(abs)
	p.Defaults()
	// Everything but the hashes first: a plan refused for any other reason is refused before a
	// model file is hashed (minutes for a 60 GB file), so the hash function, and any cache
	// behind it, is not called for it.
	if probs, _ := Validate(p, ValidateOptions{PlanDir: dir}); len(Errors(probs)) > 0 {
		return Registration{}, &RefusedError{Problems: probs}
	}
	probs, _ := Validate(p, ValidateOptions{PlanDir: dir, Hash: hash, History: o.History})
	if len(Errors(probs)) > 0 {
		return Registration{}, &RefusedError{Problems: probs}
	}
	reg := Registration{Name: p.Name, Warnings: probs}
	if reg.Warnings == nil {
		reg.Warnings = []Problem{}
	}
	legs, err := Expand(p, dir)
	if err != nil {
		return reg, err
	}
	reg.Legs = len(legs)
	sum, canonical, err := p.SHA256()
	if err != nil {
		return reg, err
	}
	reg.PlanSHA256 = sum
	reg.StudyID, reg.Existing, err = rec.Register(ctx, NewStudy{Name: p.Name, Description: p.Description, PlanSHA256: sum,
		PlanJSON: canonical, PlanDir: dir, PlanFile: abs, Predictions: p.Predictions})
	if err != nil {
		return reg, err
	}
	if st, err := rec.Study(ctx, reg.StudyID); err == nil {
		reg.Name = st.Name
	}
	return reg, nil
}

// Change is what an amendment (or a deviation) changes in a prediction; nil fields stay.
type Change struct {
	Text       *string  `json:"text,omitempty"`
	Lo         *float64 `json:"lo,omitempty"`
	Hi         *float64 `json:"hi,omitempty"`
	ClearLo    bool     `json:"clear_lo,omitempty"` // open the lower bound
	ClearHi    bool     `json:"clear_hi,omitempty"`
	NoiseFloor *float64 `json:"noise_floor,omitempty"`
	Tolerance  *float64 `json:"tolerance,omitempty"`
	// Arms replace the fork's arms of the same name.
	Arms []Arm `json:"arms,omitempty"`
}

// Empty reports whether the change changes nothing.
func (c Change) Empty() bool {
	return c.Text == nil && c.Lo == nil && c.Hi == nil && !c.ClearLo && !c.ClearHi && c.NoiseFloor == nil &&
		c.Tolerance == nil && len(c.Arms) == 0
}

// String prints the change: "lo 1000 → 2000, hi open → 9000".
func (c Change) describe(before Prediction) string {
	var parts []string
	num := func(p *float64) string {
		if p == nil {
			return "open"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	if c.Text != nil {
		parts = append(parts, fmt.Sprintf("text %q → %q", before.Text, *c.Text))
	}
	if c.Lo != nil || c.ClearLo {
		parts = append(parts, "lo "+num(before.Lo)+" → "+num(c.Lo))
	}
	if c.Hi != nil || c.ClearHi {
		parts = append(parts, "hi "+num(before.Hi)+" → "+num(c.Hi))
	}
	if c.NoiseFloor != nil {
		parts = append(parts, fmt.Sprintf("noise floor %g → %g", before.NoiseFloor, *c.NoiseFloor))
	}
	if c.Tolerance != nil {
		parts = append(parts, fmt.Sprintf("tolerance %g → %g", before.Tolerance, *c.Tolerance))
	}
	for _, a := range c.Arms {
		parts = append(parts, fmt.Sprintf("arm %s → %s", a.Name, rangeText(a.Lo, a.Hi)))
	}
	return strings.Join(parts, ", ")
}

// Apply returns the prediction with the change made, or why the result is not a prediction.
func (c Change) Apply(p Prediction) (Prediction, error) {
	out := p
	out.Arms = slices.Clone(p.Arms)
	if c.Text != nil {
		if strings.TrimSpace(*c.Text) == "" {
			return p, errors.New("the text may not be empty")
		}
		out.Text = *c.Text
	}
	if c.Lo != nil || c.Hi != nil || c.ClearLo || c.ClearHi {
		if p.Kind != KindBand {
			return p, fmt.Errorf("%s is a %s: lo and hi belong to band predictions (a fork's arms change with an arm)", p.ID, p.Kind)
		}
		if c.ClearLo {
			out.Lo = nil
		}
		if c.ClearHi {
			out.Hi = nil
		}
		if c.Lo != nil {
			out.Lo = c.Lo
		}
		if c.Hi != nil {
			out.Hi = c.Hi
		}
	}
	if c.NoiseFloor != nil {
		if p.Kind != KindBand || *c.NoiseFloor < 0 || *c.NoiseFloor >= 1 {
			return p, errors.New("noise_floor belongs to band predictions and is a fraction in [0, 1)")
		}
		out.NoiseFloor = *c.NoiseFloor
	}
	if c.Tolerance != nil {
		if p.Kind != KindComparison || *c.Tolerance < 0 || *c.Tolerance >= 1 {
			return p, errors.New("tolerance belongs to comparison predictions and is a fraction in [0, 1)")
		}
		out.Tolerance = *c.Tolerance
	}
	for _, a := range c.Arms {
		if p.Kind != KindFork {
			return p, fmt.Errorf("%s is a %s: arms belong to forks", p.ID, p.Kind)
		}
		i := slices.IndexFunc(out.Arms, func(x Arm) bool { return x.Name == a.Name })
		if i < 0 {
			var names []string
			for _, x := range out.Arms {
				names = append(names, x.Name)
			}
			return p, fmt.Errorf("%s has no arm %q (arms: %s)", p.ID, a.Name, strings.Join(names, ", "))
		}
		out.Arms[i] = a
	}
	if err := checkRanges(out); err != nil {
		return p, err
	}
	return out, nil
}

func checkRanges(p Prediction) error {
	bad := func(lo, hi *float64) bool {
		return (lo != nil && (math.IsNaN(*lo) || math.IsInf(*lo, 0))) || (hi != nil && (math.IsNaN(*hi) || math.IsInf(*hi, 0))) ||
			(lo != nil && hi != nil && *lo > *hi)
	}
	switch p.Kind {
	case KindBand:
		if p.Lo == nil && p.Hi == nil {
			return errors.New("a band needs lo, hi or both")
		}
		if bad(p.Lo, p.Hi) {
			return fmt.Errorf("band %s is not a range (lo must be <= hi, both finite)", rangeText(p.Lo, p.Hi))
		}
	case KindFork:
		for i, a := range p.Arms {
			if a.Lo == nil && a.Hi == nil || bad(a.Lo, a.Hi) {
				return fmt.Errorf("arm %q: %s is not a range", a.Name, rangeText(a.Lo, a.Hi))
			}
			for _, b := range p.Arms[:i] {
				if overlap(a, b) {
					return fmt.Errorf("arms %q and %q overlap: a value must fire at most one arm", b.Name, a.Name)
				}
			}
		}
	}
	return nil
}

// AmendmentChange is the stored form of an amendment or a prediction deviation: what was
// asked, the prediction before and after.
type AmendmentChange struct {
	Prediction string     `json:"prediction"`
	Set        Change     `json:"set"`
	Before     Prediction `json:"before"`
	After      Prediction `json:"after"`
	// RefusedBecause says why the change could not be an amendment (deviations only).
	RefusedBecause string `json:"refused_because,omitempty"`
}

// effectivePredictions are the plan's predictions with accepted amendments applied in order.
func effectivePredictions(p *Plan, ams []StoredAmendment) ([]Prediction, error) {
	out := slices.Clone(p.Predictions)
	for _, a := range ams {
		key, ok := strings.CutPrefix(a.Target, "prediction:")
		if !ok {
			continue
		}
		var ch AmendmentChange
		if err := json.Unmarshal(a.Change, &ch); err != nil {
			return nil, fmt.Errorf("amendment of %s: %w", key, err)
		}
		i := slices.IndexFunc(out, func(x Prediction) bool { return x.ID == key })
		if i < 0 {
			return nil, fmt.Errorf("amendment of %s: the plan has no such prediction", key)
		}
		out[i] = ch.After
	}
	return out, nil
}

// AmendRequest asks to change a prediction.
type AmendRequest struct {
	Prediction string
	Set        Change
	Reason     string
	// AsDeviation records the change as a deviation (shown as such; the registered prediction
	// keeps deciding the verdict) instead of an amendment.
	AsDeviation bool
}

// AmendResult says what became of an AmendRequest.
type AmendResult struct {
	Kind    string     `json:"kind"` // "amendment" or "deviation"
	Before  Prediction `json:"before"`
	After   Prediction `json:"after"`
	Touches []string   `json:"touches"` // plan legs the prediction reads
	Ran     []string   `json:"ran"`     // of those, the ones that have run
	Summary string     `json:"summary"`
}

// ErrAmendmentRefused is wrapped by Amend's refusal: a leg the prediction reads has run.
var ErrAmendmentRefused = errors.New("amendment refused")

// Amend records a change to a registered prediction: as an amendment while no leg it touches
// has run (and no verdict was journaled), otherwise it refuses with the reason; with
// AsDeviation the change is recorded as a deviation instead.
func Amend(ctx context.Context, rec Recorder, studyID int64, req AmendRequest) (AmendResult, error) {
	if strings.TrimSpace(req.Reason) == "" {
		return AmendResult{}, errors.New("an amendment needs a reason")
	}
	field := "amendment reason"
	if req.AsDeviation {
		field = "deviation reason"
	}
	if err := textsafe.Check(field, req.Reason); err != nil {
		return AmendResult{}, err
	}
	if req.Set.Text != nil {
		if err := textsafe.Check("new prediction text", *req.Set.Text); err != nil {
			return AmendResult{}, err
		}
	}
	if req.Set.Empty() {
		return AmendResult{}, errors.New("the amendment changes nothing: give a new value (e.g. --set-lo 2000)")
	}
	l, err := LoadStudy(ctx, rec, studyID)
	if err != nil {
		return AmendResult{}, err
	}
	i := slices.IndexFunc(l.Preds, func(p Prediction) bool { return p.ID == req.Prediction })
	if i < 0 {
		return AmendResult{}, fmt.Errorf("study %d has no prediction %q (it has %s)", studyID, req.Prediction, predictionIDs(l.Preds))
	}
	before := l.Preds[i]
	after, err := req.Set.Apply(before)
	if err != nil {
		return AmendResult{}, fmt.Errorf("%s: %w", req.Prediction, err)
	}
	res := AmendResult{Before: before, After: after, Touches: Touches(before.About, l.Legs), Ran: []string{}}
	if before.Than != nil {
		res.Touches = dedupe(append(res.Touches, Touches(*before.Than, l.Legs)...))
	}
	if res.Touches == nil {
		res.Touches = []string{}
	}
	ran := map[string]string{}
	for _, s := range l.Stored {
		if s.Role != RoleLeg || !has(res.Touches, s.PlanLeg) {
			continue
		}
		if ran[s.PlanLeg] == "" {
			res.Ran = append(res.Ran, s.PlanLeg)
		}
		if ran[s.PlanLeg] != LegFinished { // name the furthest any attempt got
			ran[s.PlanLeg] = s.State
		}
	}
	var why string
	switch {
	case len(res.Ran) > 0:
		var parts []string
		for _, id := range res.Ran {
			parts = append(parts, id+" ("+ran[id]+")")
		}
		why = fmt.Sprintf("%s reads leg(s) that have run: %s; an amendment is accepted only while no leg it touches has run",
			req.Prediction, strings.Join(parts, ", "))
	case l.St.Verdicts[req.Prediction].Computed != nil:
		why = fmt.Sprintf("%s already has a computed verdict (%s); an amendment is accepted only before its verdict",
			req.Prediction, l.St.Verdicts[req.Prediction].Computed.Outcome)
	}
	ch := AmendmentChange{Prediction: req.Prediction, Set: req.Set, Before: before, After: after}
	desc := req.Set.describe(before)
	if req.AsDeviation {
		ch.RefusedBecause = why
		res.Kind = "deviation"
		res.Summary = fmt.Sprintf("deviation: %s %s (%s)", req.Prediction, desc, req.Reason)
		err := rec.AddDeviation(ctx, studyID, DeviationRecord{
			Description: fmt.Sprintf("%s changed after registration: %s; reason: %s", req.Prediction, desc, req.Reason),
			Detail:      map[string]any{"kind": "prediction_change", "reason": req.Reason, "change": ch}})
		return res, err
	}
	if why != "" {
		return res, fmt.Errorf("%w: %s; record it as a deviation instead (--as-deviation)", ErrAmendmentRefused, why)
	}
	res.Kind = "amendment"
	res.Summary = fmt.Sprintf("amendment: %s %s (%s)", req.Prediction, desc, req.Reason)
	return res, rec.AddAmendment(ctx, studyID, AmendmentRecord{Target: "prediction:" + req.Prediction, Reason: req.Reason, Change: ch})
}

func predictionIDs(ps []Prediction) string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// RecordHumanVerdict records a person's PASS, FAIL or NOTE on a prediction, with a rationale.
func RecordHumanVerdict(ctx context.Context, rec Recorder, studyID int64, h HumanVerdict) error {
	switch h.Outcome {
	case "PASS", "FAIL", "NOTE":
	default:
		return fmt.Errorf("human verdict %q: want PASS, FAIL or NOTE", h.Outcome)
	}
	if strings.TrimSpace(h.Rationale) == "" {
		return errors.New("a human verdict needs its rationale (--why)")
	}
	if err := textsafe.Check("verdict rationale", h.Rationale); err != nil {
		return err
	}
	if err := textsafe.CheckLine("verdict author", h.Author); err != nil {
		return err
	}
	l, err := LoadStudy(ctx, rec, studyID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(l.Preds, func(p Prediction) bool { return p.ID == h.Prediction }) {
		return fmt.Errorf("study %d has no prediction %q (it has %s)", studyID, h.Prediction, predictionIDs(l.Preds))
	}
	return rec.RecordHumanVerdict(ctx, studyID, h)
}

// FindingRequest is a finding with its evidence: legs by plan leg ID, label or notebook id,
// predictions by ID.
type FindingRequest struct {
	Text        string
	Legs        []string
	Predictions []string
}

// AddFinding numbers and records a finding (F1, F2, …) linked to legs and predictions.
func AddFinding(ctx context.Context, rec Recorder, studyID int64, f FindingRequest) (string, error) {
	if strings.TrimSpace(f.Text) == "" {
		return "", errors.New("a finding needs its text (--text)")
	}
	if err := textsafe.Check("finding text", f.Text); err != nil {
		return "", err
	}
	l, err := LoadStudy(ctx, rec, studyID)
	if err != nil {
		return "", err
	}
	var legIDs []int64
	for _, ref := range f.Legs {
		id, err := resolveLeg(l, ref)
		if err != nil {
			return "", err
		}
		legIDs = append(legIDs, id)
	}
	for _, p := range f.Predictions {
		if !slices.ContainsFunc(l.Preds, func(x Prediction) bool { return x.ID == p }) {
			return "", fmt.Errorf("study %d has no prediction %q (it has %s)", studyID, p, predictionIDs(l.Preds))
		}
	}
	return rec.AddFinding(ctx, studyID, FindingRecord{Text: f.Text, LegIDs: legIDs, Predictions: f.Predictions})
}

// resolveLeg finds a recorded leg by label, by plan leg ID (its final attempt, else its
// latest) or by notebook id.
func resolveLeg(l *Loaded, ref string) (int64, error) {
	for _, s := range l.Stored {
		if s.Label == ref {
			return s.ID, nil
		}
	}
	if s, ok := finalLegs(l.Stored)[ref]; ok {
		return s.ID, nil
	}
	var latest int64
	for _, s := range l.Stored {
		if s.PlanLeg == ref && s.Role == RoleLeg {
			latest = s.ID
		}
	}
	if latest != 0 {
		return latest, nil
	}
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		for _, s := range l.Stored {
			if s.ID == id {
				return id, nil
			}
		}
	}
	var labels []string
	for _, s := range l.Stored {
		labels = append(labels, s.Label)
	}
	if len(labels) == 0 {
		return 0, fmt.Errorf("leg %q: study %d has no legs recorded yet", ref, l.St.ID)
	}
	return 0, fmt.Errorf("leg %q is not a leg of study %d (legs: %s)", ref, l.St.ID, strings.Join(labels, ", "))
}
