// Package quant is the quantization ladder study kind's pure half (docs/quant.md): its plan
// (sparkbench.quant/v1: a reference model, the quant types to try, the speed axes, the quality
// corpus and settings, and the pre-registered decision rule), the plan's validation, the
// content-addressed key of a derived model, the candidates table and the rule that chooses
// among them (limits, tolerance and tie-break chain; the speed-versus-KLD Pareto frontier).
//
// It starts no process: quantizing, benching and llama-perplexity runs belong to the kind's
// run half. Every figure it selects by traces to the candidate rows it is given.
package quant
