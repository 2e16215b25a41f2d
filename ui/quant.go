package ui

import (
	"context"

	"sparkbench/app/quant"
	"sparkbench/app/study"
)

// QuantService builds, registers, shows and runs quantization ladders (app/quant, the "quant"
// study kind): cmd wires it to the notebook and the registered kind (the same calls as `sparkbench
// study validate|register|run|show` and `quant handoff`), tests to fakes. RunQuant blocks until
// the run ends and calls onLine and onRecord synchronously from its own goroutine.
type QuantService interface {
	// QuantTypes are the types the window's build's llama-quantize lists, in its order.
	QuantTypes(ctx context.Context) ([]string, error)
	// BuildDir is the window's llama.cpp folder as an absolute path ("": the default search),
	// which ValidateQuant and RunQuant use: the form records it as the plan's build.dir, so the
	// kind's Register checks the plan against the same build.
	BuildDir() string
	// DefaultCorpus is the path of the project's own quality corpus (written to the data folder).
	DefaultCorpus(ctx context.Context) (string, error)
	// ValidateQuant checks a plan as the kind's Validate does (files named, not hashed).
	ValidateQuant(ctx context.Context, p *quant.Plan) ([]study.Problem, error)
	// EstimateQuant is a rough duration, in words.
	EstimateQuant(ctx context.Context, p *quant.Plan) (string, error)
	// RegisterQuant freezes the plan (its files hashed) through the kind's Register.
	RegisterQuant(ctx context.Context, p *quant.Plan) (QuantRegistration, error)
	ShowQuant(ctx context.Context, id int64) (*QuantStudy, error)
	RunQuant(ctx context.Context, id int64, onLine func(string), onRecord func(quant.Record)) (QuantRunDone, error)
	// HandOff writes a finished ladder's capacity plan to out (a new file) and returns its SHA-256.
	HandOff(ctx context.Context, id int64, out string, h quant.HandOff) (string, error)
	// DerivedModels lists the derived-model cache with each file's provenance.
	DerivedModels(ctx context.Context) ([]DerivedModel, error)
}

// QuantRegistration is a frozen ladder plan: the study, its name and plan SHA-256, the plan file.
type QuantRegistration struct {
	StudyID    int64
	Name       string
	PlanSHA256 string
	File       string
}

// QuantStudy is a ladder study as the notebook records it: its plan and the result assembled
// from its last run's records (every candidate "not run" before a run).
type QuantStudy struct {
	ID         int64
	Name       string
	Status     string
	PlanSHA256 string
	Plan       *quant.Plan
	Result     *quant.Result
}

// QuantRunDone is how a ladder run ended: its status, whether nothing is left to measure, and
// the lines that say so.
type QuantRunDone struct {
	Status   string
	Complete bool
	Lines    []string
}

// DerivedModel is a file of the derived-model cache and its provenance: the reference's
// (parent's) SHA-256, the type, the importance matrix's SHA-256 ("" none), the build that
// quantized it, its own SHA-256 and size when made, the llama-quantize argv and when.
type DerivedModel struct {
	Path      string
	Parent    string
	Type      string
	Imatrix   string
	Build     string
	SHA256    string
	Bytes     int64
	Argv      []string
	CreatedAt string
}
