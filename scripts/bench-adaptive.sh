#!/usr/bin/env bash
# Time to the same precision (issue 19): on the medium model, tg16 and pp64 at depths 0 and 256
# (one thread), a study with adaptive repetitions to ±1% (3 to MAX reps in chunks of 3) against
# one with a fixed -r 10, each run whole by `study run`, PAIRS pairs (default 10) in alternating
# order; prints each pair's wall times and achieved 95% half-widths, the median wall time ratio
# and the median half-width of each cell. Needs the llama.cpp prefix and the medium model
# (make llama models). Several minutes; on a shared machine the figures carry its noise.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-10}
MAX=${MAX:-30}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
SPARKBENCH_ADAPTIVE_BENCH=1 SPARKBENCH_ADAPTIVE_PAIRS="$PAIRS" SPARKBENCH_ADAPTIVE_MAX="$MAX" SPARKBENCH_ADAPTIVE_OUT="$out" \
  SPARKBENCH_REQUIRE_LLAMA=1 go test -tags migrated_fynedo -count=1 -timeout 60m -run '^TestAdaptiveTimeToPrecision$' -v ./cmd/sparkbench/ >&2 || status=$?
cat "$out"
exit ${status:-0}
