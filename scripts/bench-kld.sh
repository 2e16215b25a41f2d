#!/usr/bin/env bash
# KL-divergence leg benchmark: the runner's llama-perplexity --kl-divergence leg against the
# same command run directly, interleaved pairs, median wall-time ratio with a bootstrap
# interval and an A/A control. PAIRS (default 20). Needs the llama.cpp prefix and the medium
# models (make llama models). About a minute and a half on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-20}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SPARKBENCH_KLD_BENCH=1 SPARKBENCH_KLD_PAIRS="$PAIRS" SPARKBENCH_KLD_OUT="$out" \
  SPARKBENCH_REQUIRE_LLAMA=1 go test -count=1 -timeout 30m -run '^TestKLDLegOverhead$' -v ./runner/ >&2 || status=$?
cat "$out"
exit ${status:-0}
