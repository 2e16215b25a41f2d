package main

import (
	"sparkbench/runner/gguf"
	"sparkbench/runner/gguf/testmodels"
)

// The generator lives in runner/gguf/testmodels (the app's demo study writes the same models on
// demand); these names keep this command and its tests reading as before.

type spec = testmodels.Spec

var specs = testmodels.Specs

const (
	vocabSize = testmodels.VocabSize

	tokenUnknown = testmodels.TokenUnknown
	tokenControl = testmodels.TokenControl
	tokenUnused  = testmodels.TokenUnused
	tokenByte    = testmodels.TokenByte

	weightScale = testmodels.WeightScale
)

func vocab() ([]string, []float32, []int32) { return testmodels.Vocab() }

func build(s spec) ([]gguf.KV, []gguf.TensorData) { return testmodels.Build(s) }
