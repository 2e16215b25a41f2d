package workbench

import (
	"context"
	"fmt"
	"os/user"
	"strings"

	"sparkbench/app/study"
	"sparkbench/store"
)

// FindThroughput resolves a study by id or name; it must be a registered throughput study
// (one with a plan: an imported study has none).
func FindThroughput(ctx context.Context, nb *store.Notebook, ref string) (int64, error) {
	s, err := nb.FindStudy(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("%w; `sparkbench study register FILE` prints a new study's id", err)
	}
	if s.Kind != store.StudyThroughput {
		return 0, fmt.Errorf("study %d (%s) is a %s study; this command works on throughput studies", s.ID, s.Name, s.Kind)
	}
	if _, err := nb.Plan(ctx, s.ID); err != nil {
		return 0, fmt.Errorf("study %d (%s) has no registered plan (an imported study?); register a plan file with `sparkbench study register FILE`", s.ID, s.Name)
	}
	return s.ID, nil
}

// Amend changes a prediction of throughput study id: an amendment before a leg it reads ran,
// else (AsDeviation) a deviation shown beside it. study.ErrAmendmentRefused: it would need to
// be a deviation.
func Amend(ctx context.Context, nb *store.Notebook, id int64, req study.AmendRequest) (study.AmendResult, error) {
	return study.Amend(ctx, store.StudyRecorder{N: nb}, id, req)
}

// VerdictRequest is a human verdict on a prediction: its outcome (PASS, FAIL or NOTE, any
// case), the rationale, and who decided ("": the login name).
type VerdictRequest struct {
	Prediction, Outcome, Rationale, Author string
}

// Verdict is the verdict as it is recorded: the outcome upper-cased, the author filled in.
func (req VerdictRequest) Verdict() study.HumanVerdict {
	h := study.HumanVerdict{Prediction: req.Prediction, Outcome: strings.ToUpper(req.Outcome), Rationale: req.Rationale, Author: req.Author}
	if h.Author == "" {
		h.Author = CurrentUser()
	}
	return h
}

// Check refuses a verdict request that cannot be recorded as given (a *RequestError naming
// the flag), before any notebook is opened.
func (req VerdictRequest) Check() error {
	switch {
	case req.Prediction == "":
		return refused("--prediction is required (e.g. P1)")
	case req.Outcome == "":
		return refused("--human is required: PASS, FAIL or NOTE")
	case strings.TrimSpace(req.Rationale) == "":
		return refused("--why is required: a human verdict records its rationale")
	}
	switch strings.ToUpper(req.Outcome) {
	case "PASS", "FAIL", "NOTE":
		return nil
	}
	return refused("--human %q: want PASS, FAIL or NOTE", req.Outcome)
}

// RecordVerdict journals a human verdict on a prediction of throughput study id (an empty
// author: the login name).
func RecordVerdict(ctx context.Context, nb *store.Notebook, id int64, h study.HumanVerdict) error {
	if h.Author == "" {
		h.Author = CurrentUser()
	}
	return study.RecordHumanVerdict(ctx, store.StudyRecorder{N: nb}, id, h)
}

// AddFinding records a numbered finding (F1, F2, …) on throughput study id, linked to legs and
// predictions; it returns its label.
func AddFinding(ctx context.Context, nb *store.Notebook, id int64, f study.FindingRequest) (string, error) {
	return study.AddFinding(ctx, store.StudyRecorder{N: nb}, id, f)
}

// CurrentUser is the login name recorded as a human verdict's author ("" when unknown).
func CurrentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
