package assets

import _ "embed"

// Corpus is the project's own quality corpus (corpus/README.md: original prose written for
// sparkbench, CC0), for perplexity and KL-divergence measurements; CorpusName is its file name.
//
//go:embed corpus/sparkbench-corpus-v1.txt
var Corpus []byte

const CorpusName = "sparkbench-corpus-v1.txt"
