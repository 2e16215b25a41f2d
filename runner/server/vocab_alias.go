package server

import "sparkbench/runner/vocab"

// What a server run leaves behind lives in runner/vocab (no process code there); these are its
// names under server, the same types and constants.
type (
	Evidence     = vocab.Evidence
	LayerDevice  = vocab.LayerDevice
	Buffer       = vocab.Buffer
	Offload      = vocab.Offload
	LogDevice    = vocab.LogDevice
	BreakdownRow = vocab.BreakdownRow
	Markers      = vocab.Markers
	MarkerCheck  = vocab.MarkerCheck
	Attempt      = vocab.Attempt
	RSS          = vocab.RSS
)

const (
	MaxEvidenceEntries = vocab.MaxEvidenceEntries
	BufferModel        = vocab.BufferModel
	BufferKV           = vocab.BufferKV
	BufferCompute      = vocab.BufferCompute
	BufferOutput       = vocab.BufferOutput
)
