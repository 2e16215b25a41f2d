#!/usr/bin/env bash
# A real A/A (issue 31): the shipped adaptive example (docs/examples/adaptive-reps.json) run as
# PAIRS pairs (default 10) of identical studies, each pair compared with `study compare` at the
# process level; prints every cell's comparison, the fraction of cells called significant with
# its 95% Clopper–Pearson interval, and the spread between processes and within one per test.
# Needs the llama.cpp prefix and the medium model (make llama models). About 25 s a pair here.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-10}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SPARKBENCH_AA_PAIRS="$PAIRS" SPARKBENCH_AA_OUT="$out" \
  SPARKBENCH_REQUIRE_LLAMA=1 go test -tags migrated_fynedo,aabench -count=1 -timeout 60m -run '^TestAdaptiveAABench$' -v ./cmd/sparkbench/ >&2 || status=$?
cat "$out"
exit ${status:-0}
