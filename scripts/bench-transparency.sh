#!/usr/bin/env bash
# Transparency benchmark: the same llama-bench command run directly under a pipe and through
# sparkbench's runner (pty, jsonl parsing, events), interleaved A/B pairs on the tiny and
# the medium generated model, beside an A/A control (direct vs direct, same pairing). Prints
# the table of median runner/direct ratios of llama-bench's own t/s for pp and tg.
# PAIRS (default 20) sets the pairs per model. Needs the llama.cpp binaries and the models
# (make llama models). Takes about a minute on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-20}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SPARKBENCH_TRANSPARENCY=1 SPARKBENCH_TRANSPARENCY_PAIRS="$PAIRS" SPARKBENCH_TRANSPARENCY_OUT="$out" \
  SPARKBENCH_REQUIRE_LLAMA=1 go test -count=1 -timeout 60m -run '^TestTransparency$' -v ./runner/ >&2 || status=$?
cat "$out"
exit ${status:-0}
