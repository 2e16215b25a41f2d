package workbench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
	"sparkbench/store"
)

// The built-in kinds as the registry sees them: throughput is the `study` verb's default kind,
// capacity (with concurrency) the `capacity` verb's. Their register and show go through the
// shared verbs here; their plan checks and runs through their own calls (throughput.go,
// capacity.go).
func init() {
	RegisterKind(Kind{Names: []string{kinds.Throughput}, PlanSchema: study.SchemaThroughput, Default: true, Find: FindThroughput,
		CacheWarning: "warning: the model hashes were not cached",
		Validate:     validateThroughputKind, Register: registerThroughputKind, Run: runThroughputKind, Show: showThroughputKind,
		Receipt: throughputStudyFiles})
	RegisterKind(Kind{Names: []string{kinds.Capacity, kinds.Concurrency}, Verb: "capacity", Default: true, Find: FindCapacity,
		PlanSchema: capacity.SchemaCapacity, MorePlanSchemas: []string{capacity.SchemaConcurrency},
		CacheWarning: "registered, but the model hashes were not cached",
		Validate:     validateCapacityKind, Register: registerCapacityKind, Run: runCapacityKind, Show: showCapacityKind,
		Receipt: capacityStudyFiles})
}

func validateThroughputKind(ctx context.Context, req PlanCheck) (*Validated, error) {
	v, err := ValidateThroughputWith(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &Validated{Problems: v.Problems, Valid: v.Valid, Report: v}
	if v.Valid {
		out.Lines = []string{fmt.Sprintf("%s: valid throughput plan %q, sha256 %s, %d legs:", req.File, v.Plan.Name, v.SHA256, len(v.Legs))}
		for _, l := range v.Legs {
			out.Lines = append(out.Lines, fmt.Sprintf("  %-24s %d rows  llama-bench %s", l.ID, l.ExpectedRows, study.JoinArgs(l.Args)))
		}
		if w := v.Plan.Build.LaunchWrapper; len(w) > 0 {
			out.Lines = append(out.Lines, fmt.Sprintf("  launch wrapper: %s, each leg and canary started as it followed by the command line above (recorded apart, with the affinity read)", study.JoinArgs(w)))
		}
		out.Lines = append(out.Lines, PlannerLines(v.Planner)...)
	}
	return out, nil
}

func validateCapacityKind(ctx context.Context, req PlanCheck) (*Validated, error) {
	v, err := ValidateCapacity(ctx, req.File, req.Hash, req.LlamaDir)
	if err != nil {
		return nil, err
	}
	out := &Validated{Problems: v.Problems, Valid: v.Valid, Report: v}
	if v.FlagsNotChecked != nil {
		out.Warnings = []string{fmt.Sprintf("%s: warning: server_flags not checked against llama-server: %v", req.File, v.FlagsNotChecked)}
	}
	if v.Valid {
		p := v.Plan
		cells := 0
		for _, s := range p.Slots {
			cells += len(p.ClientLevels(s))
		}
		out.Lines = []string{fmt.Sprintf("%s: valid %s plan %q, sha256 %s: %d candidates x %d cells x %d passes, %d server lifetimes in run order:",
			req.File, v.Kind, p.Name, v.SHA256, len(p.Candidates), cells, len(p.Passes), len(v.Lifetimes))}
		for _, l := range v.Lifetimes {
			out.Lines = append(out.Lines, fmt.Sprintf("  %-32s clients %-10s llama-server %s", l.Key, joinInts(l.Clients), study.JoinArgs(l.Args)))
		}
	}
	return out, nil
}

// joinInts is "1,2,4".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func registerThroughputKind(ctx context.Context, nb *store.Notebook, file string, data []byte, hash study.HashFunc) (*Registered, error) {
	reg, err := registerThroughput(ctx, nb, ThroughputRegisterRequest{File: file, Data: data}, hash)
	if err != nil {
		return nil, err
	}
	return reg.Registered(), nil
}

// Registered is the registration as the shared register verb prints it.
func (reg *ThroughputRegistered) Registered() *Registered {
	r := &Registered{StudyID: reg.StudyID, Name: reg.Name, PlanSHA256: reg.PlanSHA256, Report: reg.Registration,
		Warnings: fileWarnings(reg.File, reg.Warnings)}
	if reg.Existing {
		r.Lines = []string{fmt.Sprintf("study %d %q: already registered with this plan (sha256 %s)", reg.StudyID, reg.Name, reg.PlanSHA256)}
	} else {
		r.Lines = []string{fmt.Sprintf("study %d %q registered: plan sha256 %s, %d predictions, %d legs", reg.StudyID, reg.Name, reg.PlanSHA256, len(reg.Plan.Predictions), reg.Legs)}
	}
	return r
}

func registerCapacityKind(ctx context.Context, nb *store.Notebook, file string, _ []byte, hash study.HashFunc) (*Registered, error) {
	reg, err := registerCapacity(ctx, nb, CapacityRegisterRequest{File: file}, hash)
	if reg == nil {
		return nil, err
	}
	return reg.Registered(file), err
}

// Registered is the registration of plan file as the shared register verb prints it (with an
// error, only its Notes count).
func (reg *CapacityRegistered) Registered(file string) *Registered {
	r := &Registered{StudyID: reg.StudyID, Name: reg.Name, PlanSHA256: reg.PlanSHA256, Report: reg.Registration,
		Warnings: fileWarnings(file, reg.Warnings)}
	if reg.FlagsNotChecked != nil {
		r.Notes = []string{fmt.Sprintf("warning: server_flags not checked against llama-server: %v", reg.FlagsNotChecked)}
	}
	if reg.Existing {
		r.Lines = []string{fmt.Sprintf("study %d %q: already registered with this plan (sha256 %s)", reg.StudyID, reg.Name, reg.PlanSHA256)}
	} else if reg.Plan != nil {
		r.Lines = []string{fmt.Sprintf("study %d %q registered (%s): plan sha256 %s, %d predictions", reg.StudyID, reg.Name, reg.Kind, reg.PlanSHA256, len(reg.Plan.Predictions))}
	}
	return r
}

// fileWarnings are a plan file's warnings as the register verbs print them: "FILE: warning".
func fileWarnings(file string, ws []study.Problem) []string {
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%s: %s", file, w))
	}
	return out
}

func showThroughputKind(ctx context.Context, nb *store.Notebook, s store.Study) (*Shown, error) {
	rep, err := ShowThroughput(ctx, nb, s.ID)
	if err != nil {
		return nil, err
	}
	return &Shown{Report: rep, Print: func(w io.Writer) { study.WriteReport(w, rep) }}, nil
}

func showCapacityKind(ctx context.Context, nb *store.Notebook, s store.Study) (*Shown, error) {
	rep, err := ShowCapacity(ctx, nb, s.ID)
	if err != nil {
		return nil, err
	}
	return &Shown{Report: rep, Print: func(w io.Writer) { capacity.WriteReport(w, rep) }, Problem: rep.Problem}, nil
}
