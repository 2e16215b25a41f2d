package llamacpp

import "sparkbench/runner/vocab"

// A build's description lives in runner/vocab (no process code there); these are its names
// under llamacpp, the same types and constants.
type (
	Source   = vocab.Source
	Location = vocab.Location
	Build    = vocab.Build
	Device   = vocab.Device
	Binary   = vocab.Binary
)

const (
	SourceFlag   = vocab.SourceFlag
	SourceEnv    = vocab.SourceEnv
	SourcePrefix = vocab.SourcePrefix
	SourcePath   = vocab.SourcePath
)
