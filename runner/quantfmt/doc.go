// Package quantfmt reads what llama.cpp's quantization and quality tools print: the quant
// types `llama-quantize --help` lists (ParseQuantizeHelp), llama-quantize's run output
// (QuantizeParser: the tensor lines "[  12/  75] blk.0.attn_k.weight - […], type = f16,
// converting to q4_0 .. size = 0.50 MiB -> 0.14 MiB", the model and quant sizes, the timings,
// the failures), llama-perplexity's output (PerplexityParser: the plan line, the chunk
// values "[1]260.8183,[2]…" or, with --ppl-output-type 1, one line per chunk, the final
// estimate, the --kl-divergence chunk table and statistics block, the errors such as too few
// tokens for the context) and the header of a base-logits file (ReadLogitsHeader).
//
// The parsers are incremental: they take one output line at a time (as the runner's pty
// driver delivers them, CRLF and ANSI removed) and say what the line added, so a driver can
// report "tensor i of N" or "chunk i of N" as the tool goes. Every figure keeps the 1-based
// number of the output line it was read from (Figure.Line), so it traces to the raw
// transcript. They never panic on any input (fuzz tests) and keep a bounded amount of state
// per line kind.
//
// The formats were read from build 11669 (version 0.7.0, Debian) and checked against its
// real output: testdata/ holds captured transcripts and testdata/README.md says how they
// were made. The package is pure: it starts no process and imports no process code.
package quantfmt
